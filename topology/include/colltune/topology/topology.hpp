#pragma once
// The machine as a directed multigraph (Boost.Graph, graph.hpp): vertices are devices, edges
// are links. A duplex cable is two edges, one per direction, each with its own bandwidth.
// Ranks map to devices (normally GPUs); devices belong to hosts (network switches to none).
//
// This module knows nothing about collectives: it answers "how do bytes get from rank a to
// rank b, how fast, how late" and "which ranks share a host".
#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "colltune/common/rank_layout.hpp"

namespace colltune::topo {

enum class DeviceKind { gpu, cpu, nic, nvswitch, pcie_switch, net_switch };
enum class LinkKind { nvlink, pcie, net, shm, sys };  // sys: CPU socket interconnect (UPI/xGMI)
inline constexpr std::size_t kLinkKinds = 5;          // LinkKind's values, 0 to 4
// Reduction a switch performs on the data passing through it: NVLink SHARP in the NVSwitch of
// Hopper and later systems (NCCL's NVLS algorithms), SHARP in InfiniBand switches (NCCL's
// CollNet). Algorithms that reduce in a switch apply only where a switch says it can.
enum class SwitchReduction { none, nvls, sharp };
// What carries the network (`net`) links: InfiniBand verbs, RDMA over Converged Ethernet, or
// plain TCP sockets (NCCL's socket transport). Links do not differ in the graph; the step model
// prices each with the transport's efficiency (docs/step-model.md).
enum class NetTransport { ib, roce, tcp };
// A CPU as NCCL's topology code classifies it (src/graph/topo.h, topo.cc). The vendor sets
// NCCL's network overhead per step and its multi-node LL bandwidth row; the class sets the
// bandwidth NCCL assumes between two CPUs (NUMA nodes) of a host, whatever the cable: Intel
// Broadwell 6, Skylake 10, Sapphire Rapids 22, Emerald Rapids 40 GB/s. NCCL releases through
// 2.30 take every AMD CPU at 16 GB/s (`amd`); NCCL's per-generation detection (commit
// 2f1c174c, on its development branch after 2.30.7) takes Zen 3/4 at 24 (`amd_zen34`), Zen 5
// at 32 (`amd_zen5`) and Zen 1/2 at 16 (`amd`).
enum class NcclCpu { intel_bdw, intel_skl, intel_srp, intel_erp, amd, amd_zen34, amd_zen5 };

std::string_view to_string(DeviceKind kind);
std::string_view to_string(LinkKind kind);
std::string_view to_string(SwitchReduction reduction);
// Throw colltune::Error listing the valid names.
DeviceKind parse_device_kind(std::string_view name);
LinkKind parse_link_kind(std::string_view name);
SwitchReduction parse_switch_reduction(std::string_view name);
std::string_view to_string(NetTransport transport);
NetTransport parse_net_transport(std::string_view name);
std::string_view to_string(NcclCpu cpu);
NcclCpu parse_nccl_cpu(std::string_view name);
// The class NCCL releases (through 2.30) give an x86 CPU of this CPUID vendor, family and model
// (nullopt: a vendor NCCL's model here does not class): Intel by family 6's model (0x55
// Skylake, 0x8F Sapphire Rapids, 0xCF Emerald Rapids, else Broadwell), every AMD `amd`.
std::optional<NcclCpu> nccl_cpu_of_cpuid(std::string_view vendor, int family, int model);
// The class the NCCL build that wrote a topology dump gives its x86 CPU, from the dump's
// `vendor`, `familyid` and `modelid` (nullopt: a vendor NCCL's model here does not class).
// Intel: family 6 by model (0x55 Skylake, 0x8F Sapphire Rapids, 0xCF Emerald Rapids, else
// Broadwell). AMD: a build with per-generation detection also writes the family as CPUID
// defines it (0x19 = 25 for Zen 3/4, 0x1A = 26 for Zen 5); earlier builds add the extended
// family shifted by 4 bits (175 for Zen 3/4) and take every AMD CPU at 16 GB/s. So a family
// above 30 (no such CPUID family exists) was written by an earlier build: `amd`.
std::optional<NcclCpu> nccl_cpu_of_dump(std::string_view vendor, int family_id, int model_id);

struct Device {
  std::string id;          // unique, e.g. "host0/gpu3", "spine1"
  DeviceKind kind = DeviceKind::gpu;
  int host = -1;           // index into Topology hosts; -1 for devices outside any host (switches)
  double reduce_gbps = 0;  // gpu/cpu: rate at which it reduces incoming data (GB/s of input); 0 = n/a
  // gpu: compute capability x 10 + minor, e.g. 70 V100, 80 A100, 90 H100, 100 B200; 0 = unknown.
  // NCCL's model picks its per-generation constants by it.
  int compute_capability = 0;
  // nvswitch (nvls) or net_switch (sharp): the reduction it performs in the switch.
  SwitchReduction switch_reduction = SwitchReduction::none;
  // cpu: the class NCCL's model gives it (NcclCpu); none = the model's default.
  std::optional<NcclCpu> nccl_cpu = std::nullopt;
};

struct Link {
  LinkKind kind = LinkKind::net;
  double bandwidth_gbps = 0;  // this direction only, GB/s (1e9 B/s)
  double latency_us = 0;      // per traversal of this link
  std::size_t index = 0;      // dense id 0..num_links()-1, stable for the topology's lifetime
};

// A device: its index 0 .. num_devices()-1 (the graph's vertex, graph.hpp).
using VertexId = std::size_t;
// No device (Boost.Graph's null_vertex()).
inline constexpr VertexId kNoDevice = static_cast<VertexId>(-1);

// A route from one rank's device to another's.
struct Path {
  std::vector<std::size_t> links;  // link indices in order of traversal; empty when src == dst
  double bottleneck_gbps = 0;      // min bandwidth along the path (infinity when empty)
  double latency_us = 0;           // sum of link latencies
};

struct NicPlan;     // a rank's NICs (internal: route_cache.hpp)
struct GraphStore;  // the Boost.Graph and the link table (graph.hpp)

class Topology {
 public:
  Topology();
  Topology(const Topology& other);
  Topology& operator=(const Topology& other);
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  ~Topology();

