// Seeded random machines and schedules (see sim_random.hpp).
#include "sim_random.hpp"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/schedule.hpp"
#include "colltune/sim/event_sim.hpp"

namespace colltune::sim::testing {
namespace {

int uniform_int(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
double uniform_real(Rng& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
bool chance(Rng& rng, double p) { return std::bernoulli_distribution(p)(rng); }
template <typename T>
const T& pick(Rng& rng, const std::vector<T>& values) {
  return values[static_cast<std::size_t>(uniform_int(rng, 0, static_cast<int>(values.size()) - 1))];
}

// Link figures: from small sets when `tied` (times then tie exactly), else continuous.
struct Figures {
  bool tied = false;
  double bandwidth(Rng& rng) const {
    return tied ? pick(rng, std::vector<double>{10, 25, 50, 100, 200}) : uniform_real(rng, 5, 300);
  }
  double latency(Rng& rng) const {
    if (tied) return pick(rng, std::vector<double>{0, 0.5, 1, 2});
    return chance(rng, 0.1) ? 0.0 : uniform_real(rng, 0, 3);
  }
  double reduce(Rng& rng) const {
    if (chance(rng, 0.2)) return 0;
    return tied ? pick(rng, std::vector<double>{50, 200, 1000}) : uniform_real(rng, 10, 1500);
  }
};

// "h<host>/<what>" (built by appending: GCC 12 warns falsely on "literal" + temporary).
std::string device_id(int host, const std::string& what) {
  std::string id("h");
  id.append(std::to_string(host)).append("/").append(what);
  return id;
}

// A link a -> b, or a duplex pair with figures drawn per direction.
void random_link(Rng& rng, topo::Topology& t, topo::VertexId a, topo::VertexId b, bool duplex, const Figures& fig) {
  const auto kind = pick(rng, std::vector<topo::LinkKind>{topo::LinkKind::nvlink, topo::LinkKind::pcie, topo::LinkKind::net});
  t.add_link(a, b, kind, fig.bandwidth(rng), fig.latency(rng));
  if (duplex) t.add_link(b, a, kind, fig.bandwidth(rng), fig.latency(rng));
}

// Hosts of GPUs (a GPU hosts two ranks now and then) with optional NICs, and some switches.
// Returns the devices; `slots` gets one entry per rank (a device id, twice for a shared GPU).
std::vector<topo::VertexId> random_devices(Rng& rng, topo::Topology& t, const Sizes& sizes, const Figures& fig,
                                           std::vector<topo::VertexId>& slots) {
  std::vector<topo::VertexId> devices;
  const int hosts = uniform_int(rng, 1, 3);
  for (int h = 0; h < hosts; ++h) {
    const int host = t.add_host(std::string("h").append(std::to_string(h)));
    const int gpus = uniform_int(rng, 1, 3);
    for (int g = 0; g < gpus && static_cast<int>(slots.size()) < sizes.max_random_ranks; ++g) {
      devices.push_back(t.add_device({device_id(h, "gpu" + std::to_string(g)), topo::DeviceKind::gpu, host,
                                      fig.reduce(rng)}));
      slots.push_back(devices.back());
      if (chance(rng, 0.25) && static_cast<int>(slots.size()) < sizes.max_random_ranks) slots.push_back(devices.back());
    }
    if (chance(rng, 0.5))
      devices.push_back(t.add_device({device_id(h, "nic"), topo::DeviceKind::nic, host, 0}));
  }
  const int switches = uniform_int(rng, slots.size() < 2 ? 1 : 0, 2);
  for (int s = 0; s < switches; ++s)
    devices.push_back(t.add_device({"sw" + std::to_string(s), topo::DeviceKind::net_switch, -1, 0}));
  while (slots.size() < 2) slots.push_back(devices.front());  // at least two ranks
  return devices;
}

}  // namespace

Machine random_multigraph(Rng& rng, const Sizes& sizes) {
  Machine m;
  topo::Topology& t = m.topology;
  t.name = "random";
  Figures fig;
  fig.tied = chance(rng, 0.5);
  std::vector<topo::VertexId> slots;
  std::vector<topo::VertexId> devices = random_devices(rng, t, sizes, fig, slots);
  std::shuffle(devices.begin(), devices.end(), rng);
  for (std::size_t i = 1; i < devices.size(); ++i)  // a spanning tree of duplex links: connected
    random_link(rng, t, devices[i], devices[static_cast<std::size_t>(uniform_int(rng, 0, static_cast<int>(i) - 1))],
                true, fig);
  const int extra = uniform_int(rng, 0, 2 * static_cast<int>(devices.size()));
  for (int e = 0; e < extra; ++e) {
    const auto a = static_cast<std::size_t>(uniform_int(rng, 0, static_cast<int>(devices.size()) - 1));
    const auto b = static_cast<std::size_t>(uniform_int(rng, 0, static_cast<int>(devices.size()) - 1));
    if (a != b) random_link(rng, t, devices[a], devices[b], chance(rng, 0.5), fig);
  }
  std::shuffle(slots.begin(), slots.end(), rng);
  for (std::size_t r = 0; r < slots.size(); ++r) t.map_rank(static_cast<int>(r), slots[r]);
  t.validate();
  m.what = "random(" + std::to_string(t.num_hosts()) + " hosts, " + std::to_string(t.num_devices()) + " devices, " +
           std::to_string(t.num_links()) + " links, " + std::to_string(t.num_ranks()) + " ranks" +
           (fig.tied ? ", tied figures)" : ")");
  return m;
}

namespace {

// One link of a rotation-symmetric machine, added for every copy k (the figures are the same).
struct Pattern {
  topo::LinkKind kind = topo::LinkKind::net;
  double gbps = 0;
  double latency_us = 0;
};
Pattern random_pattern(Rng& rng, const Figures& fig) {
  return {pick(rng, std::vector<topo::LinkKind>{topo::LinkKind::nvlink, topo::LinkKind::net}), fig.bandwidth(rng),
          fig.latency(rng)};
}

}  // namespace

Machine random_symmetric(Rng& rng, const Sizes& sizes) {
  Machine m;
  topo::Topology& t = m.topology;
  t.name = "symmetric";
  Figures fig;
  fig.tied = chance(rng, 0.5);
  const int copies = uniform_int(rng, 2, 4);
  const int period = uniform_int(rng, 1, std::max(1, std::min(4, sizes.max_random_ranks / copies)));
  std::vector<double> reduce(static_cast<std::size_t>(period));
  for (double& r : reduce) r = fig.reduce(rng);
  std::vector<std::vector<topo::VertexId>> gpu(static_cast<std::size_t>(copies));
  std::vector<topo::VertexId> sw;
  for (int k = 0; k < copies; ++k) {
    const int host = t.add_host(std::string("h").append(std::to_string(k)));
    for (int i = 0; i < period; ++i) {
      gpu[static_cast<std::size_t>(k)].push_back(
          t.add_device({device_id(k, "gpu" + std::to_string(i)), topo::DeviceKind::gpu, host, reduce[static_cast<std::size_t>(i)]}));
      t.map_rank(k * period + i, gpu[static_cast<std::size_t>(k)].back());
    }
    sw.push_back(t.add_device({device_id(k, "switch"), topo::DeviceKind::pcie_switch, host, 0}));
  }
  auto each_copy = [&](const Pattern& pat, auto from, auto to) {
    for (int k = 0; k < copies; ++k) t.add_link(from(k), to(k), pat.kind, pat.gbps, pat.latency_us);
  };
  const auto s_of = [&](int k) { return sw[static_cast<std::size_t>(k)]; };
  const auto next = [&](int k) { return (k + 1) % copies; };
  for (int i = 0; i < period; ++i) {  // every GPU to its copy's switch and back
    const auto g = [&, i](int k) { return gpu[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)]; };
    each_copy(random_pattern(rng, fig), g, s_of);
    each_copy(random_pattern(rng, fig), s_of, g);
  }
  const bool hubs = chance(rng, 0.5);
  if (hubs) {  // switches meet through one link a -> b that every copy's traffic crosses
    const topo::VertexId a = t.add_device({"hub_a", topo::DeviceKind::net_switch, -1, 0});
    const topo::VertexId b = t.add_device({"hub_b", topo::DeviceKind::net_switch, -1, 0});
    each_copy(random_pattern(rng, fig), s_of, [&](int) { return a; });
    each_copy(random_pattern(rng, fig), [&](int) { return b; }, s_of);
    const Pattern ab = random_pattern(rng, fig);
    t.add_link(a, b, ab.kind, ab.gbps, ab.latency_us);
  } else {  // switches in a ring
    each_copy(random_pattern(rng, fig), s_of, [&](int k) { return sw[static_cast<std::size_t>(next(k))]; });
    each_copy(random_pattern(rng, fig), [&](int k) { return sw[static_cast<std::size_t>(next(k))]; }, s_of);
  }
  const int extra = uniform_int(rng, 0, period);  // direct GPU links, within a copy or to the next
  for (int e = 0; e < extra; ++e) {
    const auto i = static_cast<std::size_t>(uniform_int(rng, 0, period - 1));
    const auto j = static_cast<std::size_t>(uniform_int(rng, 0, period - 1));
    const int shift = uniform_int(rng, i == j ? 1 : 0, 1);
    each_copy(random_pattern(rng, fig), [&](int k) { return gpu[static_cast<std::size_t>(k)][i]; },
              [&](int k) { return gpu[static_cast<std::size_t>((k + shift) % copies)][j]; });
  }
  t.validate();
  m.what = "symmetric(" + std::to_string(copies) + " copies of " + std::to_string(period) + " ranks, " +
           (hubs ? "one hub link" : "switch ring") + ", " + std::to_string(t.num_links()) + " links" +
           (fig.tied ? ", tied figures)" : ")");
  return m;
}

Machine random_preset(Rng& rng, const Sizes& sizes) {
  std::string spec;
  switch (uniform_int(rng, 0, 3)) {
    case 0: {
      const int p = uniform_int(rng, 2, sizes.max_preset_ranks);
      std::vector<int> divisors;
      for (int d = 1; d <= p; ++d)
        if (p % d == 0) divisors.push_back(d);
      spec = "flat:ranks=" + std::to_string(p) + ",nodes=" + std::to_string(pick(rng, divisors)) +
             ",reduce=" + pick(rng, std::vector<std::string>{"20", "50", "1000"}) +
             ",alpha=" + pick(rng, std::vector<std::string>{"0", "1", "5"}) +
             ",bw=" + pick(rng, std::vector<std::string>{"12.5", "50"});
      break;
    }
    case 1: {
      const int gpus = pick(rng, std::vector<int>{1, 2, 4});
      const int nodes = std::max(2, std::min(8, sizes.max_preset_ranks / gpus));
      spec = "fat-tree:nodes=" + std::to_string(uniform_int(rng, 2, nodes)) + ",gpus=" + std::to_string(gpus) +
             ",nics=" + std::to_string(gpus) + ",leaf_ports=4,oversub=" + pick(rng, std::vector<std::string>{"1", "2", "4"});
      break;
    }
    case 2:  // one NIC per GPU, or two GPUs sharing two NICs behind a PCIe switch (NICs per channel)
      spec = pick(rng, std::vector<std::string>{"dgx-h100:nodes=2", "dgx-a100:nodes=2"});
      break;
    default: {
      std::vector<std::string> dims{"2x2", "3x3", "4x4", "2x3", "2x2x2"};
      if (sizes.max_preset_ranks >= 64) dims.insert(dims.end(), {"8x8", "4x4x4", "16x16"});
      spec = "torus:dims=" + pick(rng, dims) + ",reduce=" + pick(rng, std::vector<std::string>{"0", "200", "1117"});
      break;
    }
  }
  return Machine{topo::load_topology(spec), spec};
}

namespace {

std::size_t random_count(Rng& rng, int nranks, const Sizes& sizes) {
  const auto p = static_cast<std::size_t>(nranks);
  switch (uniform_int(rng, 0, 6)) {
    case 0: return static_cast<std::size_t>(uniform_int(rng, 0, 2));
    case 1:
    case 2: return p * static_cast<std::size_t>(uniform_int(rng, 1, 64));  // equal segments: ring symmetry
    case 3: return p * static_cast<std::size_t>(uniform_int(rng, 1, 64)) + static_cast<std::size_t>(uniform_int(rng, 1, nranks));
    case 4: return p * static_cast<std::size_t>(uniform_int(rng, 1, 64)) + 1;  // one element more (64 MiB + 4 B)
    default: return static_cast<std::size_t>(uniform_int(rng, 0, static_cast<int>(sizes.max_count)));
  }
}

coll::AlgoOptions random_options(Rng& rng, std::size_t count) {
  coll::AlgoOptions options;
  if (chance(rng, 0.5) && count > 0) options.chunk_elems = static_cast<std::size_t>(uniform_int(rng, 1, static_cast<int>(count)));
  options.inner = pick(rng, std::vector<std::string>{"ring", "rhd", "tree", "dbtree"});
  return options;
}

std::string describe(const std::string& algo, std::size_t count, const coll::AlgoOptions& o) {
  return algo + " count " + std::to_string(count) + " chunk " + std::to_string(o.chunk_elems) + " inner " + o.inner;
}

// A registered algorithm that applies to `layout` with drawn count and options (the draws are
// repeated until one applies; a single rank has none: nullopt).
std::optional<std::pair<std::string, std::pair<std::size_t, coll::AlgoOptions>>> applicable(Rng& rng, const RankLayout& layout,
                                                                                             const Sizes& sizes) {
  std::vector<const coll::Algorithm*> all;
  for (const coll::Algorithm& a : coll::algorithms())
    if (sizes.algorithms.empty() || std::find(sizes.algorithms.begin(), sizes.algorithms.end(), a.id) != sizes.algorithms.end())
      all.push_back(&a);
  if (!sizes.algorithms.empty() && all.size() != sizes.algorithms.size())
    throw std::logic_error("Sizes::algorithms names an algorithm that is not registered (renamed?)");
  for (int attempt = 0; attempt < 100; ++attempt) {
    const coll::Algorithm& a = *pick(rng, all);
    const std::size_t count = random_count(rng, layout.nranks(), sizes);
    const coll::AlgoOptions options = random_options(rng, count);
    if (!a.not_applicable(layout, count, options)) return std::make_pair(a.id, std::make_pair(count, options));
  }
  return std::nullopt;
}

std::size_t random_elem_size(Rng& rng) { return pick(rng, std::vector<std::size_t>{1, 2, 4, 8}); }

}  // namespace

Workload random_algorithm(Rng& rng, const topo::Topology& topology, const Sizes& sizes) {
  const RankLayout layout = topology.rank_layout();
  const auto drawn = applicable(rng, layout, sizes);
  if (!drawn) throw std::logic_error("no registered algorithm applies to " + std::to_string(layout.nranks()) + " ranks");
  const auto& [id, rest] = *drawn;
  const auto& [count, options] = rest;
  Workload w;
  w.elem_size = random_elem_size(rng);
  w.what = describe(id, count, options) + " elem " + std::to_string(w.elem_size);
  if (chance(rng, 0.25)) {  // stored: no declared symmetry
    w.source = std::make_unique<coll::StoredSteps>(coll::build_schedule(id, layout, count, options));
    w.what += " (stored)";
  } else {
    w.source = coll::open_schedule(id, layout, count, options);
  }
  return w;
}

Workload random_ring_family(Rng& rng, const topo::Topology& topology, const Sizes& sizes) {
  const RankLayout layout = topology.rank_layout();
  const std::vector<std::string> family{"ring", "reduce_scatter_ring", "allgather_ring", "nccl_ring", "nccl_ring"};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string& id = pick(rng, family);
    const std::size_t count = random_count(rng, layout.nranks(), sizes);
    coll::AlgoOptions options;
    if (chance(rng, 0.5) && count > 0) options.chunk_elems = static_cast<std::size_t>(uniform_int(rng, 1, static_cast<int>(count)));
    if (coll::find_algorithm(id).not_applicable(layout, count, options)) continue;
    Workload w;
    w.elem_size = random_elem_size(rng);
    w.what = describe(id, count, options) + " elem " + std::to_string(w.elem_size);
    w.source = coll::open_schedule(id, layout, count, options);
    return w;
  }
  return random_algorithm(rng, topology, sizes);
}

Workload random_concurrent(Rng& rng, const topo::Topology& topology, const Sizes& sizes) {
  const int p = topology.num_ranks();
  std::vector<int> ranks(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) ranks[static_cast<std::size_t>(r)] = r;
  std::shuffle(ranks.begin(), ranks.end(), rng);
  const int groups = std::min(uniform_int(rng, 2, 3), p / 2);
  std::vector<coll::Schedule> schedules;
  std::vector<PlacedSchedule> placed;
  schedules.reserve(static_cast<std::size_t>(groups));
  std::string what = "concurrent:";
  std::size_t next = 0;
  for (int g = 0; g < groups; ++g) {
    const std::size_t left = ranks.size() - next;
    const std::size_t size = g + 1 == groups ? left : static_cast<std::size_t>(uniform_int(rng, 2, static_cast<int>(left) - 2 * (groups - g - 1)));
    std::vector<int> members(ranks.begin() + static_cast<std::ptrdiff_t>(next), ranks.begin() + static_cast<std::ptrdiff_t>(next + size));
    next += size;
    std::map<int, int> dense;  // the members' hosts, numbered 0..H-1
    std::vector<int> host_of;
    for (int r : members) host_of.push_back(dense.emplace(topology.host_of_rank(r), static_cast<int>(dense.size())).first->second);
    const RankLayout layout(host_of);
    const auto drawn = applicable(rng, layout, sizes);
    if (!drawn) continue;
    const auto& [id, rest] = *drawn;
    schedules.push_back(coll::build_schedule(id, layout, rest.first, rest.second));
    placed.push_back({&schedules.back(), members});
    what += " [" + describe(id, rest.first, rest.second) + " on " + std::to_string(size) + " ranks]";
  }
  Workload w;
  w.elem_size = random_elem_size(rng);
  w.source = std::make_unique<coll::StoredSteps>(run_concurrently(placed, p));
  w.what = what + " elem " + std::to_string(w.elem_size);
  return w;
}

namespace {

struct Transfer {
  int src = 0;
  int dst = 0;
  std::size_t count = 0;
  coll::OpKind recv = coll::OpKind::recv_copy;
  std::uint16_t channel = 0;  // picks the NICs between hosts (Topology::route)
};

// Each rank's ops in transfer order, cut into steps with probability `cut` after each op.
// Deadlock-free: the least transfer not done has every earlier op of both its ranks done, so
// both have posted it; pairs match because both ends list a channel's transfers in one order.
coll::Schedule cut_into_steps(Rng& rng, int nranks, const std::vector<Transfer>& transfers, double cut) {
  coll::Schedule s;
  s.algorithm = "random_exchange";
  s.nranks = nranks;
  s.ranks.resize(static_cast<std::size_t>(nranks));
  std::vector<std::vector<coll::Op>> ops(static_cast<std::size_t>(nranks));
  for (const Transfer& x : transfers) {
    ops[static_cast<std::size_t>(x.src)].push_back({coll::OpKind::send, x.dst, coll::Block{0, x.count}, x.channel});
    ops[static_cast<std::size_t>(x.dst)].push_back({x.recv, x.src, coll::Block{0, x.count}, x.channel});
    s.count = std::max(s.count, x.count);
  }
  for (std::size_t r = 0; r < ops.size(); ++r) {
    std::vector<coll::Step>& steps = s.ranks[r];
    for (std::size_t i = 0; i < ops[r].size(); ++i) {
      if (i == 0 || chance(rng, cut)) steps.emplace_back();
      steps.back().ops.push_back(ops[r][i]);
    }
  }
  return s;
}

}  // namespace

Workload random_exchange(Rng& rng, int nranks, const Sizes& sizes) {
  const int n = uniform_int(rng, 1, 6 * nranks);
  const bool tied = chance(rng, 0.5);  // a few sizes only: transfers end together
  std::vector<Transfer> transfers;
  for (int i = 0; i < n; ++i) {
    Transfer x;
    x.src = uniform_int(rng, 0, nranks - 1);
    x.dst = (x.src + uniform_int(rng, 1, nranks - 1)) % nranks;
    if (!chance(rng, 0.1))
      x.count = tied ? pick(rng, std::vector<std::size_t>{256, 1024}) : static_cast<std::size_t>(uniform_int(rng, 1, static_cast<int>(sizes.max_count)));
    x.recv = chance(rng, 0.5) ? coll::OpKind::recv_reduce : coll::OpKind::recv_copy;
    x.channel = static_cast<std::uint16_t>(uniform_int(rng, 0, 3));
    transfers.push_back(x);
    if (chance(rng, 0.15)) transfers.push_back(x);  // a second transfer on the channel right after
  }
  const double cut = pick(rng, std::vector<double>{0.1, 0.3, 0.7, 1.0});
  Workload w;
  w.elem_size = random_elem_size(rng);
  w.source = std::make_unique<coll::StoredSteps>(cut_into_steps(rng, nranks, transfers, cut));
  w.what = "random_exchange(" + std::to_string(transfers.size()) + " transfers, cut " + std::to_string(cut) +
           (tied ? ", tied sizes" : "") + ") elem " + std::to_string(w.elem_size);
  return w;
}

}  // namespace colltune::sim::testing
