// The table colltune's own emitter writes is one the plugin takes whole: every row loads, fits
// the tuned job's shape, and applies at its bounds and in its middle.
#include <map>
#include <sstream>

#include "colltune/calibrate/calibrate.hpp"
#include "colltune/calibrate/measurements.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/emit.hpp"
#include "plugin_fixture.hpp"
#include "tuner_test_util.hpp"

namespace colltune::nccl_plugin::test {
namespace {

// A data row of nccl_tuner.conf, read here independently of the plugin's parser.
struct CsvRow {
  std::uint64_t min_bytes = 0, max_bytes = 0;
  int algorithm = -1, protocol = -1;
};

int index_of(const std::string& name, const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  ADD_FAILURE() << "unknown name " << name;
  return -1;
}

std::vector<CsvRow> data_rows(const std::string& text) {
  static const std::vector<std::string> algorithms{"tree", "ring", "collnet_direct", "collnet_chain",
                                                   "nvls", "nvls_tree", "pat"};
  static const std::vector<std::string> protocols{"ll", "ll128", "simple"};
  std::vector<CsvRow> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    EXPECT_EQ(f.size(), 10u) << line;
    if (f.size() != 10u) continue;
    EXPECT_EQ(f[0], "allreduce");
    rows.push_back({std::stoull(f[1]), std::stoull(f[2]), index_of(f[3], algorithms), index_of(f[4], protocols)});
  }
  return rows;
}

// The machine a published log measured (OCI's 2 x 8 A100 over RoCE), calibrated on it: the
// topology a cluster owner tunes on after `colltune calibrate`.
topo::Topology calibrated_a100() {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2,transport=roce");
  const auto log = tuner::read_measurements(std::string(COLLTUNE_TEST_DATA) + "/nccl-tests-logs/oci-a100-2node-roce-allreduce.txt");
  return topo::topology_from_json(tuner::calibrated_topology_json(t, tuner::calibrate(t, log)), "calibrated.json");
}

// One H100 node calibrated on a published log of its NCCL runs (together.ai, NCCL's default:
// Ring/LL up to 1 MiB, NVLS from 2 MiB). Calibrated, colltune prices NVLS at 1 MiB below NCCL's
// Ring/LL pick by more than the 5% margin, so `tune` with no options writes a row there.
topo::Topology calibrated_h100() {
  const topo::Topology t = topo::load_topology("dgx-h100");
  const auto log = tuner::read_measurements(std::string(COLLTUNE_TEST_DATA) +
                                            "/nccl-tests-logs/together-h100-1node-allreduce-nvls.txt");
  return topo::topology_from_json(tuner::calibrated_topology_json(t, tuner::calibrate(t, log)), "calibrated.json");
}

// Tuned with a per-size NCCL table, so that there are rows to load: on the calibrated A100s,
// algorithm=auto (NCCL's pick overridden where colltune predicts another cell 5% faster); on the
// calibrated H100 node, tune's defaults (the same rule, NCCL's pick the baseline); on a preset,
// algorithm=ring (NCCL's ring at every size, its protocol per size).
const tuner::TuneResult& tuned(const std::string& topology) {
  static std::map<std::string, tuner::TuneResult> cache;
  auto it = cache.find(topology);
  if (it != cache.end()) return it->second;
  tuner::TuneOptions options;
  if (topology == "calibrated") options.fixes = {"algorithm=auto"};
  if (topology == "dgx-a100:nodes=4") options.fixes = {"algorithm=ring"};
  const topo::Topology t = topology == "calibrated"       ? calibrated_a100()
                           : topology == "calibrated-h100" ? calibrated_h100()
                                                           : topo::load_topology(topology);
  return cache.emplace(topology, tuner::test::tune_analytic(t, sim::load_workload("resnet50"), options)).first->second;
}

class EmittedTable : public PluginTest {};

TEST_P(EmittedTable, EveryEmittedRowLoadsAndApplies) {
  for (const std::string topology : {"calibrated", "calibrated-h100", "dgx-a100:nodes=4"}) {
    SCOPED_TRACE(topology);
    const tuner::TuneResult& r = tuned(topology);
    const std::string text = tuner::emit_nccl_tuner_conf(r);
    const std::vector<CsvRow> rows = data_rows(text);
    ASSERT_FALSE(rows.empty());
    captured_log().clear();
    void* ctx = load(text, static_cast<std::size_t>(r.ranks), static_cast<std::size_t>(r.hosts));
    EXPECT_TRUE(logged(abi::kLogWarn).empty()) << logged(abi::kLogWarn).at(0);
    const std::string counts = "loaded " + std::to_string(rows.size()) + " rows";
    const std::string fits = std::to_string(rows.size()) + " apply to nNodes=" + std::to_string(r.hosts);
    ASSERT_FALSE(logged(abi::kLogInfo).empty());
    EXPECT_NE(logged(abi::kLogInfo)[0].find(counts), std::string::npos) << logged(abi::kLogInfo)[0];
    EXPECT_NE(logged(abi::kLogInfo)[0].find(fits), std::string::npos) << logged(abi::kLogInfo)[0];
    for (const CsvRow& row : rows)
      for (std::uint64_t bytes : {row.min_bytes, row.min_bytes + (row.max_bytes - row.min_bytes) / 2, row.max_bytes})
        expect_chosen(ask_allreduce(ctx, bytes), row.algorithm, row.protocol);
    // Past the table's last size, and between override rows, NCCL decides.
    if (rows.back().max_bytes < 4294967295ULL) expect_untouched(ask_allreduce(ctx, rows.back().max_bytes + 1));
    for (std::size_t i = 0; i + 1 < rows.size(); ++i)
      if (rows[i + 1].min_bytes > rows[i].max_bytes + 1) expect_untouched(ask_allreduce(ctx, rows[i].max_bytes + 1));
    // Another job shape: the rows do not apply.
    expect_untouched(ask_allreduce(load(text, static_cast<std::size_t>(r.ranks) * 2, static_cast<std::size_t>(r.hosts) * 2),
                                   rows.front().min_bytes));
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCostTableVersion, EmittedTable, ::testing::Values(3, 4, 5, 6), version_name);

}  // namespace
}  // namespace colltune::nccl_plugin::test