  // ---- construction (no validation here; call validate() when done) ----
  int add_host(std::string name);
  VertexId add_device(Device device);
  // One direction. Returns the link index.
  std::size_t add_link(VertexId from, VertexId to, LinkKind kind, double gbps, double latency_us);
  // Both directions with the same figures.
  void add_duplex_link(VertexId a, VertexId b, LinkKind kind, double gbps, double latency_us);
  void map_rank(int rank, VertexId device);
  // Changes an existing link's figures (calibration); routes are recomputed on next use.
  void set_link_figures(std::size_t index, double gbps, double latency_us);
  void set_reduce_gbps(VertexId device, double gbps);

  // ---- inspection ----
  std::string name;         // where it came from: preset spec or file name
  std::string description;  // free text (preset documentation, file description)
  // The "calibration" object of a calibrated topology JSON (colltune calibrate: fitted values,
  // sources, residuals), as JSON text; empty when the topology was not calibrated. This module
  // keeps it with the machine and writes it back; it does not interpret it.
  std::string calibration;
  // The GPU generation of the ranks' devices, a name of topo::gpu_table() ("p100", ...); empty
  // = unspecified (gpu_of() then goes by compute capability). The step model times compute with it.
  std::string gpu;
  NetTransport transport = NetTransport::ib;  // what the `net` links run over
  std::size_t num_devices() const;
  std::size_t num_links() const;
  const Device& device(VertexId v) const;
  // A link's figures on this machine: the graph's, with the bandwidth times its kind's factor
  // and the latency times the latency factor where this is a scaled copy (with_scaled_bandwidth,
  // with_scaled_latency).
  Link link(std::size_t index) const;
  // The bandwidth and the latency of a link of the graph (graph.hpp) on this machine, as link()
  // gives them.
  double bandwidth_of(const Link& link) const;
  double latency_of(const Link& link) const;
  // A device's reduction rate on this machine: device(v).reduce_gbps, times the factor of a
  // with_scaled_reduction copy. Read rates with this, not with device().
  double reduce_gbps_of(VertexId v) const;
  VertexId link_source(std::size_t index) const;
  VertexId link_target(std::size_t index) const;
  // The links leaving (entering) a device, as link indices, in the order they were added.
  std::vector<std::size_t> out_links(VertexId v) const;
  std::vector<std::size_t> in_links(VertexId v) const;
  // The Boost.Graph itself (graph.hpp: graph_of()), for graph algorithms.
  const GraphStore& graph_store() const { return *store_; }
  std::optional<VertexId> find_device(std::string_view id) const;

