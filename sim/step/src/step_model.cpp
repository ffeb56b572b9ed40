// The training-step model: Horovod's background loop over a workload.
//
// Steps of one simulated step (times from the start of the backward pass):
// 1. The cycle loop ticks every cycle_time (tick k at k * cycle_time; with cycle_time 0, at
//    every distinct ready time). At a tick, the tensors that became ready since the previous
//    tick are negotiated: one negotiation per cycle, priced as one small allreduce (Horovod's
//    response-cache coordination is a bitwise-AND allreduce of a readiness bit vector).
// 2. They are packed in ready order into fusion buffers by coll::plan_fusion (the runtime's own
//    packer): up to the threshold, one buffer per dtype run, an oversized tensor alone. With
//    fp16 compression, fp32 tensors are cast to fp16 first (as hvd.Compression.fp16 does), so
//    they take half the buffer and half the wire bytes; the casts (there and back) are charged
//    to the buffer at the cost model's conversion rate.
// 3. Buffers are allreduced one after another on one communication stream: a buffer starts at
//    max(its tick + negotiation, the end of the previous buffer). The allreduce time comes from
//    the cost model (Engine::analytic) or the event simulator on the algorithm's schedule
//    (Engine::event); "auto" takes the fastest algorithm for each buffer under that engine.
// 4. Communication overlaps the backward pass: step = forward + max(backward, last buffer end).
//    The optimizer update is not modelled (fold it into forward_us when it matters).
// The named costs (step_costs.hpp) add to this: a buffer also pays a launch, a fixed time per
// tensor and, when it fuses several tensors, the copies into and out of the fusion buffer; the
// negotiation grows with the rank count; backward compute that overlaps a buffer's time runs
// `interference` times slower (so gradients become ready later); and every link's bandwidth is
// scaled by its class's efficiency before anything is priced.
#include "colltune/sim/step_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <vector>

#include "colltune/collectives/fusion.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/once_map.hpp"
#include "colltune/common/parallel.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/sim/priced_machine.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Bytes of the negotiation allreduce: a bit vector with room for 512 tensors.
constexpr std::size_t kNegotiationBytes = 64;

// The algorithm chosen for one buffer and its time.
struct Priced {
  const std::string* algorithm = nullptr;
  double time_us = kInf;
};

// What a buffer's price depends on besides the topology. `algorithm` is nullptr for "auto".
struct PriceKey {
  Engine engine = Engine::analytic;
  const coll::Algorithm* algorithm = nullptr;
  bool auto_per_host = true;
  std::size_t bytes = 0;
  std::size_t elem_size = 0;
  std::size_t chunk_elems = 0;
  std::string inner;
  bool operator==(const PriceKey&) const = default;
};

struct PriceKeyHash {
  std::size_t operator()(const PriceKey& k) const noexcept {
    std::size_t h = std::hash<const void*>()(k.algorithm);
    for (std::size_t v : {static_cast<std::size_t>(k.engine), static_cast<std::size_t>(k.auto_per_host), k.bytes, k.elem_size, k.chunk_elems,
                          std::hash<std::string>()(k.inner)}) {
      h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);  // boost::hash_combine
    }
    return h;
  }
};

// Bound on cached prices (a sweep over sizes cannot grow memory without limit).
constexpr std::size_t kMaxCachedPrices = std::size_t{1} << 20;

// Tick index of a tensor ready at `ready_us`: the first tick at or after it. The small
// tolerance keeps a ready time that is a multiple of the cycle on its own tick despite rounding.
double tick_of(double ready_us, double cycle_us) {
  if (cycle_us <= 0) return ready_us;
  return std::ceil(ready_us / cycle_us - 1e-9) * cycle_us;
}

}  // namespace

bool valid_cycle_time_us(double us) { return us == 0 || (us >= kMinCycleTimeUs && us <= kMaxCycleTimeUs); }

double parse_cycle_time_us(std::string_view text, std::string_view what) {
  const double us = parse_time_us(text, what);
  if (!valid_cycle_time_us(us)) parse::refuse(what, text, "must be 0 or in 1us .. 10s");
  return us;
}

