#pragma once
// One table of algorithms (docs/design.md: register an algorithm once). Each entry builds a
// Schedule, says whether it applies to a layout ("not applicable" is an answer, not an
// exception), and carries a closed-form cost hint the analytical model prices it with.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/collectives/schedule.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::coll {

class StepSource;  // step_source.hpp

struct AlgoOptions {
  // Pipelining: blocks are cut into chunks of at most this many elements (0 = one chunk).
  std::size_t chunk_elems = 0;
  // hierarchical*: the algorithm used across hosts ("ring", "rhd", "tree", "dbtree").
  std::string inner = "ring";
  // nccl_ring: per channel, the local ranks of a host (0..L-1) in the order that channel's ring
  // visits them, the same on every host (NCCL's ChannelPlan::orders; the simulator passes
  // NCCL's own, sim::nccl_channel_orders). Empty: L channels, channel c entering every host at
  // local rank c+1 and leaving it from local rank c (algorithms/nccl_ring.cpp).
  std::vector<std::vector<int>> channel_orders;
  // nccl_tree: the channels' chains are channel_orders (or the same default), and a host's links
  // to its child hosts leave from the chain's head (NCCL's TREE pattern, which NCCL's search
  // falls back to on sm90+ and uses with one GPU per host) instead of one child on the head and
  // the other on the second rank (BALANCED_TREE, NCCL's first choice). The simulator passes
  // NCCL's tree channels (sim::CostModel::options_for).
  bool nccl_simple_tree = false;
  // ps (parameter server, algorithms/ps.cpp): the number of servers S. 0: one server per host,
  // colocated. S > 0 dedicated: the layout's last S ranks are the servers, one per host of its
  // own (Schedule::helpers = S); with ps_colocated, server s is the first rank of host s.
  int ps_servers = 0;
  bool ps_colocated = false;
};

struct Algorithm;

// Per-level link costs and reduction cost, as the analytical model derives them from a
// topology. alpha: us per message; beta: us per byte on the wire; gamma: us per byte reduced.
struct LevelCosts {
  double alpha_intra_us = 0;
  double beta_intra_us_per_byte = 0;
  double alpha_inter_us = 0;
  double beta_inter_us_per_byte = 0;
  double gamma_us_per_byte = 0;
  // A rank's messages inside its host and to other hosts leave (and arrive) through different
  // links (NVLink vs NIC), so they do not share a port; false when one link carries both (flat).
  bool separate_level_ports = false;
  // us per byte through a host's links to other hosts all together (its NICs): every message
  // leaving a host shares the host's egress, every message arriving its ingress, so eight GPUs
  // behind one NIC share that NIC. 0 when a host's external links add nothing to the routes'
  // own bottlenecks (no such sharing, or one rank per host).
  double beta_host_us_per_byte = 0;
  // The network's groups of hosts behind one shared trunk (a leaf switch's uplinks to its spine,
  // a rack's backbone link): host_group[h] is host h's group, and every message between hosts of
  // different groups shares its sender's group egress and its receiver's group ingress with every
  // such message of the group, at beta_group_us_per_byte (1 / the narrowest group's trunk, in the
  // weaker direction). Empty, or 0: no trunk narrower than the hosts behind it.
  std::vector<int> host_group;
  double beta_group_us_per_byte = 0;
  // Hosts behind the same switches (one leaf switch, or the same leaves of every rail), where the
  // routes between them are shorter than the worst inter-host route, which crosses the spine:
  // near_group[h] is host h's group, and a message between two hosts of one group takes
  // alpha_near_us instead of alpha_inter_us. Empty: every inter-host message takes
  // alpha_inter_us (one group, or no shorter route).
  std::vector<int> near_group;
  double alpha_near_us = 0;
  // The schedule's helpers are a switch that reduces in the network (nccl_nvls's NVSwitch):
  // a helper has a port pair per peer (one link to every GPU) instead of one, and reduces at
  // switch_gamma_us_per_byte (0: at line rate, no time beyond the transfer). The cost model sets
  // both where the machine's last rank is such a switch (topo::with_nvls_switch).
  // A message to or from the switch crosses one link, not a GPU-switch-GPU route: its alpha.
  bool switch_helpers = false;
  double switch_gamma_us_per_byte = 0;
  double switch_alpha_us = 0;
  // Prices a part of a schedule without a closed form (hierarchical's inner algorithm across
  // hosts) on the costs given, usually these with some figure adjusted. The cost model sets it
  // (sim::hint_or_price); left empty, hints whose part has no closed form answer nullopt.
  std::function<double(const Algorithm&, const RankLayout&, std::size_t bytes, std::size_t elem_size,
                       const AlgoOptions&, const LevelCosts&)>
      price;
};

// The latency of a message between ranks on hosts `from` and `to` (hosts of the layout; two
// different hosts): alpha_near_us inside one near group, else alpha_inter_us.
inline double inter_alpha_us(const LevelCosts& costs, int from, int to) {
  const auto& g = costs.near_group;
  const auto a = static_cast<std::size_t>(from), b = static_cast<std::size_t>(to);
  if (a >= g.size() || b >= g.size() || g[a] != g[b]) return costs.alpha_inter_us;
  return costs.alpha_near_us;
}

// How an algorithm places its work on the machine: over all ranks alike, or in phases inside
// each host and across hosts (Horovod's hierarchical allreduce and its relatives).
enum class Placement : std::uint8_t { flat, per_host };
std::string_view to_string(Placement placement);

