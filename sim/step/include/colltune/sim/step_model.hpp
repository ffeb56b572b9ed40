#pragma once
// The training-step model: Horovod's background loop over a workload. Every cycle time, the
// tensors ready so far are packed in order into fusion buffers up to the threshold and each
// buffer is allreduced; communication overlaps the rest of the backward pass.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/step_costs.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

enum class Engine { analytic, event };
std::string_view to_string(Engine engine);
// "analytic" or "event"; throws colltune::Error otherwise.
Engine parse_engine(std::string_view name);

// A buffer's allreduce as a runtime's own model prices it (NCCL's tuning model, a per-size
// table the runtime reads): what ran and how long it took.
struct BufferPrice {
  std::string algorithm;  // a label for the record ("nccl:ring/ll128", ...)
  double time_us = 0;     // +infinity when it cannot run
};

// Horovod's cycle time as the step model takes it: 0 (each tensor on its own tick) or 1 us ..
// 10 s. Below a microsecond the ticks outnumber any step's events (a subnormal cycle made every
// tick infinite); above 10 s no step reaches its first tick.
inline constexpr double kMinCycleTimeUs = 1;
inline constexpr double kMaxCycleTimeUs = 1e7;
bool valid_cycle_time_us(double us);
// parse_time_us, then that range; throws colltune::Error "WHAT: 'TEXT' must be 0 or ...".
double parse_cycle_time_us(std::string_view text, std::string_view what);

struct StepConfig {
  std::size_t fusion_threshold_bytes = 128 * MiB;  // Horovod default; 0 = no fusion
  double cycle_time_us = 1000.0;                    // Horovod default, 1 ms
  bool fp16_compress = false;
  std::string algorithm = "ring";  // a registry id, or "auto" = fastest per buffer
  // "auto" also considers per-host algorithms (placement per_host: hierarchical*); false keeps
  // it to flat ones.
  bool auto_per_host = true;
  coll::AlgoOptions options;
  // When set, prices every buffer of `bytes` wire bytes (elements of `elem_size`) holding
  // `tensors` tensors in place of `algorithm`: the runtime's own choice and model (the tuner's
  // NCCL pricing; Horovod pads a buffer of several tensors, so its path depends on the count).
  std::function<BufferPrice(std::size_t bytes, std::size_t elem_size, std::size_t tensors)> price_buffer;
  // Cost of one cycle's negotiation, us, in place of the simulator's costs (negotiation_base_us
  // + negotiation_us_per_rank x ranks). < 0: those costs.
  double negotiation_us = -1;
};

struct BufferRecord {
  std::size_t bytes = 0;
  std::size_t tensors = 0;
  std::string algorithm;   // the algorithm actually used (resolves "auto")
  double start_us = 0;     // from the start of the backward pass
  double end_us = 0;
};

struct StepResult {
  double step_time_us = 0;
  double compute_us = 0;         // forward + backward
  double exposed_comm_us = 0;    // step time - compute time
  double scaling_efficiency = 0; // compute_us / step_time_us (one GPU has no communication)
  std::vector<BufferRecord> buffers;
};

// Holds what is derived once per topology and costs (the cost model on the topology with each
// link class's bandwidth scaled by its efficiency, route caches, the resolved costs) so that the
// tuner can evaluate thousands of configurations cheaply. Keeps its own copy of the topology.
class StepSimulator {
 public:
  // Throws colltune::Error when the topology names a GPU the table does not know.
  explicit StepSimulator(const topo::Topology& topology, const StepCosts& costs = {});
  ~StepSimulator();
  StepSimulator(const StepSimulator&) = delete;
  StepSimulator& operator=(const StepSimulator&) = delete;
  // Throws colltune::Error for an invalid workload or config (unknown or inapplicable
  // algorithm, negative cycle time).
  StepResult run(const Workload& workload, const StepConfig& config, Engine engine = Engine::analytic) const;
  // One cycle's negotiation from the costs (used when config.negotiation_us < 0).
  double negotiation_us() const;
  // The costs with the derived ones (fusion_copy_gbps, negotiation_base_us) resolved.
  const StepCosts& costs() const;
  int nranks() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One-shot convenience over StepSimulator.
StepResult simulate_step(const topo::Topology& topology, const Workload& workload, const StepConfig& config,
                         Engine engine = Engine::analytic, const StepCosts& costs = {});

}  // namespace colltune::sim
