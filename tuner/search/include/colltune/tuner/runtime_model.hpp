#pragma once
// What a runtime can run and how the tuner prices what it runs (`tune --runtime`):
//   colltune  colltune's executors: every registered allreduce, fixed or chosen per buffer
//             ("auto"), priced by colltune's cost model or event simulator.
//   nccl      NCCL alone: one ncclAllReduce per fused buffer. Algorithm "nccl" leaves the choice
//             to NCCL; a registry id (ring, dbtree = NCCL's tree) forces that NCCL algorithm with
//             its fastest protocol per size, and "auto" overrides NCCL's pick at the sizes where
//             another algorithm x protocol is predicted faster by more than the margin (on a
//             calibrated machine only: elsewhere NCCL's pick stands): per-size tables of NCCL
//             algorithm and protocol that colltune's NCCL tuner plugin hands NCCL.
//   horovod   Horovod over NCCL: as nccl, plus Horovod's one global hierarchical flag: every
//             buffer then runs Horovod's hierarchical path (NCCL reduce-scatter in the host, a
//             copy to host memory, an MPI_Allreduce of each shard across hosts, the copy back,
//             NCCL allgather), priced phase by phase (sim::HorovodHierarchical) where NCCL's
//             model fits, else as registry `hierarchical` (hierarchical_fallback() says why).
//   ps        parameter servers as TensorFlow and MXNet run them (`ps:servers=S[,colocated]
//             [,agg_gbps=X]`): every buffer is the registry's `ps` schedule, workers pushing
//             shards to S servers and pulling the sums, priced by the event simulator on the
//             workers plus the servers (sim/ps.hpp); the algorithm is fixed to ps.
// NCCL's allreduces are priced by the one NCCL price path (sim::NcclPricer: NCCL's pick by NCCL's
// model, priced by its colltune schedule with the protocol's costs) on the step model's machine
// (sim::priced_machine: the same link efficiencies as every other price of the step) where the
// topology fits NCCL's model (GPUs with a compute capability); elsewhere by colltune's schedules
// of the same algorithms, and "nccl" is then not offered. The baseline is Horovod's defaults
// with NCCL's own choice, or, where NCCL's model does not fit, with colltune's ring (fallback()
// says why).
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/once_map.hpp"
#include "colltune/sim/calibration.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/horovod_hierarchical.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/nccl_price.hpp"
#include "colltune/sim/ps.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/algo_table.hpp"
#include "colltune/tuner/space.hpp"

namespace colltune::tuner {

// Horovod rounds its fusion threshold up to a multiple of local_size x 8 x 64 bytes
// (operations.cc); this is the threshold a job with `ranks_per_host` GPUs per host runs with.
std::size_t horovod_fusion_threshold(std::size_t bytes, int ranks_per_host);

// A runtime with its options: `--runtime horovod|nccl|colltune|ps:servers=S[,colocated][,agg_gbps=X]`.
struct RuntimeSpec {
  coll::Runtime runtime = coll::Runtime::horovod;
  sim::PsOptions ps;  // runtime ps only
  RuntimeSpec() = default;
  RuntimeSpec(coll::Runtime r) : runtime(r) {}  // NOLINT(google-explicit-constructor): a plain runtime is a spec
  bool operator==(const RuntimeSpec&) const = default;
};
// Throws colltune::Error naming the runtime or the ps option that is wrong.
RuntimeSpec parse_runtime_spec(std::string_view text);
// "horovod", "ps:servers=4,colocated": what parse_runtime_spec reads back.
std::string to_string(const RuntimeSpec& spec);

// tune --nccl-margin's default: NCCL's pick is overridden where another cell is predicted faster
// by more than this fraction.
inline constexpr double kDefaultNcclMargin = 0.05;

// NCCL settings as environment lines: "NCCL_ALGO=Ring", "NCCL_MAX_NCHANNELS=4"; empty without any.
std::vector<std::string> nccl_setting_lines(const sim::NcclOptions& nccl);

struct RuntimeOptions {
  // false leaves NCCL's model out (the measured objective runs colltune's executors and cannot
  // run NCCL's choice).
  bool nccl_model = true;
  sim::StepCosts costs;  // the step model's costs: NCCL is priced on the machine they describe
  double nccl_margin = kDefaultNcclMargin;
  // The user's NCCL settings (NCCL_ALGO, NCCL_PROTO, channel counts): NCCL picks under them, and
  // the NCCL tables offer only the cells they leave NCCL.
  sim::NcclOptions nccl;
};

class RuntimeModel {
 public:
  // Holds what it derives from the topology (cost model, the NCCL price path).
  // Throws colltune::Error where the ps options do not fit the topology, or a calibrated
  // topology's calibration does not fit it.
  RuntimeModel(const topo::Topology& topology, const RuntimeSpec& runtime, const RuntimeOptions& options);
  RuntimeModel(const topo::Topology& topology, const RuntimeSpec& runtime, bool nccl_model = true)
      : RuntimeModel(topology, runtime, RuntimeOptions{nccl_model, {}, kDefaultNcclMargin, {}}) {}

