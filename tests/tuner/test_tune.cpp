// The tuner end to end on the analytical model: never slower than Horovod's defaults,
// hierarchical where it must win and not where it cannot, BO close to the grid optimum,
// the fp16 accuracy limit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/sim/step_costs.hpp"
#include "colltune/tuner/emit.hpp"
#include "tuner_test_util.hpp"

using namespace colltune;
using namespace colltune::tuner;
using colltune::tuner::test::cluster;
using colltune::tuner::test::tune_analytic;

namespace {

const char* const kModels[] = {"resnet50", "vgg16", "bert-large", "gpt2-xl"};

const topo::Topology& dgx4() {
  static const topo::Topology t = topo::load_topology("dgx-h100:nodes=4");
  return t;
}

// The grid optimum per model on dgx-h100:nodes=4, computed once.
const TuneResult& grid_result(const std::string& model) {
  static std::map<std::string, TuneResult> cache;
  auto it = cache.find(model);
  if (it == cache.end()) it = cache.emplace(model, tune_analytic(dgx4(), sim::load_workload(model))).first;
  return it->second;
}

}  // namespace

TEST(Tune, NeverPredictedSlowerThanHorovodDefaults) {
  for (const char* model : kModels) {
    const auto& r = grid_result(model);
    // Horovod's defaults with NCCL's own choice, priced by NCCL's model.
    EXPECT_EQ(r.baseline.candidate, RuntimeModel(dgx4(), coll::Runtime::horovod).baseline());
    EXPECT_EQ(r.baseline.candidate.algorithm, "nccl");
    EXPECT_LE(r.best.step_time_us, r.baseline.step_time_us) << model;
    EXPECT_GE(r.speedup(), 1.0) << model;
    EXPECT_EQ(r.history.size(), r.space_size) << model;
    EXPECT_GE(r.space_size, 1000u);
    EXPECT_TRUE(r.best.feasible());
    ASSERT_FALSE(r.top.empty());
    EXPECT_EQ(r.top.front().step_time_us, best_of(r.history).step_time_us);
    for (std::size_t i = 1; i < r.top.size(); ++i) EXPECT_LE(r.top[i - 1].step_time_us, r.top[i].step_time_us);
    EXPECT_FALSE(r.best_step.buffers.empty());
    // fp16 is only chosen when it buys at least 1% over the best configuration without it.
    if (r.best.candidate.fp16) {
      EXPECT_LE(r.best_fp16_on_us, 0.99 * r.best_fp16_off_us) << model;
    } else {
      EXPECT_LE(r.best.step_time_us, r.best_fp16_off_us * 1.001) << model;
    }
  }
}

TEST(Tune, NeverSlowerThanBaselineOnHandBuiltClusters) {
  const auto workload = sim::load_workload("resnet50");
  for (const auto& t : {cluster(2, 4, 25.0), cluster(8, 1, 50.0), cluster(1, 8, 25.0)}) {
    const auto r = tune_analytic(t, workload);
    EXPECT_LE(r.best.step_time_us, r.baseline.step_time_us) << t.name;
  }
}

namespace {
// Whether hierarchical allreduce is chosen on `t` for resnet50: Horovod's flag with nothing
// pinned, and the knob and the flag with algorithm=ring pinned.
// Free choice: whether most gradient bytes go through an allreduce that reduces inside each
// host before crossing hosts - Horovod's hierarchical, or rhd_near (recursive halving whose
// first partners are the nearest ranks, so only a 1/8 shard crosses each NIC).
struct HierarchicalChoice {
  bool free_flag, free_host_first, pinned_knob, pinned_flag;
};
bool mostly_host_first(const sim::StepResult& step) {
  std::size_t host_first = 0, total = 0;
  for (const auto& b : step.buffers) {
    total += b.bytes;
    if (b.algorithm.rfind("hierarchical", 0) == 0 || b.algorithm == "rhd_near") host_first += b.bytes;
  }
  return total > 0 && 2 * host_first > total;
}
HierarchicalChoice hierarchical_choice(const topo::Topology& t) {
  const auto workload = sim::load_workload("resnet50");
  TuneOptions pinned;
  pinned.fixes = {"algorithm=ring"};
  const auto r = tune_analytic(t, workload, pinned);
  const auto free = tune_analytic(t, workload);
  return {free.hierarchical_allreduce, mostly_host_first(free.best_step), r.best.candidate.hierarchical,
          r.hierarchical_allreduce};
}
}  // namespace

// Many GPUs per host behind one slow NIC (4 hosts x 8 GPUs, 12.5 GB/s = 100 Gb/s): a flat ring
// sends 2(p-1)/p of the buffer through every NIC, hierarchical only 2(H-1)/H of a 1/8 shard.
TEST(Tune, HierarchicalChosenWhereItMustWin) {
  const auto c = hierarchical_choice(cluster(4, 8, 12.5));
  EXPECT_TRUE(c.free_host_first);
  EXPECT_TRUE(c.pinned_knob);
  EXPECT_TRUE(c.pinned_flag);
}