namespace {

// Returns the configured algorithm, or nullptr for "auto".
const coll::Algorithm* validate_config(const StepConfig& c) {
  if (!valid_cycle_time_us(c.cycle_time_us))
    throw Error("cycle time " + std::to_string(c.cycle_time_us) + " us must be 0 or in 1 us .. 10 s");
  if (!std::isfinite(c.negotiation_us)) throw Error("negotiation time must be finite");
  if (c.algorithm == "auto" || c.price_buffer) return nullptr;
  const coll::Algorithm& algo = coll::find_algorithm(c.algorithm);  // throws for unknown ids
  if (algo.collective != coll::Collective::allreduce) {
    throw Error("algorithm '" + c.algorithm + "' is not an allreduce");
  }
  return &algo;
}

// Wall time of backward compute when it runs `slowdown` times slower during communication
// spans. Spans are added in time order and never overlap (one communication stream); a query
// about work w is exact once every span that starts before w's wall time has been added, which
// run() guarantees: a buffer starts at or after the ready time of its last tensor.
class ComputeClock {
 public:
  explicit ComputeClock(double slowdown) : slowdown_(slowdown) {}
  void busy(double start_us, double end_us) {
    if (slowdown_ != 1 && end_us > start_us) spans_.push_back({start_us, end_us});
  }
  // The wall time (from the start of the backward pass) at which `work_us` of full-speed
  // backward compute is done. run() asks in non-decreasing work (ready times are sorted), so a
  // query resumes after the spans earlier queries passed whole: O(tensors + buffers) per step,
  // not their product; the arithmetic is the same, so the answers are identical.
  double wall(double work_us) const {
    if (slowdown_ == 1) return work_us;
    if (work_us < done_) next_ = 0, t_ = 0, done_ = 0;  // an earlier work: start over
    double t = t_;
    double done = done_;
    for (std::size_t k = next_; k < spans_.size(); ++k) {
      const auto [start, end] = spans_[k];
      if (start > t) {
        if (done + (start - t) >= work_us) return t + (work_us - done);
        done += start - t;
        t = start;
      }
      const double capacity = (end - t) / slowdown_;
      if (done + capacity >= work_us) return t + (work_us - done) * slowdown_;
      done += capacity;
      t = end;
      next_ = k + 1, t_ = t, done_ = done;  // passed whole
    }
    return t + (work_us - done);
  }

 private:
  double slowdown_;
  std::vector<std::pair<double, double>> spans_;
  // Where the spans passed whole by earlier queries end: their index, wall time, work done.
  mutable std::size_t next_ = 0;
  mutable double t_ = 0;
  mutable double done_ = 0;
};

void finish(StepResult& r, const Workload& w, double comm_end_us, double backward_end_us) {
  r.compute_us = w.forward_us + w.backward_us;
  r.step_time_us = w.forward_us + std::max(backward_end_us, comm_end_us);
  r.exposed_comm_us = r.step_time_us - r.compute_us;
  r.scaling_efficiency = r.step_time_us > 0 ? r.compute_us / r.step_time_us : 1.0;
}

}  // namespace

std::string_view to_string(Engine engine) { return engine == Engine::event ? "event" : "analytic"; }

Engine parse_engine(std::string_view name) {
  if (name == "analytic") return Engine::analytic;
  if (name == "event") return Engine::event;
  throw Error("unknown engine '" + std::string(name) + "' (use analytic or event)");
}

struct StepSimulator::Impl {
  Impl(const topo::Topology& t, const StepCosts& c)
      : topology(priced_machine(t, c)), cost(topology), layout(cost.layout), costs(costs_on(t, c)) {
    for (const coll::Algorithm& a : coll::algorithms()) {
      if (a.collective == coll::Collective::allreduce && !a.baseline_only && !a.in_switch) allreduce.push_back(&a);
    }
    resolve_costs(topo::gpu_of(t), calibrated_copy_gbps(t));
  }

