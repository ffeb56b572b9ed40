// NcclPricer (nccl_price.hpp): NCCL's pick from NCCL's model on the machine as measured, priced
// by its colltune schedule with the protocol's costs on the machine as priced.
#include "colltune/sim/nccl_price.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/common/once_map.hpp"
#include "colltune/common/parallel.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/topology/subset.hpp"

namespace colltune::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Prices kept per pricer (the tuner asks for the same buffers under thousands of configurations).
constexpr std::size_t kMaxCachedPrices = std::size_t{1} << 16;

// A machine the schedules run on (the priced topology itself, a prefix of its hosts, or either
// with its switches as ranks), as the cost model derives it; the topology is not kept (a copy of
// a 4,096-GPU graph was most of a pricer's construction).
struct Machine {
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

// Which machine a schedule runs on: the priced one, or with its switches as ranks.
enum class MachineKind { plain = 0, nvls = 1, sharp = 2 };

MachineKind kind_of(const coll::Algorithm& algorithm) {
  if (!algorithm.in_switch) return MachineKind::plain;
  return algorithm.in_network_switch ? MachineKind::sharp : MachineKind::nvls;
}

// NCCL's trees across hosts (nccl_tree, nccl_nvls_tree) on H > kScaleHosts hosts, H a power of
// two, are priced on the first kScaleHosts / 2 and kScaleHosts hosts and extended linearly in
// the tree's depth: every host of a double binary tree over a power of two of hosts carries the
// same bytes whatever their number, so more hosts add only pipeline fill and drain, a chunk
// step per level. Tests hold the extension within 1% of the whole machine's price
// (tests/sim/analytic/test_nccl_price.cpp). Other host counts, whose two trees differ in shape,
// and nccl_tree's BALANCED_TREE pattern (a host's children on two GPUs: the load per GPU changes
// with the tree's shape) are priced whole.
constexpr int kScaleHosts = 16;

bool scales(int hosts) { return hosts > kScaleHosts && (hosts & (hosts - 1)) == 0; }

// A cell is priced at powers of two and at every size up to kExactBytes; between two powers of two
// above it, its price is interpolated linearly between theirs (a schedule's time is close to
// affine in its size within an octave: a latency and bytes over a bandwidth). The tuner prices
// thousands of buffer sizes with the cells of a few dozen powers of two; every command prices
// a size the same way. Tests hold the interpolation within 2% of the size priced exactly.
constexpr std::size_t kExactBytes = std::size_t{64} << 10;

// The NCCL cell a schedule prices: algorithm, protocol, NCCL's channels for the size, the size.
struct Cell {
  NcclAlgo algo = NcclAlgo::ring;
  NcclProto proto = NcclProto::simple;
  int channels = 0;
  std::size_t bytes = 0;
};

}  // namespace

