// NcclPricer (nccl_price.hpp): NCCL's pick from NCCL's model on the machine as measured, priced
// by its colltune schedule with the protocol's costs on the machine as priced.
#include "colltune/sim/nccl_price.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "colltune/common/error.hpp"
#include "colltune/sim/cost_model.hpp"

namespace colltune::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Prices kept per pricer (the tuner asks for the same buffers under thousands of configurations).
constexpr std::size_t kMaxCachedPrices = std::size_t{1} << 16;

// A machine the schedules run on: the priced topology itself, or with its switches as ranks.
struct Machine {
  topo::Topology topology;
  CostModel cost;
};

// The pipeline chunk NCCL's tree moves per step of a protocol: the protocol's buffer over
// NCCL_STEPS, the payload of it (LL: half of each 8-byte line; LL128: 120 of 128 bytes).
std::size_t tree_chunk_bytes(const NcclConstants& k, NcclProto proto) {
  const std::size_t step = static_cast<std::size_t>(k.buffsize[static_cast<std::size_t>(index_of(proto))]) /
                           static_cast<std::size_t>(k.nccl_steps);
  if (proto == NcclProto::ll) return step / 2;
  if (proto == NcclProto::ll128) return step / 128 * 120;
  return step;
}

}  // namespace

struct NcclPricer::Impl {
  NcclModel model;
  Machine plain;
  MachineFigures figures;
  int hosts = 0;
  // Machines with switch ranks, built on first use (nccl_nvls, nccl_nvls_tree: every host's
  // NVSwitch; nccl_collnet: the SHARP switch); an empty optional with `why` where there is none.
  struct InSwitch {
    std::once_flag once;
    std::optional<Machine> machine;
    std::string why;
  };
  mutable InSwitch nvls, sharp;
  const topo::Topology& priced_topology;
  mutable std::mutex mutex;
  using Key = std::tuple<int, int, int, std::size_t, std::size_t>;
  mutable std::map<Key, NcclPrice> cache;

  Impl(const topo::Topology& priced, const topo::Topology& measured, const NcclOptions& options)
      : model(measured, options),
        plain{priced, CostModel(priced, model.system().nranks, schedule_channels())},
        priced_topology(plain.topology) {
    hosts = plain.cost.layout.nhosts();
  }

  NcclScheduleChannels schedule_channels() const {
    const ChannelPlan& tree = model.channels(NcclAlgo::tree);
    return {model.channels(NcclAlgo::ring).orders, tree.orders, tree.simple_tree};
  }

  const Machine* in_switch(const coll::Algorithm& algorithm, std::string* why) const {
    InSwitch& s = algorithm.in_network_switch ? sharp : nvls;
    std::call_once(s.once, [&] {
      try {
        topo::Topology t = algorithm.in_network_switch ? topo::with_sharp_switch(priced_topology)
                                                       : topo::with_nvls_switch(priced_topology);
        const int ranks = t.num_ranks();
        CostModel cost(t, ranks, {});
        s.machine.emplace(Machine{std::move(t), std::move(cost)});
      } catch (const Error& e) {
        s.why = e.what();
      }
    });
    if (!s.machine && why) *why = s.why;
    return s.machine ? &*s.machine : nullptr;
  }

  // The schedule's options for a protocol: NCCL's channels (CostModel::options_for); NCCL's
  // tree moves the protocol's chunk per step.
  coll::AlgoOptions options_for(const Machine& m, const coll::Algorithm& algorithm, NcclProto proto,
                                std::size_t elem_size) const {
    coll::AlgoOptions o;
    if (algorithm.nccl_tree_channels) o.chunk_elems = std::max<std::size_t>(1, tree_chunk_bytes(model.constants(), proto) / elem_size);
    return m.cost.options_for(algorithm, o);
  }

  NcclPrice priced(NcclColl coll, const NcclChoice& choice, std::size_t bytes, std::size_t elem_size,
                   const MachineFigures* f) const;
  // priced(), kept by the call where `f` is null (the machine's own figures).
  NcclPrice cached(NcclColl coll, const NcclChoice& choice, std::size_t bytes, std::size_t elem_size,
                   const MachineFigures* f) const;
};