  // The fusion-copy rate a calibration measured on this machine (colltune calibrate with a
  // Horovod timeline: "step_costs" of its calibration object); nullopt where none did.
  static std::optional<double> calibrated_copy_gbps(const topo::Topology& t) {
    if (t.calibration.empty()) return std::nullopt;
    const auto j = nlohmann::json::parse(t.calibration, nullptr, false);
    if (!j.is_object() || !j.contains("step_costs") || !j["step_costs"].is_object()) return std::nullopt;
    const auto& v = j["step_costs"];
    if (!v.contains("fusion_copy_gbps")) return std::nullopt;
    const parse::Bounds& range = find_step_cost_field("fusion_copy_gbps")->range;
    if (!v["fusion_copy_gbps"].is_number() || !range.contains(v["fusion_copy_gbps"].get<double>()))
      throw Error(t.name + ": calibration.step_costs.fusion_copy_gbps: expected a number " + range.text() +
                  " GB/s, got " + v["fusion_copy_gbps"].dump());
    return v["fusion_copy_gbps"].get<double>();
  }

  // Fills in the derived costs and the per-cycle negotiation: the fusion-copy rate measured by
  // a calibration where there is one, else from the GPU.
  void resolve_costs(const topo::GpuSpec& gpu, std::optional<double> measured_copy_gbps) {
    if (costs.fusion_copy_gbps < 0)
      costs.fusion_copy_gbps = measured_copy_gbps.value_or(gpu.memory_gbps * kStreamingCopyFraction / 2);
    if (costs.negotiation_base_us < 0) {
      double fastest = kInf;  // the response cache's bit-vector allreduce
      if (layout.nranks() > 1) {
        for (const coll::Algorithm* a : allreduce) fastest = std::min(fastest, analytic_time(*a, kNegotiationBytes, 4, {}));
      }
      costs.negotiation_base_us = std::isfinite(fastest) ? fastest : 0;  // one rank, or no algorithm applies
    }
    negotiation = layout.nranks() > 1 ? costs.negotiation_base_us + costs.negotiation_us_per_rank * layout.nranks() : 0;
  }

  // What a buffer pays besides its allreduce: the launch (a price hook already includes the
  // runtime's own launch latency), a fixed time per tensor, and with several tensors the copies
  // into and out of the fusion buffer (Horovod allreduces a lone tensor in place).
  double overhead_us(const coll::FusionBuffer& b, bool hooked) const {
    double t = static_cast<double>(b.entries.size()) * costs.tensor_us + (hooked ? 0 : costs.launch_us);
    if (b.entries.size() > 1) t += 2.0 * static_cast<double>(b.bytes) / (costs.fusion_copy_gbps * 1e3);
    return t;
  }

  double analytic_time(const coll::Algorithm& algo, std::size_t bytes, std::size_t elem_size,
                       const coll::AlgoOptions& options) const {
    CollectiveRequest request;
    request.bytes = bytes;
    request.elem_size = elem_size;
    request.options = options;
    return cost.time_us(algo, request);
  }

  // Event simulation of the algorithm's schedule.
  double event_time(const coll::Algorithm& algo, std::size_t bytes, std::size_t elem_size,
                    const coll::AlgoOptions& given) const {
    const std::size_t count = bytes / elem_size;
    const coll::AlgoOptions options = cost.options_for(algo, given);
    if (algo.not_applicable && algo.not_applicable(layout, count, options)) return kInf;
    const coll::Schedule schedule = coll::build_schedule(algo.id, layout, count, options);
    EventSimOptions sim_options;
    sim_options.elem_size = elem_size;
    return simulate_schedule(coll::StoredSteps(schedule), topology, sim_options).time_us;
  }

  double time(Engine engine, const coll::Algorithm& algo, std::size_t bytes, std::size_t elem_size,
              const coll::AlgoOptions& options) const {
    return engine == Engine::event ? event_time(algo, bytes, elem_size, options)
                                   : analytic_time(algo, bytes, elem_size, options);
  }