struct NcclPricer::Impl {
  NcclModel model;
  const topo::Topology priced_topology;
  ProtocolEfficiency efficiency;
  int hosts = 0;
  // The machine's own figures (NcclPricer::figures()), read from the plain machine on first use:
  // a price that runs on the machine with its switches as ranks (NVLS, SHARP) does not need it.
  mutable std::once_flag figures_once;
  mutable MachineFigures figures;
  // Machines by (kind, hosts: 0 = all), built on first use; an empty optional with `why` where
  // there is none (no switch that reduces).
  struct Slot {
    std::once_flag once;
    std::optional<Machine> machine;
    std::string why;
  };
  mutable std::mutex mutex;
  mutable std::map<std::pair<int, int>, std::unique_ptr<Slot>> machines;
  // (collective, algorithm, protocol, bytes, element size) of exact()'s prices, each priced once
  // however many threads ask (the tuner's parallel grid).
  struct Key {
    int coll = 0, algo = 0, proto = 0;
    std::size_t bytes = 0, elem_size = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      std::size_t h = 0;
      for (std::size_t v : {static_cast<std::size_t>(k.coll), static_cast<std::size_t>(k.algo),
                            static_cast<std::size_t>(k.proto), k.bytes, k.elem_size})
        h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      return h;
    }
  };
  mutable OnceMap<Key, NcclPrice, KeyHash> cache{kMaxCachedPrices};

  Impl(topo::Topology priced, const topo::Topology& measured, const NcclOptions& options,
       const ProtocolEfficiency& protocol_efficiency)
      : model(measured, options), priced_topology(std::move(priced)), efficiency(protocol_efficiency) {
    hosts = layout_of_first_ranks(priced_topology, model.system().nranks).nhosts();  // the plain machine's
  }

  const MachineFigures& machine_figures() const {
    std::call_once(figures_once, [&] {
      std::string why;
      const Machine* plain = machine(MachineKind::plain, 0, &why);
      if (!plain) throw Error("NCCL priced: no cost model of the machine: " + why);
      figures = figures_of(plain->cost.levels, efficiency);
    });
    return figures;
  }

  // The channels the kernels run on (NcclModel::comm_orders: the search's, unless the channel
  // settings keep some of them more often than others, or fewer of them).
  NcclScheduleChannels schedule_channels() const {
    return {model.comm_orders(NcclAlgo::ring), model.comm_orders(NcclAlgo::tree),
            model.channels(NcclAlgo::tree).simple_tree};
  }

  // The machine of `kind` on NCCL's ranks, or on its first `first_hosts` hosts (0: all).
  Machine build(MachineKind kind, int first_hosts) const {
    std::optional<topo::Topology> prefix;
    if (first_hosts > 0) {
      std::vector<int> drop;
      for (int h = first_hosts; h < priced_topology.num_hosts(); ++h) drop.push_back(h);
      prefix = topo::without_hosts(priced_topology, drop);
    }
    const topo::Topology& t = prefix ? *prefix : priced_topology;
    const int data_ranks = prefix ? t.num_ranks() : model.system().nranks;
    if (kind == MachineKind::plain) return Machine{CostModel(t, data_ranks, schedule_channels())};
    const topo::Topology with = kind == MachineKind::sharp ? topo::with_sharp_switch(t) : topo::with_nvls_switch(t);
    return Machine{CostModel(with, with.num_ranks(), schedule_channels())};
  }

  const Machine* machine(MachineKind kind, int first_hosts, std::string* why) const {
    Slot* slot = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      auto& s = machines[{static_cast<int>(kind), first_hosts}];
      if (!s) s = std::make_unique<Slot>();
      slot = s.get();
    }
    std::call_once(slot->once, [&] {
      try {
        slot->machine.emplace(build(kind, first_hosts));
      } catch (const Error& e) {
        slot->why = e.what();
      }
    });
    if (!slot->machine && why) *why = slot->why;
    return slot->machine ? &*slot->machine : nullptr;
  }

  // The schedule's options for a cell: NCCL's channels (CostModel::options_for); NCCL's tree
  // moves the protocol's chunk per step; NVLS and NVLSTree move, per round, the chunk NCCL's
  // kernels move on every channel for every head (NcclModel::nvls_chunk_bytes), as the same
  // bytes per round spread over the schedule's shards (nccl_nvls: one per GPU; nccl_nvls_tree:
  // two per GPU, one per tree), so the schedule runs as many rounds as NCCL's loop.
  coll::AlgoOptions options_for(const Machine& m, const coll::Algorithm& algorithm, const Cell& cell,
                                std::size_t elem_size) const {
    coll::AlgoOptions o;
    if (algorithm.nccl_tree_channels)
      o.chunk_elems = std::max<std::size_t>(1, tree_chunk_bytes(model.constants(), cell.proto) / elem_size);
    if (const std::size_t chunk = model.nvls_chunk_bytes(cell.algo, cell.bytes, cell.channels); chunk > 0) {
      const std::size_t per_round = chunk * static_cast<std::size_t>(std::max(cell.channels, 1));
      const std::size_t shards_per_head = cell.algo == NcclAlgo::nvls_tree ? 2 : 1;
      o.chunk_elems = std::max<std::size_t>(1, per_round / shards_per_head / elem_size);
    }
    return m.cost.options_for(algorithm, o);
  }

  // The schedule without latency on `m`, at `f` (null: the machine's own figures).
  double bandwidth_us(const Machine& m, const coll::Algorithm& algorithm, const Cell& cell, const ProtocolCost& cost,
                      std::size_t count, std::size_t elem, const MachineFigures* f) const {
    const coll::LevelCosts levels = bandwidth_levels(f ? with_figures(m.cost.levels, *f) : m.cost.levels, cost);
    // A cell is priced at powers of two (kExactBytes): its pipelines' rounds double from size to
    // size, so their settling searches begin at the window (PipelineProbes).
    return hint_or_price(algorithm, m.cost.layout, count * elem, elem, options_for(m, algorithm, cell, elem), levels,
                         PipelineProbes::from_window);
  }

  // Whether `algorithm` is priced on the two prefix machines and extended to the whole one
  // (scaled_bandwidth_us): NCCL's NVLS-Tree, and NCCL's tree where its pattern is the simple one
  // (NCCL's channels decide, as the cost model's options_for passes them on), across more than
  // kScaleHosts hosts, a power of two.
  bool priced_on_prefixes(const coll::Algorithm& algorithm) const {
    if (!scales(hosts) || !algorithm.summation_depth) return false;
    if (algorithm.in_switch) return !algorithm.in_network_switch;
    if (!algorithm.nccl_tree_channels) return false;
    const ChannelPlan& tree = model.channels(NcclAlgo::tree);
    return !tree.orders.empty() && tree.simple_tree;
  }

  // The machine `algorithm` runs on, and where it is priced on prefixes too, those built beside
  // it: on a 4,096-GPU machine each is a copy of the topology with its cost model, and the
  // prefixes were built one after the other once the whole machine was.
  const Machine* machines_for(const coll::Algorithm& algorithm, std::string* why) const {
    const MachineKind kind = kind_of(algorithm);
    if (priced_on_prefixes(algorithm)) {
      static constexpr int kHosts[] = {0, kScaleHosts / 2, kScaleHosts};
      parallel_map(3, [&](std::size_t i) { return machine(kind, kHosts[i], nullptr) != nullptr; });
    }
    return machine(kind, 0, why);
  }

  // The bandwidth part on the whole machine: NCCL's trees across many hosts extended from two
  // smaller machines (kScaleHosts), everything else priced whole.
  double scaled_bandwidth_us(const Machine& whole, const coll::Algorithm& algorithm, const Cell& cell,
                             const ProtocolCost& cost, std::size_t count, std::size_t elem,
                             const MachineFigures* f) const {
    if (!priced_on_prefixes(algorithm)) return bandwidth_us(whole, algorithm, cell, cost, count, elem, f);
    const MachineKind kind = kind_of(algorithm);
    const Machine* small = machine(kind, kScaleHosts / 2, nullptr);
    const Machine* large = machine(kind, kScaleHosts, nullptr);
    if (!small || !large) return bandwidth_us(whole, algorithm, cell, cost, count, elem, f);
    const auto depth = [&](const Machine& m) {
      return algorithm.summation_depth(m.cost.layout, options_for(m, algorithm, cell, elem));
    };
    const int d_small = depth(*small), d_large = depth(*large), d_whole = depth(whole);
    if (d_large <= d_small) return bandwidth_us(whole, algorithm, cell, cost, count, elem, f);
    // The same bytes per host: each machine's share of the buffer is the whole buffer (and NCCL's
    // chunk on the whole machine). The two machines priced side by side: their pipelines are the
    // reference pricer's work.
    const std::vector<double> t = parallel_map(2, [&](std::size_t i) {
      return bandwidth_us(i == 0 ? *small : *large, algorithm, cell, cost, count, elem, f);
    });
    const double t_small = t[0], t_large = t[1];
    return t_large + (t_large - t_small) * static_cast<double>(d_whole - d_large) / static_cast<double>(d_large - d_small);
  }

  NcclPrice priced(NcclColl coll, const NcclChoice& choice, std::size_t bytes, std::size_t elem_size,
                   const MachineFigures* f) const;
  // priced(), kept by the call where `f` is null (the machine's own figures).
  NcclPrice exact(NcclColl coll, const NcclChoice& choice, std::size_t bytes, std::size_t elem_size,
                  const MachineFigures* f) const;
  // exact() at a power of two (and up to kExactBytes), else interpolated between the powers of two
  // around `bytes`.
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
  const Machine* m = algorithm ? machines_for(*algorithm, &why) : nullptr;
  const std::size_t elem = elem_size == 0 ? 1 : elem_size;
  const std::size_t count = bytes / elem;
  const Cell cell{choice.algo, choice.proto, model.channels_for(choice.algo, choice.proto, bytes), bytes};
  if (m && algorithm->not_applicable)
    if (auto reason = algorithm->not_applicable(m->cost.layout, count, options_for(*m, *algorithm, cell, elem)))
      why = *id + ": " + *reason, m = nullptr;
  if (!m) {
    out.fallback = why + "; NCCL's own time stands in";
    return out;
  }
  const ProtocolCost cost = protocol_cost(model, coll, choice.algo, choice.proto, f ? f->efficiency : efficiency);
  out.schedule = *id;
  out.time_us = latency_us(cost, f ? with_figures(m->cost.levels, *f) : m->cost.levels) +
                scaled_bandwidth_us(*m, *algorithm, cell, cost, count, elem, f);
  return out;
}