  int num_hosts() const { return static_cast<int>(hosts_.size()); }
  const std::string& host_name(int host) const { return hosts_.at(static_cast<std::size_t>(host)); }
  int num_ranks() const { return static_cast<int>(rank_device_.size()); }
  VertexId device_of_rank(int rank) const;
  int host_of_rank(int rank) const;
  // Ranks grouped by host (the only thing collectives/ sees of the machine).
  RankLayout rank_layout() const;

  // ---- queries ----
  // The route the simulator uses from one rank to another for a message on `channel` (>= 0;
  // coll::Op::channel: NCCL runs several channels at once, each leaving a server through the NIC
  // it assigns to that channel).
  //  - Between ranks on one host, or where either rank's host has no NIC (nic_for_channel()
  //    gives none: flat, torus and other machines whose hosts link directly), the minimum-latency
  //    path over the whole graph (an exact bidirectional search that returns Dijkstra's answer),
  //    ties broken toward fewer hops, then toward lower link indices (so every search picks the
  //    same route). The channel does not matter there.
  //  - Between hosts with NICs: the source GPU's path to its channel NIC inside its host, then
  //    that NIC's path to the destination's channel NIC through devices outside every host (the
  //    network), then the path from that NIC to the destination GPU inside its host, each leg
  //    the minimum-latency path of its region with the same tie rule. Where a leg has no path in
  //    its region (a NIC with no way to the other through the network), the route is the
  //    minimum-latency path as above.
  // Cached per rank pair and NIC pair (channels that share both NICs share one Path); safe to
  // call from several threads. Throws colltune::Error for a bad rank, a negative channel, or
  // when no path exists.
  const Path& route(int src_rank, int dst_rank, int channel = 0) const;
  // The routes from one rank to every rank (index = destination rank) on `channel`, the same
  // paths route() returns: one full Dijkstra run over the graph and, where the source has NICs,
  // one over the network from its channel NIC, with the NIC legs inside hosts as route() has
  // them. Only those legs are cached: meant for whole-machine scans.
  std::vector<Path> routes_from(int src_rank, int channel = 0) const;
  // The minimum-latency route between two devices (e.g. a GPU and its NIC) over the whole graph,
  // with route()'s tie rule. Not cached.
  Path device_route(VertexId from, VertexId to) const;
  // The NICs NCCL counts as local to a rank's GPU (ncclTopoGetLocal), in device order: the
  // NICs of its host (devices of kind nic with a link to or from a device outside the host)
  // with the best path from the GPU inside the host, best meaning NCCL's "highest path
  // bandwidth, then closest path type": here the widest bottleneck, then the fewest hops among
  // paths that wide. Empty when the rank's device is outside every host or no NIC of the host
  // is reachable from it inside the host.
  std::vector<VertexId> local_nics(int rank) const;
  // The NIC the rank's messages to other hosts leave and enter through on `channel` (>= 0),
  // NCCL's rule (ncclTopoGetLocalNet, NCCL_NETDEVS_POLICY=AUTO): with L = local_nics(rank),
  // G = how many of the host's GPUs have the best path from L[0] (the GPUs sharing it, at least
  // one), "dev" = the index of the rank's device among the host's rank devices in rank order
  // (NCCL's CUDA device index), start = dev % G with its low log2(|L|) bits reversed when |L|
  // is a power of two, and nets per GPU = ceil(|L| / G): the NIC is
  // L[(start + channel % nets_per_gpu) % |L|]. kNoDevice when L is empty.
  VertexId nic_for_channel(int rank, int channel) const;
  // Largest bottleneck bandwidth over all paths between the ranks (widest path), GB/s.
  double widest_bandwidth(int src_rank, int dst_rank) const;
  // Checks: at least one rank, ranks 0..n-1 each mapped exactly once to an existing device,
  // unique device ids, positive finite bandwidths, non-negative latencies, every rank's device
  // reaches every other rank's device. Throws colltune::Error naming the first problem.
  void validate() const;