// One GPU per host: there is nothing to reduce inside a host, so hierarchical can only add
// steps (or does not apply); it must not be chosen.
TEST(Tune, HierarchicalNotChosenWhereItMustLose) {
  const auto c = hierarchical_choice(cluster(16, 1, 25.0));
  EXPECT_FALSE(c.free_flag);
  EXPECT_FALSE(c.pinned_knob);
  EXPECT_FALSE(c.pinned_flag);
}

TEST(Tune, BayesWithin5PercentOfTheGridIn30Evaluations) {
  for (const char* model : kModels) {
    const double optimum = best_of(grid_result(model).history).step_time_us;
    const auto workload = sim::load_workload(model);
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      TuneOptions options;
      options.strategy = StrategyKind::bayes;
      options.budget = 30;
      options.seed = seed;
      const auto r = tune_analytic(dgx4(), workload, options);
      EXPECT_EQ(r.history.size(), 30u);
      EXPECT_LE(best_of(r.history).step_time_us, 1.05 * optimum) << model << " seed " << seed;
    }
  }
}

TEST(Tune, SameSeedSameAnswer) {
  const auto workload = sim::load_workload("bert-large");
  TuneOptions options;
  options.strategy = StrategyKind::bayes;
  options.budget = 12;
  options.seed = 42;
  const auto a = tune_analytic(dgx4(), workload, options);
  const auto b = tune_analytic(dgx4(), workload, options);
  ASSERT_EQ(a.history.size(), b.history.size());
  for (std::size_t i = 0; i < a.history.size(); ++i) EXPECT_EQ(a.history[i].candidate, b.history[i].candidate);
}

// The grid on several threads gives the serial grid's history, candidate for candidate and bit
// for bit, for the runtimes whose prices come from different caches (NCCL's price path, the
// colltune schedules' pipelines, parameter servers). The threaded run goes first, so it fills
// the caches the serial one then reads.
TEST(Tune, ParallelGridGivesTheSerialHistory) {
  const auto workload = sim::load_workload("resnet50");
  const topo::Topology fat = topo::load_topology("fat-tree:nodes=4,gpus=4,oversub=2");
  for (const char* runtime : {"horovod", "colltune", "ps:servers=2"}) {
    SCOPED_TRACE(runtime);
    const auto run = [&](std::size_t threads) {
      SimulatedObjective objective(fat, workload, sim::Engine::analytic, parse_runtime_spec(runtime));
      TuneOptions options;
      options.threads = threads;
      options.fixes = {"cycle-time=5ms"};  // a few hundred candidates: the test also runs under TSan
      return tune(fat, workload, objective, options);
    };
    const TuneResult parallel = run(4);
    const TuneResult serial = run(1);
    ASSERT_EQ(parallel.history.size(), serial.history.size());
    for (std::size_t i = 0; i < serial.history.size(); ++i) {
      EXPECT_EQ(parallel.history[i].candidate, serial.history[i].candidate) << i;
      EXPECT_EQ(parallel.history[i].step_time_us, serial.history[i].step_time_us) << i;
    }
    EXPECT_EQ(parallel.best.candidate, serial.best.candidate);
  }
}

TEST(Tune, Fp16RejectedOverTheErrorLimit) {
  const auto workload = sim::load_workload("vgg16");
  TuneOptions options;
  options.max_fp16_error = 1e-5;  // below one fp16 rounding: nothing can pass
  const auto r = tune_analytic(dgx4(), workload, options);
  EXPECT_FALSE(r.best.candidate.fp16);
  for (const auto& e : r.history) EXPECT_FALSE(e.candidate.fp16);
  EXPECT_FALSE(r.fp16.accepted);
  options.fixes = {"fp16=on"};
  EXPECT_THROW(tune_analytic(dgx4(), workload, options), Error);
}

TEST(Tune, Fp16ErrorModel) {
  const auto layout = RankLayout::uniform(4, 8);
  const std::vector<AlgoChoice> ring{{"ring", "", 0}};
  const auto e = estimate_fp16_error(summation_depth(ring, layout), 1e-2);
  EXPECT_EQ(e.summation_depth, 31);
  EXPECT_NEAR(e.relative_error, std::ldexp(1.0, -11) / std::sqrt(3.0) * std::sqrt(32.0), 1e-15);
  EXPECT_TRUE(e.accepted);
  EXPECT_EQ(summation_depth({{"rhd", "", 0}}, layout), 5);
  EXPECT_EQ(summation_depth({{"hierarchical", "ring", 0}}, layout), 7 + 3);
  EXPECT_EQ(summation_depth(ring, RankLayout::single_host(1)), 0);
  EXPECT_FALSE(estimate_fp16_error(summation_depth(ring, RankLayout::uniform(512, 8)), 1e-2).accepted);
  // A per-buffer choice is charged its deepest algorithm.
  EXPECT_EQ(summation_depth({{"rhd", "", 0}, {"ring", "", 0}, {"dbtree", "", 0}}, layout), 31);
  // "auto" on colltune's executors with hierarchical=off may run any flat algorithm: the ring's depth.
  const RuntimeModel own(dgx4(), coll::Runtime::colltune);
  EXPECT_EQ(summation_depth(own.possible_algorithms(Candidate{0, 1000.0, true, "auto", 0, false}), layout), 31);
}