NcclPricer::NcclPricer(topo::Topology priced, const topo::Topology& measured, const NcclOptions& options,
                       const ProtocolEfficiency& efficiency) {
  if (priced.num_ranks() != measured.num_ranks())
    throw Error("NCCL priced: the priced machine has " + std::to_string(priced.num_ranks()) +
                " ranks, the measured one " + std::to_string(measured.num_ranks()));
  impl_ = std::make_unique<Impl>(std::move(priced), measured, options, efficiency);
}
NcclPricer::~NcclPricer() = default;

const NcclModel& NcclPricer::model() const { return impl_->model; }
int NcclPricer::nranks() const { return impl_->model.system().nranks; }
const MachineFigures& NcclPricer::figures() const { return impl_->machine_figures(); }

NcclPrice NcclPricer::Impl::cached(NcclColl coll, const NcclChoice& choice, std::size_t bytes, std::size_t elem_size,
                                   const MachineFigures* f) const {
  const std::size_t lo = std::bit_floor(bytes);
  if (bytes <= kExactBytes || lo == bytes || !std::isfinite(choice.time_us)) return exact(coll, choice, bytes, elem_size, f);
  // Between two powers of two: the cell's prices there, interpolated.
  const auto at = [&](std::size_t b) {
    NcclChoice c = choice;
    c.time_us = model.time_us(choice.algo, choice.proto, coll, b);
    return exact(coll, c, b, elem_size, f);
  };
  const NcclPrice below = at(lo), above = at(2 * lo);
  NcclPrice out = below;
  out.nccl = choice;
  if (!below.fallback.empty() || !above.fallback.empty() || !std::isfinite(below.time_us) || !std::isfinite(above.time_us)) {
    out.time_us = choice.time_us;  // NCCL's own time at this size
    return out;
  }
  const double w = static_cast<double>(bytes - lo) / static_cast<double>(lo);
  out.time_us = below.time_us + w * (above.time_us - below.time_us);
  return out;
}

NcclPrice NcclPricer::Impl::exact(NcclColl coll, const NcclChoice& choice, std::size_t bytes, std::size_t elem_size,
                                  const MachineFigures* f) const {
  if (f) return priced(coll, choice, bytes, elem_size, f);
  const Key key{index_of(coll), index_of(choice.algo), index_of(choice.proto), bytes, elem_size};
  return cache.get(key, [&] { return priced(coll, choice, bytes, elem_size, nullptr); });
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