NcclPrice NcclPricer::Impl::priced(NcclColl coll, const NcclChoice& choice, std::size_t bytes, std::size_t elem_size,
                                   const MachineFigures* f) const {
  NcclPrice out;
  out.nccl = choice;
  out.time_us = choice.time_us;
  if (!std::isfinite(choice.time_us)) return out;
  std::string why;
  const std::optional<std::string> id = nccl_schedule_of(coll, choice.algo, hosts, &why);
  const coll::Algorithm* algorithm = id ? &coll::find_algorithm(*id) : nullptr;
  const Machine* m = !algorithm ? nullptr : algorithm->in_switch ? in_switch(*algorithm, &why) : &plain;
  const std::size_t elem = elem_size == 0 ? 1 : elem_size;
  const std::size_t count = bytes / elem;
  coll::AlgoOptions options;
  if (m) {
    options = options_for(*m, *algorithm, choice.proto, elem);
    if (algorithm->not_applicable)
      if (auto reason = algorithm->not_applicable(m->cost.layout, count, options)) why = *id + ": " + *reason, m = nullptr;
  }
  if (!m) {
    out.fallback = why + "; NCCL's own time stands in";
    return out;
  }
  const ProtocolCost cost = protocol_cost(model, coll, choice.algo, choice.proto, f ? f->efficiency : figures.efficiency);
  const coll::LevelCosts machine = f ? with_figures(m->cost.levels, *f) : m->cost.levels;
  out.schedule = *id;
  out.time_us = latency_us(cost, machine) +
                hint_or_price(*algorithm, m->cost.layout, count * elem, elem, options, bandwidth_levels(machine, cost));
  return out;
}

NcclPricer::NcclPricer(const topo::Topology& priced, const topo::Topology& measured, const NcclOptions& options,
                       const ProtocolEfficiency& efficiency) {
  if (priced.num_ranks() != measured.num_ranks())
    throw Error("NCCL priced: the priced machine has " + std::to_string(priced.num_ranks()) +
                " ranks, the measured one " + std::to_string(measured.num_ranks()));
  impl_ = std::make_unique<Impl>(priced, measured, options);
  impl_->figures = figures_of(impl_->plain.cost.levels, efficiency);
}
NcclPricer::~NcclPricer() = default;

const NcclModel& NcclPricer::model() const { return impl_->model; }
int NcclPricer::nranks() const { return impl_->model.system().nranks; }
const MachineFigures& NcclPricer::figures() const { return impl_->figures; }

NcclPrice NcclPricer::Impl::cached(NcclColl coll, const NcclChoice& choice, std::size_t bytes, std::size_t elem_size,
                                   const MachineFigures* f) const {
  if (f) return priced(coll, choice, bytes, elem_size, f);
  const Key key{index_of(coll), index_of(choice.algo), index_of(choice.proto), bytes, elem_size};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  NcclPrice p = priced(coll, choice, bytes, elem_size, nullptr);
  const std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= kMaxCachedPrices) cache.clear();
  cache.emplace(key, p);
  return p;
}

NcclPrice NcclPricer::price(NcclColl coll, std::size_t bytes, std::size_t elem_size, const MachineFigures* f) const {
  return impl_->cached(coll, impl_->model.choose(coll, bytes), bytes, elem_size, f);
}

NcclPrice NcclPricer::price(NcclColl coll, NcclAlgo algo, NcclProto proto, std::size_t bytes, std::size_t elem_size,
                            const MachineFigures* f) const {
  NcclChoice cell;
  cell.algo = algo;
  cell.proto = proto;
  cell.time_us = impl_->model.time_us(algo, proto, coll, bytes);
  cell.channels = std::isfinite(cell.time_us) ? impl_->model.channels_for(algo, proto, bytes) : 0;
  if (!std::isfinite(cell.time_us)) {
    NcclPrice off;
    off.nccl = cell;
    off.time_us = kInf;
    off.fallback = "NCCL does not run " + std::string(nccl_env_name(algo)) + "/" + std::string(nccl_env_name(proto)) +
                   " here";
    return off;
  }
  return impl_->cached(coll, cell, bytes, elem_size, f);
}

}  // namespace colltune::sim
