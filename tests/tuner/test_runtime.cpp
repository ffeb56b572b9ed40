// `tune --runtime`: each runtime's space holds only what it can run, --fix cannot contradict it,
// the baseline is Horovod's defaults with NCCL's own choice (or the ring where NCCL's model does
// not fit), and the written files agree with each other and with the predicted step: the step
// re-simulated from the files alone takes the predicted time.
#include <gtest/gtest.h>

#include <limits>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/horovod_hierarchical.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/priced_machine.hpp"
#include "colltune/sim/priced_machine.hpp"
#include "colltune/tuner/emit.hpp"
#include "colltune/tuner/runtime_model.hpp"
#include "tuner_test_util.hpp"

using namespace colltune;
using namespace colltune::tuner;
namespace fs = std::filesystem;
using coll::Runtime;
using nlohmann::json;

namespace {

const topo::Topology& dgx2() {
  static const topo::Topology t = topo::load_topology("dgx-h100:nodes=2");
  return t;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string error_of(const RuntimeModel& m, const std::vector<std::string>& fixes) {
  try {
    make_space(m, fixes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Runtime, EachSpaceHoldsWhatTheRuntimeRuns) {
  const RuntimeModel horovod(dgx2(), Runtime::horovod), nccl(dgx2(), Runtime::nccl), own(dgx2(), Runtime::colltune);
  ASSERT_TRUE(horovod.nccl_priced()) << horovod.fallback();
  const SearchSpace h = horovod.space();
  EXPECT_EQ(h.algorithms, (std::vector<std::string>{"nccl", "auto", "ring", "dbtree"}));
  EXPECT_EQ(h.chunks, std::vector<std::size_t>{0});
  EXPECT_EQ(h.hierarchical, (std::vector<bool>{false, true}));
  EXPECT_EQ(h.hierarchical_algorithms, std::vector<std::string>{"ring"});  // one global flag, MPI across hosts
  for (const Candidate& c : h.enumerate())
    if (c.hierarchical) {
      EXPECT_EQ(c.algorithm, "ring");
    }
  const SearchSpace n = nccl.space();
  EXPECT_EQ(n.algorithms, h.algorithms);
  EXPECT_EQ(n.hierarchical, std::vector<bool>{false});
  const SearchSpace c = own.space();
  EXPECT_FALSE(has(c.algorithms, "nccl"));
  for (const char* id : {"auto", "ring", "tree", "dbtree", "rhd", "rhd_near"}) EXPECT_TRUE(has(c.algorithms, id)) << id;
  EXPECT_EQ(c.chunks.size(), 2u);
  EXPECT_TRUE(c.contains(Candidate{64 * MiB, 1000.0, false, "auto", 0, true}));  // per-host per buffer
}

TEST(Runtime, AFixThatContradictsTheRuntimeIsOneClearError) {
  const RuntimeModel horovod(dgx2(), Runtime::horovod), nccl(dgx2(), Runtime::nccl);
  EXPECT_EQ(error_of(horovod, {"algorithm=rhd"}),
            "--fix algorithm=rhd: --runtime horovod cannot run it (it can: nccl, auto, ring, dbtree)");
  EXPECT_NE(error_of(horovod, {"algorithm=warp"}).find("unknown algorithm"), std::string::npos);
  EXPECT_NE(error_of(horovod, {"chunk=1MiB"}).find("leaves chunking to NCCL"), std::string::npos);
  EXPECT_EQ(error_of(horovod, {"chunk=0B"}), "");
  EXPECT_NE(error_of(nccl, {"hierarchical=on"}).find("--runtime nccl has no hierarchical allreduce"), std::string::npos);
  EXPECT_NE(error_of(horovod, {"algorithm=dbtree", "hierarchical=on"}).find("combines only with algorithm ring"),
            std::string::npos);
  EXPECT_NE(error_of(horovod, {"fusion-threshold=1536KiB"}).find("whole number of MiB"), std::string::npos);
  EXPECT_EQ(error_of(horovod, {"algorithm=nccl", "hierarchical=off"}), "");
}

// Horovod ignores its hierarchical flag on one node, so it is no knob there.
TEST(Runtime, OneNodeHasNoHierarchicalFlag) {
  const topo::Topology one = topo::load_topology("dgx-h100:nodes=1");
  const RuntimeModel horovod(one, Runtime::horovod), own(one, Runtime::colltune);
  EXPECT_EQ(horovod.space().hierarchical, std::vector<bool>{false});
  EXPECT_EQ(error_of(horovod, {"hierarchical=on"}),
            "--fix hierarchical=on: Horovod ignores HOROVOD_HIERARCHICAL_ALLREDUCE on one node");
  EXPECT_EQ(own.space().hierarchical, (std::vector<bool>{false, true}));  // colltune's executors run it
}

TEST(Runtime, BaselineIsHorovodDefaultsWithNcclsOwnChoice) {
  const RuntimeModel m(dgx2(), Runtime::horovod);
  const Candidate b = m.baseline();
  EXPECT_EQ(b.algorithm, "nccl");
  EXPECT_EQ(b.fusion_threshold_bytes, 128 * MiB);
  EXPECT_EQ(b.cycle_time_us, 1000.0);
  EXPECT_FALSE(b.fp16 || b.hierarchical);
  // Every buffer of the baseline step takes exactly the NCCL price path's time for NCCL's pick
  // (on the step model's machine), once Horovod's own per-tensor time and fusion copies (step
  // costs) are off.
  const auto nccl = sim::make_nccl_pricer(dgx2());
  const auto workload = sim::load_workload("resnet50");
  sim::StepCosts horovod_free;
  horovod_free.tensor_us = 0;
  horovod_free.fusion_copy_gbps = std::numeric_limits<double>::infinity();
  const auto step = sim::StepSimulator(dgx2(), horovod_free).run(workload, m.step_config(b));
  ASSERT_FALSE(step.buffers.empty());
  for (const auto& buf : step.buffers) {
    const sim::NcclPrice pick = nccl->price(sim::NcclColl::allreduce, buf.bytes);
    EXPECT_NEAR(buf.end_us - buf.start_us, pick.time_us, 1e-9 * pick.time_us) << buf.bytes;
    EXPECT_EQ(pick.nccl.algo, nccl->model().choose(sim::NcclColl::allreduce, buf.bytes).algo);
    EXPECT_EQ(buf.algorithm, "nccl " + pick.label());
  }
}

// The user's NCCL settings (tune --nccl-algo Ring): NCCL picks under them, every buffer of the
// baseline is priced as the NCCL price path prices that pick, and the tuned table offers only
// the cells they leave NCCL (a plugin cannot turn on a cell NCCL_ALGO turned off).
TEST(Runtime, TheUsersNcclSettingsReachThePickAndTheTable) {
  sim::NcclOptions ring;
  ring.algo_env = "Ring";
  const RuntimeModel m(dgx2(), Runtime::horovod, RuntimeOptions{true, {}, kDefaultNcclMargin, ring});
  EXPECT_EQ(nccl_setting_lines(m.nccl_options()), std::vector<std::string>{"NCCL_ALGO=Ring"});
  const auto nccl = sim::make_nccl_pricer(dgx2(), ring);
  const auto workload = sim::load_workload("resnet50");
  const auto step = sim::StepSimulator(dgx2()).run(workload, m.step_config(m.baseline()));
  ASSERT_FALSE(step.buffers.empty());
  for (const auto& buf : step.buffers)
    EXPECT_EQ(buf.algorithm, "nccl " + nccl->price(sim::NcclColl::allreduce, buf.bytes).label());
  SimulatedObjective objective(dgx2(), workload, sim::Engine::analytic, Runtime::horovod, {}, kDefaultNcclMargin, ring);
  TuneOptions options;
  options.fixes = {"algorithm=ring"};
  const TuneResult r = tune(dgx2(), workload, objective, options);
  EXPECT_EQ(nccl_setting_lines(r.nccl), std::vector<std::string>{"NCCL_ALGO=Ring"});
  ASSERT_FALSE(r.nccl_table.empty());
  for (const SizeRange& row : r.nccl_table) EXPECT_EQ(row.nccl_algorithm, "ring") << row.max_bytes;
  // dbtree is NCCL's Tree in the table, which NCCL_ALGO=Ring leaves NCCL no cell of; the error
  // says so.
  options.fixes = {"algorithm=dbtree"};
  try {
    tune(dgx2(), workload, objective, options);
    ADD_FAILURE() << "dbtree ran under NCCL_ALGO=Ring";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL cannot run dbtree (Tree)"), std::string::npos) << e.what();
  }
}

TEST(Runtime, WhereNcclsModelDoesNotFitTheBaselineIsTheRingAndSaysWhy) {
  const topo::Topology flat = topo::load_topology("flat:ranks=8");
  const RuntimeModel m(flat, Runtime::horovod);
  EXPECT_FALSE(m.nccl_priced());
  EXPECT_EQ(m.baseline().algorithm, "ring");
  EXPECT_NE(m.baseline_description().find("NCCL's model does not fit"), std::string::npos);
  EXPECT_FALSE(has(m.space().algorithms, "nccl"));
  const auto r = test::tune_analytic(flat, sim::load_workload("resnet50"));
  EXPECT_EQ(r.baseline.candidate.algorithm, "ring");
  EXPECT_NE(json::parse(emit_colltune_json(r))["baseline"]["description"].get<std::string>().find("does not fit"),
            std::string::npos);
}

TEST(Runtime, HorovodRoundsTheFusionThresholdUpToItsUnit) {
  EXPECT_EQ(horovod_fusion_threshold(64 * MiB, 8), 64 * MiB);  // 8 x 8 x 64 = 4 KiB divides it
  EXPECT_EQ(horovod_fusion_threshold(1 * MiB, 6), 342u * 3072u);
  EXPECT_EQ(horovod_fusion_threshold(0, 8), 0u);
}

namespace {

struct Written {
  TuneResult result;
  std::map<std::string, std::string> files;
};

Written tune_and_write(Runtime runtime, const std::vector<std::string>& fixes, const std::string& dir_name) {
  static const sim::Workload workload = sim::load_workload("resnet50");
  SimulatedObjective objective(dgx2(), workload, sim::Engine::analytic, runtime);
  TuneOptions options;
  options.fixes = fixes;
  Written w{tune(dgx2(), workload, objective, options), {}};
  const fs::path dir = fs::temp_directory_path() / dir_name;
  fs::remove_all(dir);
  for (const auto& path : write_configs(dir, w.result)) w.files[path.filename().string()] = read_file(path);
  fs::remove_all(dir);
  return w;
}

struct Row {
  std::size_t min_bytes, max_bytes;
  std::string algorithm, protocol;
};

std::vector<Row> table_rows(const std::string& conf) {
  std::vector<Row> rows;
  for (const auto& line : test::data_lines(conf)) {
    const auto f = test::split_csv(line);
    rows.push_back({std::stoull(f[1]), std::stoull(f[2]), f[3], f[4]});
  }
  return rows;
}

// The step the files make Horovod and NCCL run: Horovod's settings from horovod.env, fp16 from
// colltune.json (a code-level choice), NCCL's per-size rows from nccl_tuner.conf, else NCCL's
// own choice; hierarchical from HOROVOD_HIERARCHICAL_ALLREDUCE.
double step_from_files(const Written& w) {
  const auto env = test::parse_env(w.files.at("horovod.env"));
  const json doc = json::parse(w.files.at("colltune.json"));
  sim::StepConfig config;
  config.fusion_threshold_bytes =
      horovod_fusion_threshold(std::stoull(env.at("HOROVOD_FUSION_THRESHOLD")), dgx2().rank_layout().max_ranks_per_host());
  config.cycle_time_us = std::stod(env.at("HOROVOD_CYCLE_TIME")) * 1000.0;
  config.fp16_compress = doc["chosen"]["fp16_compression"];
  const auto nccl = sim::make_nccl_pricer(dgx2());
  const auto rows = table_rows(w.files.at("nccl_tuner.conf"));
  const sim::HorovodHierarchical hierarchical(dgx2());
  if (env.at("HOROVOD_HIERARCHICAL_ALLREDUCE") == "1") {
    config.price_buffer = [&](std::size_t bytes, std::size_t elem_size, std::size_t tensors) {
      return sim::BufferPrice{"hierarchical", hierarchical.time_us(bytes, elem_size, tensors)};
    };
  } else {
    // A size no row holds keeps NCCL's own pick, as the plugin leaves it.
    config.price_buffer = [&](std::size_t bytes, std::size_t elem_size, std::size_t) {
      const auto row = std::find_if(rows.begin(), rows.end(),
                                    [&](const Row& r) { return r.min_bytes <= bytes && bytes <= r.max_bytes; });
      if (row == rows.end()) return sim::BufferPrice{"nccl", nccl->price(sim::NcclColl::allreduce, bytes, elem_size).time_us};
      return sim::BufferPrice{row->algorithm, nccl->price(sim::NcclColl::allreduce, sim::parse_nccl_algo(row->algorithm),
                                                          sim::parse_nccl_proto(row->protocol), bytes, elem_size)
                                                  .time_us};
    };
  }
  return sim::StepSimulator(dgx2()).run(sim::load_workload("resnet50"), config).step_time_us;
}

void expect_files_agree(const Written& w) {
  const TuneResult& r = w.result;
  const auto env = test::parse_env(w.files.at("horovod.env"));
  const YAML::Node yaml = YAML::Load(w.files.at("horovod.yaml"))["params"];
  const json doc = json::parse(w.files.at("colltune.json"));
  const json& chosen = doc["chosen"];
  // Fusion: a whole number of MiB in the YAML, the same bytes in the env file and the JSON.
  EXPECT_EQ(yaml["fusion_threshold_mb"].as<std::size_t>() * MiB, std::stoull(env.at("HOROVOD_FUSION_THRESHOLD")));
  EXPECT_EQ(chosen["fusion_threshold_bytes"].get<std::size_t>(), std::stoull(env.at("HOROVOD_FUSION_THRESHOLD")));
  EXPECT_DOUBLE_EQ(yaml["cycle_time_ms"].as<double>(), std::stod(env.at("HOROVOD_CYCLE_TIME")));
  EXPECT_DOUBLE_EQ(chosen["cycle_time_ms"].get<double>(), std::stod(env.at("HOROVOD_CYCLE_TIME")));
  // One hierarchical flag everywhere.
  const bool hier = yaml["hierarchical_allreduce"].as<bool>();
  EXPECT_EQ(hier, env.at("HOROVOD_HIERARCHICAL_ALLREDUCE") == "1");
  EXPECT_EQ(hier, chosen["hierarchical_allreduce"].get<bool>());
  EXPECT_EQ(hier, r.hierarchical_allreduce);
  if (r.runtime != Runtime::colltune) {
    EXPECT_EQ(hier, chosen["hierarchical"].get<bool>());
  }
  // The tuner table is the JSON's nccl_algorithms, row for row; NCCL_ALGO only when one algorithm.
  const auto rows = table_rows(w.files.at("nccl_tuner.conf"));
  ASSERT_EQ(rows.size(), doc["nccl_algorithms"].size());
  std::set<std::string> algos;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const json& j = doc["nccl_algorithms"][i];
    EXPECT_EQ(rows[i].min_bytes, j["min_bytes"].get<std::size_t>());
    EXPECT_EQ(rows[i].max_bytes, j["max_bytes"].get<std::size_t>());
    EXPECT_EQ(rows[i].algorithm, j["nccl_algorithm"].get<std::string>());
    EXPECT_EQ(rows[i].protocol, j["protocol"].get<std::string>());
    algos.insert(rows[i].algorithm);
  }
  const std::string nccl_env = w.files.at("nccl.env");
  EXPECT_EQ(nccl_env.find("NCCL_ALGO=") != std::string::npos, algos.size() == 1) << nccl_env;
  for (const json& row : doc["nccl_algorithms"])  // each of them is the size table's row for its range
    EXPECT_NE(std::find(doc["algorithms"].begin(), doc["algorithms"].end(), row), doc["algorithms"].end()) << row;
  // The report states the same flag.
  EXPECT_NE(w.files.at("report.html").find(std::string("hierarchical_allreduce flag: <b>") + (hier ? "true" : "false")),
            std::string::npos);
  EXPECT_EQ(doc["input"]["runtime"].get<std::string>(), coll::to_string(r.runtime));
}

}  // namespace

TEST(Runtime, HorovodFilesAgreeAndReplayThePredictedStep) {
  for (const auto& fixes : std::vector<std::vector<std::string>>{{}, {"algorithm=auto"}, {"hierarchical=on"}}) {
    const Written w = tune_and_write(Runtime::horovod, fixes, "colltune_runtime_horovod");
    SCOPED_TRACE(describe(w.result.best.candidate));
    expect_files_agree(w);
    EXPECT_NEAR(step_from_files(w), w.result.best.step_time_us, 1e-9 * w.result.best.step_time_us);
    EXPECT_LE(w.result.best.step_time_us, w.result.baseline.step_time_us);
  }
}

TEST(Runtime, EveryFixHoldsInEveryFile) {
  const Written off = tune_and_write(Runtime::horovod, {"hierarchical=off", "algorithm=dbtree"}, "colltune_runtime_off");
  expect_files_agree(off);
  EXPECT_NE(off.files.at("horovod.yaml").find("hierarchical_allreduce: false"), std::string::npos);
  EXPECT_FALSE(table_rows(off.files.at("nccl_tuner.conf")).empty());
  const Written on = tune_and_write(Runtime::horovod, {"hierarchical=on"}, "colltune_runtime_on");
  expect_files_agree(on);
  EXPECT_NE(on.files.at("horovod.yaml").find("hierarchical_allreduce: true"), std::string::npos);
  EXPECT_TRUE(table_rows(on.files.at("nccl_tuner.conf")).empty());  // no ncclAllReduce calls to steer
  for (Runtime runtime : {Runtime::horovod, Runtime::nccl, Runtime::colltune}) {
    const Written ring = tune_and_write(runtime, {"algorithm=ring"}, "colltune_runtime_ring");
    expect_files_agree(ring);
    for (const Row& row : table_rows(ring.files.at("nccl_tuner.conf"))) EXPECT_EQ(row.algorithm, "ring");
    EXPECT_EQ(ring.files.at("nccl_tuner.conf").find(",tree,"), std::string::npos);
  }
}

TEST(Runtime, ColltuneRuntimeWithHierarchicalOffRunsFlatAlgorithmsOnly) {
  const Written w = tune_and_write(Runtime::colltune, {"hierarchical=off"}, "colltune_runtime_flat");
  expect_files_agree(w);
  EXPECT_FALSE(w.result.hierarchical_allreduce);
  for (const auto& b : w.result.best_step.buffers)
    EXPECT_EQ(coll::find_algorithm(b.algorithm).placement, coll::Placement::flat) << b.algorithm;
}