  // `fixed` is the configured algorithm, or nullptr for "auto". Cached: a model's buffers
  // repeat sizes, and the tuner repeats them across thousands of configurations.
  Priced price(const StepConfig& c, const coll::Algorithm* fixed, Engine engine, std::size_t bytes,
               std::size_t elem_size) const;
  Priced algorithm_price(const StepConfig& c, const coll::Algorithm& a, Engine engine, std::size_t bytes,
                         std::size_t elem_size) const;
  template <typename Compute>
  Priced cached(PriceKey key, Compute compute) const;
  [[noreturn]] void not_applicable(const StepConfig& c, std::size_t bytes, std::size_t elem_size) const;
  // The config's price hook where it has one, else the registry algorithm (cached).
  BufferPrice buffer_price(const StepConfig& c, const coll::Algorithm* fixed, Engine engine, std::size_t bytes,
                           std::size_t elem_size, std::size_t tensors) const {
    if (!c.price_buffer) {
      const Priced p = price(c, fixed, engine, bytes, elem_size);
      return {*p.algorithm, p.time_us};
    }
    BufferPrice p = c.price_buffer(bytes, elem_size, tensors);
    if (!(p.time_us >= 0) || !std::isfinite(p.time_us))
      throw Error(p.algorithm + " cannot run a " + std::to_string(bytes) + "-byte allreduce on " +
                  std::to_string(layout.nranks()) + " ranks");
    return p;
  }

  const topo::Topology topology;  // the given one, link bandwidths scaled by their efficiencies
  CostModel cost;
  const RankLayout& layout;  // cost.layout: the topology's rank_layout()
  StepCosts costs;           // resolved by resolve_costs()
  std::vector<const coll::Algorithm*> allreduce;  // the registry's allreduce entries
  double negotiation = 0;    // per cycle
  // run() may be called from several threads (the tuner's parallel grid): each price once.
  mutable OnceMap<PriceKey, Priced, PriceKeyHash> prices{kMaxCachedPrices};
};

// Cached by key; +infinity (not applicable) is cached too.
template <typename Compute>
Priced StepSimulator::Impl::cached(PriceKey key, Compute compute) const {
  return prices.get(key, compute);
}

Priced StepSimulator::Impl::algorithm_price(const StepConfig& c, const coll::Algorithm& a, Engine engine,
                                            std::size_t bytes, std::size_t elem_size) const {
  return cached(PriceKey{engine, &a, false, bytes, elem_size, c.options.chunk_elems, c.options.inner},
                [&] { return Priced{&a.id, time(engine, a, bytes, elem_size, c.options)}; });
}

// A fixed algorithm's price, or "auto"'s fastest; each algorithm's price is cached once and
// shared by fixed configurations and both kinds of "auto". Auto's candidates are priced on
// several threads (a chunked tree on hundreds of ranks is the reference pricer's work for tens
// of milliseconds, and a tuner's threads otherwise wait on one another's auto), then compared in
// registry order, as a serial loop compares them.
Priced StepSimulator::Impl::price(const StepConfig& c, const coll::Algorithm* fixed, Engine engine,
                                  std::size_t bytes, std::size_t elem_size) const {
  const Priced p =
      fixed != nullptr
          ? algorithm_price(c, *fixed, engine, bytes, elem_size)
          : cached(PriceKey{engine, nullptr, c.auto_per_host, bytes, elem_size, c.options.chunk_elems, c.options.inner},
                   [&] {
                     std::vector<const coll::Algorithm*> eligible;
                     for (const coll::Algorithm* a : allreduce)
                       if (c.auto_per_host || a->placement == coll::Placement::flat) eligible.push_back(a);
                     const std::vector<Priced> priced = parallel_map(eligible.size(), [&](std::size_t i) {
                       return algorithm_price(c, *eligible[i], engine, bytes, elem_size);
                     });
                     Priced best;
                     for (const Priced& q : priced)
                       if (clearly_faster(q.time_us, best.time_us)) best = q;
                     return best;
                   });
  if (!std::isfinite(p.time_us)) not_applicable(c, bytes, elem_size);
  return p;
}

