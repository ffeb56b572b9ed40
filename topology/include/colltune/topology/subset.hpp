#pragma once
// Parts of a machine: a host named by the user, and the machine with some hosts taken out
// (what is left after a host fails, for `step --fail`).
#include <string>
#include <string_view>
#include <vector>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

// The host `who` names: a host name of the topology ("node2") or a host index ("2").
// -1 when the topology has no such host.
int find_host(const Topology& topology, std::string_view who);

// The ranks among 0..nranks-1 that `who` names on the command line (--slow, --uneven, --late):
// a rank number, or every rank of the host of that name. Throws colltune::Error
// "<what>: rank W is not in 0..nranks-1" for a rank number out of range (however many digits);
// empty when no host of that name has a rank among them (the caller says so in its own words).
std::vector<int> ranks_named(const Topology& topology, std::string_view who, int nranks, const std::string& what);

// A copy of `topology` without the given hosts (indices; duplicates allowed): their devices,
// every link touching those devices and their ranks are gone. Devices outside every host (the
// network's switches) stay, even one left without links. The remaining ranks keep their order
// and are renumbered densely from 0; the remaining hosts keep their names and order. The result
// is validated. Throws colltune::Error for a host index out of range or when no host is left.
Topology without_hosts(const Topology& topology, const std::vector<int>& hosts);

}  // namespace colltune::topo