// The runtimes a user trains with, as colltune predicts and tunes them: colltune's own
// executors (threads, MPI, GPU transports), NCCL alone, and Horovod over NCCL.
// ps: parameter-server data parallelism as TensorFlow and MXNet run it (the `ps` schedule), a
// baseline to compare allreduce with.
enum class Runtime : std::uint8_t { colltune, nccl, horovod, ps };
std::string_view to_string(Runtime runtime);
// "colltune" | "nccl" | "horovod" | "ps"; throws colltune::Error listing them.
Runtime parse_runtime(std::string_view name);

// A set of runtimes (a registry fact: which runtimes can run an algorithm).
class RuntimeSet {
 public:
  constexpr RuntimeSet() = default;
  constexpr RuntimeSet(std::initializer_list<Runtime> runtimes) {
    for (Runtime r : runtimes) bits_ |= bit(r);
  }
  constexpr bool contains(Runtime r) const { return (bits_ & bit(r)) != 0; }

 private:
  static constexpr unsigned bit(Runtime r) { return 1u << static_cast<unsigned>(r); }
  unsigned bits_ = 0;
};

struct Algorithm {
  std::string id;           // "ring", "tree", "dbtree", "rhd", "hierarchical", ...
  std::string name;         // human name
  std::string description;  // one line: steps and bytes on the wire
  Collective collective = Collective::allreduce;
  // ---- facts other modules read (never inferred from the id) ----
  Placement placement = Placement::flat;
  // NCCL's name for the algorithm (its tuner CSV spelling: ring, tree, nvls, ...) when this
  // schedule is what NCCL runs under that name; empty when NCCL has no such algorithm.
  std::string nccl_name;
  RuntimeSet runtimes;  // the runtimes that can run it
  // A baseline to compare with (ps), not an allreduce colltune would choose: "auto" (simulate,
  // step, tune) never picks it.
  bool baseline_only = false;
  // Its channels are NCCL's ring channels on the machine: where a request gives no
  // AlgoOptions::channel_orders, the simulator passes NCCL's (sim::CostModel::options_for).
  bool nccl_ring_channels = false;
  // Likewise for NCCL's tree channels (their chains and pattern: AlgoOptions::nccl_simple_tree).
  bool nccl_tree_channels = false;
  // Its last ranks are switches that reduce in the network (nccl_nvls, nccl_nvls_tree: every
  // host's NVSwitch; nccl_collnet: the SHARP switch), not GPUs: the simulator runs it on the
  // machine with those ranks added (topo::with_nvls_switch, topo::with_sharp_switch).
  // auto, the tuner and step price algorithms on the machine's own ranks, so they skip it.
  bool in_switch = false;
  // With in_switch: the switch is the network's (SHARP in the leaf/spine: nccl_collnet, one rank
  // added by topo::with_sharp_switch), not every host's NVSwitch (topo::with_nvls_switch).
  bool in_network_switch = false;
  // The longest chain of reductions an element passes through (fp16 rounding accumulates along
  // it): p-1 around a ring, the tree height in a tree.
  std::function<int(const RankLayout&, const AlgoOptions&)> summation_depth;
  // ---- behaviour ----
  // nullopt when applicable, else the reason it is not.
  std::function<std::optional<std::string>(const RankLayout&, std::size_t count, const AlgoOptions&)> not_applicable;
  // The schedule (schedule.hpp), read step by step (step_source.hpp): generated one step at a
  // time where its stored form grows too large at scale (the ring family), else built and held.
  std::function<std::unique_ptr<StepSource>(const RankLayout&, std::size_t count, const AlgoOptions&)> schedule;
  // Closed-form cost hint: the predicted time in us for `bytes` bytes of `elem_size`-byte
  // elements, ranks placed by layout, under the machine model of sim/pricer.hpp, of which it is
  // a checked shortcut. Empty, or nullopt for some options, where there is no closed form (the
  // double binary tree's pipeline): the cost model then prices the schedule itself.
  std::function<std::optional<double>(const RankLayout&, std::size_t bytes, std::size_t elem_size, const AlgoOptions&,
                                      const LevelCosts&)>
      cost;
  // Chunk-pipelined schedules without a closed form: the number of pieces the buffer is cut
  // into before chunking (dbtree: its 2 halves), so that pieces x chunk_elems fewer elements
  // make one pipeline round fewer in every piece. The cost model prices a long pipeline from a
  // short one with it (sim::price_pipeline). Empty where that does not hold.
  std::function<std::size_t(const RankLayout&, const AlgoOptions&)> pipeline_pieces;

  bool runs_on(Runtime runtime) const { return runtimes.contains(runtime); }
};

const std::vector<Algorithm>& algorithms();
// Throws colltune::Error naming the id and listing the known ones.
const Algorithm& find_algorithm(std::string_view id);
// The algorithm, after checking it applies to the layout; throws colltune::Error naming an
// unknown id, an empty layout or the reason it is not applicable.
const Algorithm& applicable_algorithm(std::string_view id, const RankLayout& layout, std::size_t count,
                                      const AlgoOptions& options);
// The stored schedule, after checking applicability (materialize(open_schedule(...)), see
// step_source.hpp); throws colltune::Error with the reason if not applicable.
Schedule build_schedule(std::string_view id, const RankLayout& layout, std::size_t count,
                        const AlgoOptions& options = {});

}  // namespace colltune::coll