  coll::Runtime runtime() const { return runtime_; }
  const RuntimeSpec& spec() const { return spec_; }
  // The parameter-server exchange (runtime ps), else nullptr.
  const sim::PsExchange* ps() const { return ps_.get(); }
  // The NCCL price path prices NCCL's allreduces on this topology.
  bool nccl_priced() const { return pricer_ != nullptr; }
  // The NCCL price path, or nullptr (fallback() says why).
  const sim::NcclPricer* nccl_pricer() const { return pricer_.get(); }
  // The topology is calibrated: "auto" may override NCCL's pick.
  bool calibrated() const { return calibration_.calibrated; }
  // The topology's calibration, as the models read it (sizes measured included).
  const sim::CalibrationFacts& calibration() const { return calibration_; }
  // Why the NCCL table of `candidate` has no rows ("" where it has some).
  std::string why_no_nccl_rows(const Candidate& candidate) const;
  // Why it does not ("" when it does).
  const std::string& fallback() const { return fallback_; }
  // The user's NCCL settings NCCL picks under (RuntimeOptions::nccl).
  const sim::NcclOptions& nccl_options() const { return nccl_; }
  // Horovod's hierarchical path is priced phase by phase (sim::HorovodHierarchical); where it is
  // not, why ("" when it is, or when the runtime is not horovod).
  const std::string& hierarchical_fallback() const { return hierarchical_fallback_; }

  // The space tune() searches for this runtime (before --fix).
  SearchSpace space() const;
  // Horovod defaults (128 MiB, 1 ms, fp16 off, flat) with NCCL's own choice, or colltune's ring
  // where NCCL's model does not fit.
  Candidate baseline() const;
  std::string baseline_description() const;
  // "4 dedicated servers, aggregating at 20 GB/s" (runtime ps; "" otherwise).
  std::string servers_description() const;

  // The step model's configuration: what the runtime runs for the candidate, priced as above.
  // The model must outlive the returned config (its price hook refers to it).
  sim::StepConfig step_config(const Candidate& candidate) const;

  // The rows colltune's NCCL tuner plugin hands NCCL for a candidate: empty where the candidate
  // makes no ncclAllReduce calls of its choosing (algorithm "nccl", hierarchical, colltune's
  // executors) or NCCL's pick stands at every size. Rows carry NCCL's algorithm name
  // (SizeRange::nccl_algorithm) and colltune's price of NCCL's own pick (nccl_pick_us).
  std::vector<SizeRange> nccl_table(const Candidate& candidate) const;
  // The per-size choice the candidate's buffers follow: the NCCL table where there is one,
  // NCCL's own pick per size (NCCL's names) for "nccl", else colltune's cost-model table of the
  // algorithms it may run.
  std::vector<SizeRange> size_table(const Candidate& candidate) const;

  // The registry algorithms a candidate's buffers may run (with their options): for "nccl",
  // those of NCCL's algorithms colltune has (ring, dbtree). For the fp16 depth and reports.
  std::vector<AlgoChoice> possible_algorithms(const Candidate& candidate) const;
  // Flat allreduce ids this runtime runs (registry placement flat, runs_on(runtime)).
  std::vector<std::string> flat_algorithms() const;

 private:
  coll::Runtime runtime_;
  RuntimeSpec spec_;
  sim::CostModel cost_;
  std::unique_ptr<sim::PsExchange> ps_;
  std::unique_ptr<sim::NcclPricer> pricer_;
  sim::CalibrationFacts calibration_;
  double nccl_margin_ = kDefaultNcclMargin;
  sim::NcclOptions nccl_;  // RuntimeOptions::nccl
  std::string fallback_;
  std::optional<sim::HorovodHierarchical> horovod_hierarchical_;
  std::string hierarchical_fallback_;
  // Per algorithm, each built once however many threads ask (the tuner's parallel grid).
  mutable OnceMap<std::string, std::shared_ptr<const std::vector<SizeRange>>> tables_{1024};

  bool runs_nccl_allreduce(const Candidate& c) const;
  std::shared_ptr<const std::vector<SizeRange>> table_for(const std::string& algorithm) const;
  std::shared_ptr<const std::vector<SizeRange>> build_table(const std::string& algorithm) const;
  std::vector<SizeRange> ps_table() const;
};

}  // namespace colltune::tuner