TEST(Tune, EventObjectiveWithBayes) {
  const auto t = cluster(2, 4, 25.0);
  const auto workload = sim::load_workload(TUNER_TEST_DATA "/tiny_workload.json");
  SimulatedObjective objective(t, workload, sim::Engine::event);
  TuneOptions options;
  options.strategy = StrategyKind::bayes;
  options.budget = 8;
  const auto r = tune(t, workload, objective, options);
  EXPECT_EQ(r.objective, "event");
  EXPECT_EQ(r.history.size(), 8u);
  EXPECT_LE(r.best.step_time_us, r.baseline.step_time_us);
  EXPECT_GE(r.best.step_time_us, workload.forward_us + workload.backward_us);
}

// `tune --cost`: the search prices every candidate with the given step costs, so its prediction
// is what `step --cost` gives for the chosen configuration, and colltune.json records them.
TEST(Tune, StepCostsPriceTheSearchAndAreRecorded) {
  const auto t = cluster(2, 4, 25.0);
  const auto workload = sim::load_workload(TUNER_TEST_DATA "/tiny_workload.json");
  sim::StepCosts costs;
  sim::set_step_cost(costs, "tensor_us=20");
  sim::set_step_cost(costs, "interference=1.4");
  SimulatedObjective objective(t, workload, sim::Engine::analytic, coll::Runtime::horovod, costs);
  const TuneResult r = tune(t, workload, objective, {});
  const sim::StepSimulator step(t, costs);
  const RuntimeModel runtime(t, coll::Runtime::horovod);
  EXPECT_EQ(r.best.step_time_us, step.run(workload, runtime.step_config(r.best.candidate)).step_time_us);
  EXPECT_EQ(r.baseline.step_time_us, step.run(workload, runtime.step_config(r.baseline.candidate)).step_time_us);
  // 20 us per tensor of a buffer (default 0.5) and compute slowed 1.4x (default 1.1) where it
  // overlaps communication: every step is slower.
  EXPECT_GT(r.best.step_time_us, tune_analytic(t, workload).best.step_time_us);
  ASSERT_TRUE(r.step_costs.has_value());
  EXPECT_EQ(r.step_costs->tensor_us, 20);
  const auto doc = nlohmann::json::parse(emit_colltune_json(r));
  EXPECT_EQ(doc["input"]["step_costs"]["tensor_us"], 20);
  EXPECT_EQ(doc["input"]["step_costs"]["interference"], 1.4);
  EXPECT_GT(doc["input"]["step_costs"]["fusion_copy_gbps"].get<double>(), 0);  // derived, resolved
}

namespace {
// Counts evaluations of the analytical objective.
class CountingObjective : public Objective {
 public:
  CountingObjective(const topo::Topology& t, const sim::Workload& w) : inner_(t, w, sim::Engine::analytic) {}
  std::string name() const override { return inner_.name(); }
  double evaluate(const Candidate& c) override {
    ++calls;
    return inner_.evaluate(c);
  }
  std::size_t calls = 0;

 private:
  SimulatedObjective inner_;
};
}  // namespace

// The baseline is evaluated once: taken from the search when it is in the space, run on its own
// only when the fixes exclude it.
TEST(Tune, BaselineEvaluatedOnce) {
  const auto workload = sim::load_workload(TUNER_TEST_DATA "/tiny_workload.json");
  TuneOptions options;
  options.strategy = StrategyKind::random;
  options.budget = 5;
  {
    CountingObjective objective(dgx4(), workload);
    const auto r = tune(dgx4(), workload, objective, options);
    EXPECT_EQ(objective.calls, r.history.size());
    EXPECT_EQ(r.baseline.candidate, r.history.front().candidate);
    EXPECT_EQ(r.baseline.step_time_us, r.history.front().step_time_us);
  }
  options.fixes = {"cycle-time=5ms"};
  {
    CountingObjective objective(dgx4(), workload);
    const auto r = tune(dgx4(), workload, objective, options);
    EXPECT_EQ(objective.calls, r.history.size() + 1);
    EXPECT_EQ(r.baseline.candidate, horovod_baseline());
    EXPECT_TRUE(r.baseline.feasible());
  }
}

TEST(Tune, BadOptions) {
  const auto workload = sim::load_workload("resnet50");
  TuneOptions options;
  options.max_fp16_error = 0;
  EXPECT_THROW(tune_analytic(dgx4(), workload, options), Error);
  options.max_fp16_error = 1e-2;
  options.fixes = {"chunk=lots"};
  EXPECT_THROW(tune_analytic(dgx4(), workload, options), Error);
}