  // A copy with every link of `kind` scaled by `factor` in bandwidth ("what if 4x NIC?"). The
  // copy shares the graph and applies the factors where a link's bandwidth is read (link(),
  // bandwidth_of()): copying a 4,096-GPU graph and freeing it again cost more than pricing on it.
  Topology with_scaled_bandwidth(LinkKind kind, double factor) const;
  // The same for every link of any of `kinds`, in one copy.
  Topology with_scaled_bandwidth(const std::vector<LinkKind>& kinds, double factor) const;
  // A copy with every link's bandwidth times its kind's factor (factors[LinkKind's value]).
  Topology with_scaled_bandwidth(const std::array<double, kLinkKinds>& factors) const;
  // A copy with every link's latency times `factor` (> 0, finite): "what if every hop's alpha
  // were halved?". Where every link's latency in integer picoseconds (a route's cost) is exactly
  // `factor` times what it was (0.5 on the presets' latencies), every route search orders paths
  // as before and picks the same ones: the copy then shares the graph and the paths found so
  // far, and reads each latency times the factor (link(), latency_of()). Elsewhere it writes
  // the latencies into a graph of its own, and searches its paths again.
  Topology with_scaled_latency(double factor) const;
  // A copy with every device's reduction rate times `factor` (> 0, finite), read where a rate
  // is read (reduce_gbps_of()); the graph and the paths shared.
  Topology with_scaled_reduction(double factor) const;

 private:
  // Shared by copies until one of them changes it (own_store()); never null.
  std::shared_ptr<GraphStore> store_;
  // Per link kind, the factor a link's stored bandwidth is read with (with_scaled_bandwidth);
  // `scaled_` is false while every factor is 1.
  std::array<double, kLinkKinds> bandwidth_scale_{1.0, 1.0, 1.0, 1.0, 1.0};
  bool scaled_ = false;
  // The factors a link's latency and a device's reduction rate are read with (1: none). A
  // latency factor other than 1 scales every link's cost in picoseconds exactly
  // (with_scaled_latency), so the graph's own latencies order paths as the copy's do.
  double latency_scale_ = 1.0;
  double reduce_scale_ = 1.0;
  std::vector<std::string> hosts_;
  std::vector<VertexId> rank_device_;      // rank -> device; unmapped slots hold kNoDevice
  std::vector<int> rank_map_count_;        // rank -> times map_rank() named it (validate() wants 1)
  struct RouteCache;                       // lazily filled route cache (mutex-protected)
  std::unique_ptr<RouteCache> cache_;      // never null: every constructor makes one
  // The paths route()'s searches found (NIC routes' legs, leg(); direct routes' paths),
  // shared by copies while their graphs have the same devices, links, hosts and latencies: each
  // is the minimum-latency path of its region, whatever the bandwidths (with_scaled_bandwidth)
  // or reduction rates. A change to any of those gives this topology a fresh one
  // (invalidate_routes()). Never null.
  struct LegCache;
  std::shared_ptr<LegCache> legs_;

