// Horovod's hierarchical allreduce over NCCL, phase by phase (model in horovod_hierarchical.hpp).
#include "colltune/sim/horovod_hierarchical.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/priced_machine.hpp"

namespace colltune::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One rank per host: the ranks of a cross-host communicator.
RankLayout one_rank_per_host(int hosts) {
  std::vector<int> host_of(static_cast<std::size_t>(hosts));
  for (int h = 0; h < hosts; ++h) host_of[static_cast<std::size_t>(h)] = h;
  return RankLayout(std::move(host_of));
}

// The CPU of the rank's host nearest its GPU (lowest route latency, then fewest links), and
// the route to it. Throws when the host has no CPU device.
topo::Path route_to_nearest_cpu(const topo::Topology& t, int rank) {
  const topo::VertexId gpu = t.device_of_rank(rank);
  const int host = t.host_of_rank(rank);
  std::optional<topo::Path> best;
  for (topo::VertexId v = 0; v < t.num_devices(); ++v) {
    const topo::Device& d = t.device(v);
    if (d.kind != topo::DeviceKind::cpu || d.host != host) continue;
    topo::Path p = t.device_route(gpu, v);
    if (!best || p.latency_us < best->latency_us ||
        (p.latency_us == best->latency_us && p.links.size() < best->links.size()))
      best = std::move(p);
  }
  if (!best) throw Error("host '" + t.host_name(host) + "' has no CPU device to copy Horovod's shards to");
  return *best;
}

// GB/s each GPU of host 0 gets copying to its CPU while all of them copy at once: on each link
// of its route, the link's bandwidth divided by the GPUs whose routes use it; the slowest GPU's.
double shared_pcie_gbps(const topo::Topology& t, const std::vector<int>& host_ranks) {
  std::vector<topo::Path> routes;
  std::map<std::size_t, int> users;
  for (int r : host_ranks) {
    routes.push_back(route_to_nearest_cpu(t, r));
    for (std::size_t l : routes.back().links) ++users[l];
  }
  double slowest = kInf;
  for (const topo::Path& p : routes) {
    double share = kInf;
    for (std::size_t l : p.links) share = std::min(share, t.link(l).bandwidth_gbps / users[l]);
    slowest = std::min(slowest, share);
  }
  return slowest;
}

// us per byte one MPI process reduces at: the host's CPUs' reduction rates together, shared by
// the host's `processes` (0 when no CPU states a rate).
double cpu_reduce_us_per_byte(const topo::Topology& t, int host, int processes) {
  double gbps = 0;
  for (topo::VertexId v = 0; v < t.num_devices(); ++v) {
    const topo::Device& d = t.device(v);
    if (d.kind == topo::DeviceKind::cpu && d.host == host) gbps += t.reduce_gbps_of(v);
  }
  return gbps > 0 ? processes / (gbps * 1e3) : 0.0;
}

std::string label_of(const NcclChoice& c) {
  return std::string(to_string(c.algo)) + "/" + std::string(to_string(c.proto));
}

}  // namespace

HorovodHierarchical::HorovodHierarchical(const topo::Topology& topology, const StepCosts& given,
                                         double pageable_copy_efficiency, const NcclOptions& nccl) {
  const StepCosts costs = costs_on(topology, given);  // a calibrated machine's efficiencies are its own
  const RankLayout layout = topology.rank_layout();
  hosts_ = layout.nhosts();
  if (hosts_ < 2) throw Error("Horovod ignores HOROVOD_HIERARCHICAL_ALLREDUCE on one host");
  if (!layout.is_uniform())
    throw Error("hosts hold different numbers of GPUs (Horovod's non-homogeneous hierarchical path is not modelled)");
  local_ = layout.max_ranks_per_host();
  NcclOptions one_host = nccl;
  one_host.nranks = local_;
  local_nccl_ = make_nccl_pricer(topology, one_host, costs);

  const std::vector<int>& host0 = layout.ranks_on_host(0);
  host_copy_gbps_ = shared_pcie_gbps(topology, host0) * costs.pcie_efficiency * pageable_copy_efficiency;

  // The network figures of the machine, as the cost model derives them, at the network's
  // efficiency: MPI over the NICs moves host memory the way NCCL's network transport does.
  const CostModel cost(topology);
  const double net = link_efficiency(costs, topo::LinkKind::net, topology.transport);
  alpha_inter_us_ = cost.levels.alpha_inter_us;
  beta_inter_us_per_byte_ = cost.levels.beta_inter_us_per_byte / net;
  beta_host_us_per_byte_ = cost.levels.beta_host_us_per_byte / net;
  cpu_reduce_us_per_byte_ = cpu_reduce_us_per_byte(topology, 0, local_);
}