void StepSimulator::Impl::not_applicable(const StepConfig& c, std::size_t bytes, std::size_t elem_size) const {
  std::string why = "no allreduce algorithm applies";
  if (c.algorithm != "auto") {
    const coll::Algorithm& algo = coll::find_algorithm(c.algorithm);
    const auto reason = algo.not_applicable ? algo.not_applicable(layout, bytes / elem_size, c.options) : std::nullopt;
    why = "algorithm '" + c.algorithm + "' does not apply" + (reason ? ": " + *reason : std::string());
  }
  throw Error(why + " (" + std::to_string(layout.nranks()) + " ranks on " + std::to_string(layout.nhosts()) +
              " hosts, " + std::to_string(bytes) + " bytes)");
}

StepSimulator::StepSimulator(const topo::Topology& topology, const StepCosts& costs)
    : impl_(std::make_unique<Impl>(topology, costs)) {}
StepSimulator::~StepSimulator() = default;

double StepSimulator::negotiation_us() const { return impl_->negotiation; }
const StepCosts& StepSimulator::costs() const { return impl_->costs; }
int StepSimulator::nranks() const { return impl_->layout.nranks(); }

StepResult StepSimulator::run(const Workload& w, const StepConfig& c, Engine engine) const {
  const coll::Algorithm* fixed = validate_config(c);
  validate_workload(w, w.name.empty() ? std::string_view("workload") : std::string_view(w.name));
  StepResult r;
  if (impl_->layout.nranks() <= 1) {  // one GPU: nothing to reduce
    finish(r, w, 0, w.backward_us);
    return r;
  }
  r.buffers.reserve(w.tensors.size());
  const double negotiation = c.negotiation_us >= 0 ? c.negotiation_us : impl_->negotiation;
  const std::size_t n = w.tensors.size();
  std::vector<coll::FusionTensor> fusion(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool cast = c.fp16_compress && w.tensors[i].dtype == coll::DType::f32;
    fusion[i] = {w.tensors[i].count, cast ? coll::DType::f16 : w.tensors[i].dtype};
  }
  double comm_free = 0;
  ComputeClock clock(impl_->costs.interference);
  for (std::size_t i = 0; i < n;) {
    const double tick = tick_of(clock.wall(w.tensors[i].ready_us), c.cycle_time_us);
    std::size_t j = i + 1;
    while (j < n && tick_of(clock.wall(w.tensors[j].ready_us), c.cycle_time_us) == tick) ++j;
    const auto buffers = coll::plan_fusion(std::span(fusion).subspan(i, j - i), c.fusion_threshold_bytes);
    for (const coll::FusionBuffer& b : buffers) {
      std::size_t cast_bytes = 0;  // fp32 bytes converted to fp16 and back
      for (const coll::FusionEntry& e : b.entries) {
        if (w.tensors[i + e.tensor].dtype != fusion[i + e.tensor].dtype) cast_bytes += w.tensors[i + e.tensor].bytes();
      }
      const BufferPrice p = impl_->buffer_price(c, fixed, engine, b.bytes, coll::dtype_size(b.dtype), b.entries.size());
      const double start = std::max(tick + negotiation, comm_free);
      comm_free = start + p.time_us + impl_->cost.cast_us(cast_bytes) + impl_->overhead_us(b, bool(c.price_buffer));
      clock.busy(start, comm_free);
      r.buffers.push_back({b.bytes, b.entries.size(), p.algorithm, start, comm_free});
    }
    i = j;
  }
  finish(r, w, comm_free, clock.wall(w.backward_us));
  return r;
}

StepResult simulate_step(const topo::Topology& topology, const Workload& workload, const StepConfig& config,
                         Engine engine, const StepCosts& costs) {
  return StepSimulator(topology, costs).run(workload, config, engine);
}

}  // namespace colltune::sim