  RouteCache& cache() const { return *cache_; }  // every constructor and assignment makes one
  // The store, for a change: a copy of its own first where it is shared, with the bandwidth
  // and latency factors written into the copy's links and the reduction factor into its devices.
  GraphStore& own_store();
  // nic_routing.cpp; each expects cache().mutex held.
  const NicPlan& nic_plan(int rank) const;
  const std::optional<Path>& leg(VertexId from, VertexId to) const;
  // Appends the links of the network leg between two NICs of different hosts; false where it
  // has no path.
  bool append_network_leg(VertexId from, VertexId to, std::vector<std::size_t>& links) const;
  const std::optional<std::vector<std::size_t>>& between_switches(VertexId from, VertexId to) const;
  // Ranks on different hosts; nullptr where their hosts' NICs give no route.
  const Path* nic_route(int src_rank, int dst_rank, int channel) const;
  const Path& direct_route(int src_rank, int dst_rank) const;            // routing.cpp
  std::optional<Path> shared_direct_route(VertexId from, VertexId to) const;  // routing.cpp
  void invalidate_routes();
  // The routes between ranks and what they are built from per rank (a rank's NICs), not the
  // paths between devices (legs_): for a change of the rank map alone.
  void forget_rank_routes();
  void clear_rank_routes();  // forget_rank_routes()'s work, cache().mutex held
  void check_rank(int rank, const char* what) const;
};

// The machine plus `servers` server hosts on its network (server_hosts.cpp), for the
// parameter-server baseline: server s is a host of its own ("ps-server<s>") with one CPU that
// reduces at `reduce_gbps` (0: no cost) and one NIC, which joins the network where host
// s % hosts's first NIC does, with that NIC's network link figures (the topology's NIC rate).
// Its rank is num_ranks() + s. Throws colltune::Error when servers < 1 or no host has a link
// to a network switch (hosts linked directly, one host without NICs).
Topology with_server_hosts(const Topology& topology, int servers, double reduce_gbps);

// Whether `d` reduces in the switch: an NVSwitch with NVLink SHARP (switch_reduction nvls) or a
// network switch with SHARP (sharp). validate() allows each only on its kind of switch.
bool reduces_in_switch(const Device& d);

// The device of `host` that is an NVSwitch reducing in the switch (switch_reduction nvls), the
// first where there are several; nullopt where the host has none (dgx-a100's does not reduce).
std::optional<VertexId> nvls_switch_of(const Topology& topology, int host);

// The machine plus one rank on every host's NVSwitch, for nccl_nvls and nccl_nvls_tree
// (nvls_switch.cpp): for each host that holds ranks, in the order of the hosts of ranks 0, 1, ...,
// rank num_ranks() + i maps to the i-th such host's first device of kind nvswitch with
// switch_reduction nvls, keeping its reduce_gbps (a preset sets none: 0, it reduces at line rate,
// in the data path). Throws colltune::Error "no NVSwitch that reduces in the switch
// (switch_reduction nvls)" naming the host where a host has none (dgx-a100's does not reduce).
Topology with_nvls_switch(const Topology& topology);

// The machine plus one rank on its network's SHARP switch, for nccl_collnet (nvls_switch.cpp):
// rank num_ranks() maps to the net_switch with switch_reduction sharp that has the most links to
// other such switches (the spine of a leaf/spine network; the leaf where there is one), ties to
// the first. Throws colltune::Error "no network switch that reduces in the switch
// (switch_reduction sharp; a preset's sharp=1)" where there is none.
Topology with_sharp_switch(const Topology& topology);

// Loads SPEC: a preset spec ("dgx-h100:nodes=4"), a topology JSON file (*.json) or an NCCL
// topology XML dump (*.xml). The result is validated. Throws colltune::Error.
Topology load_topology(const std::string& spec);

}  // namespace colltune::topo