HorovodHierarchical::~HorovodHierarchical() = default;
HorovodHierarchical::HorovodHierarchical(HorovodHierarchical&&) noexcept = default;

// NCCL's own pick for one call on the host's communicator, priced by the NCCL price path (NCCL's
// reduce and broadcast of the remainder, which colltune has no schedule of, by NCCL's own
// model); `bytes` is NCCL's nBytes (for reduce-scatter and allgather, all ranks' data together).
double HorovodHierarchical::nccl_us(int coll, std::size_t bytes, std::string* label) const {
  const NcclPrice pick = local_nccl_->price(static_cast<NcclColl>(coll), bytes);
  if (label) *label = label_of(pick.nccl);
  return pick.time_us;
}

// MPI_Allreduce of `elems` on one rank per host, priced as colltune's ring on those ranks; the
// host's L processes run one such allreduce each at once, so each gets 1/L of the host's NICs
// (LevelCosts::beta_host_us_per_byte x L), and reduces at 1/L of the host's CPUs.
double HorovodHierarchical::cross_host_us(std::size_t elems, std::size_t elem_size) const {
  coll::LevelCosts levels;
  levels.alpha_intra_us = levels.alpha_inter_us = alpha_inter_us_;
  levels.beta_intra_us_per_byte = levels.beta_inter_us_per_byte = beta_inter_us_per_byte_;
  levels.beta_host_us_per_byte = beta_host_us_per_byte_ * local_;
  levels.gamma_us_per_byte = cpu_reduce_us_per_byte_;
  return hint_or_price(coll::find_algorithm("ring"), one_rank_per_host(hosts_), elems * elem_size, elem_size, {},
                       levels);
}

HorovodHierarchicalPhases HorovodHierarchical::phases(std::size_t bytes, std::size_t elem_size,
                                                      std::size_t tensors) const {
  if (elem_size == 0 || bytes % elem_size != 0)
    throw Error("a " + std::to_string(bytes) + "-byte buffer is not a whole number of " + std::to_string(elem_size) +
                "-byte elements");
  std::size_t n = bytes / elem_size;
  const auto L = static_cast<std::size_t>(local_);
  if (tensors > 1) n = (n + L * kHorovodAtomicUnit - 1) / (L * kHorovodAtomicUnit) * (L * kHorovodAtomicUnit);
  HorovodHierarchicalPhases p;
  p.shard_elems = n / L;
  p.remainder_elems = n % L;
  // Local rank L-1 carries the remainder through every phase: it is the last to finish.
  const std::size_t host_elems = p.shard_elems + p.remainder_elems;
  if (p.shard_elems > 0) {
    p.reduce_scatter_us = nccl_us(static_cast<int>(NcclColl::reduce_scatter), p.shard_elems * L * elem_size,
                                  &p.nccl_reduce_scatter);
    p.allgather_us = nccl_us(static_cast<int>(NcclColl::allgather), p.shard_elems * L * elem_size, &p.nccl_allgather);
  }
  if (p.remainder_elems > 0) {
    p.reduce_scatter_us += nccl_us(static_cast<int>(NcclColl::reduce), p.remainder_elems * elem_size, nullptr);
    p.allgather_us += nccl_us(static_cast<int>(NcclColl::broadcast), p.remainder_elems * elem_size, nullptr);
  }
  const double copy_us = static_cast<double>(host_elems * elem_size) / (host_copy_gbps_ * 1e3);
  p.to_host_us = p.to_device_us = copy_us;
  p.cross_host_us = cross_host_us(host_elems, elem_size);
  return p;
}

}  // namespace colltune::sim
