#pragma once
// Contention in the analytic model beyond a host's NICs: the network's groups of hosts that share
// one trunk (coll::LevelCosts::host_group, beta_group_us_per_byte; the pricer's group ports,
// pricer.hpp).
//
// A group is the hosts whose links out of the host all reach one switch (a leaf of a fat-tree, a
// rack's top switch); its trunk is that switch's links to the rest of the network (its spine
// uplinks, the backbone), each direction summed: one link class whose bandwidth the messages
// crossing it share. The model takes max-min fair sharing on these link classes as processor
// sharing of the narrowest group's trunk among the messages crossing it (as it takes a host's
// NICs), not on the individual links: a message's share is its trunk over the number crossing
// with it, whichever links of the trunk the routes take and whatever limits those messages
// elsewhere. Groups are formed only where some trunk is narrower than the hosts behind it (an
// oversubscribed tree): elsewhere the trunk never binds, and nothing changes.
#include <vector>

#include "colltune/common/rank_layout.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim::detail {

struct NetworkGroups {
  std::vector<int> host_group;  // per host of the layout; empty: no groups
  double beta_us_per_byte = 0;  // 1 / the narrowest trunk, weaker direction
};

// The groups of `layout`'s hosts (the first ranks of `topology`), as above.
NetworkGroups network_groups(const topo::Topology& topology, const RankLayout& layout);

// The hosts of `layout` that reach the same switches through their links out of the host (one
// leaf switch; the same leaf of every rail): per host of the layout, its group, numbered in
// order of first host. A host with no such link is a group of its own. Empty where every host
// is in one group or every group has one host: no route between hosts is then known to be
// shorter than another (coll::LevelCosts::near_group).
std::vector<int> near_groups(const topo::Topology& topology, const RankLayout& layout);

}  // namespace colltune::sim::detail
