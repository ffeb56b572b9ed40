#pragma once
// The reference pricer: the analytical cost model's machine model, defined once, for any
// schedule. The registry's closed-form cost hints are shortcuts of it (tests hold every hint
// to it on every algorithm and machine shape); where an algorithm has no closed form (the
// double binary tree's pipeline, hierarchical over it), the cost model prices the schedule
// with it directly.
//
// The machine model, exactly (alpha, beta per level, gamma from coll::LevelCosts):
// - A message between ranks of one host costs alpha_intra and bytes * beta_intra of port time,
//   across hosts alpha_inter and bytes * beta_inter.
// - A rank runs its steps in order; step 0 starts at t = 0, each later step when the previous
//   one ends. Messages pair as in schedule.hpp (the k-th send a->b with the k-th receive at b
//   from a) and a message begins when both its sender and its receiver have started the steps
//   holding it (rendezvous).
// - Each rank has an injection port (its sends) and an ejection port (its receives); with
//   LevelCosts::separate_level_ports, one pair per level (NVLink and NIC are different links).
//   A port serves the messages transmitting through it by processor sharing: each of the m
//   messages in service gets 1/m of the port, so a message alone takes bytes * beta, and one
//   that begins while others are in service shares with them only what is left.
// - A helper that is a switch reducing in the network (LevelCosts::switch_helpers: nccl_nvls's
//   NVSwitch) has a link to every peer, so it has a port pair per peer instead of one, and
//   reduces at switch_gamma_us_per_byte; its messages cost switch_alpha_us (one link).
// - An inter-host message also passes its sender host's egress and its receiver host's ingress
//   (LevelCosts::beta_host: the hosts' NICs together), each shared the same way by every
//   inter-host message of that host in service: eight GPUs behind one NIC share it.
// - A message between hosts of different network groups (LevelCosts::host_group: the hosts
//   behind one leaf switch of an oversubscribed fat-tree, one rack on a shared backbone) passes
//   its sender group's trunk egress and its receiver group's trunk ingress too
//   (LevelCosts::beta_group), shared the same way by every such message of the group.
// - A message arrives alpha after it has passed all of its ports. The send and the receive
//   complete at the arrival.
// - A step ends when all of its messages have arrived and its reduced blocks are combined: one
//   after another in arrival order, from the step's start, each costing bytes * gamma.
#include <cstddef>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::sim {

// Completion time (us) of the last rank of `source`, whose blocks hold `elem_size`-byte
// elements, placed on hosts by `layout`. Throws colltune::Error when the schedule has more
// ranks than the layout, pairs blocks of different sizes, or deadlocks.
double price_schedule(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size,
                      const coll::LevelCosts& costs);

// The same, with every op its own message and every rank run. price_schedule takes three
// shortcuts, with the same numbers (sim/analytic/src/pricer_engine.hpp):
// - it moves the copies of a message (a step's ops of one kind to one peer with blocks of one
//   size, in a row among its ops to that peer: NVLS's shards to the switch, nccl_tree's two
//   trees along one chain) as one message that counts as that many wherever it shares a port;
// - where turning every host's ranks by one place maps the schedule onto itself (nccl_tree's
//   chains, NCCL's rotated orders), it runs each host's first rank only, the others being that
//   rank turned (folded_pricer_runs counts those runs);
// - where reading the ranks from the other end maps the schedule and the machine onto
//   themselves (dbtree on an even rank and element count), it runs the lower half of the ranks
//   only, the others being their mirrors (mirrored_pricer_runs counts those runs).
// For tests.
double price_schedule_op_by_op(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size,
                               const coll::LevelCosts& costs);

// price_schedule's runs folded to each host's first rank so far (every thread's).
std::size_t folded_pricer_runs();

// price_schedule's runs that kept the lower half of the ranks (the mirror) so far (every thread's).
std::size_t mirrored_pricer_runs();

}  // namespace colltune::sim
