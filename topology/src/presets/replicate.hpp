#pragma once
// Internal: a cluster of copies of the one server a topology file describes (replicate.cpp).
#include <string>
#include <string_view>

#include "colltune/topology/topology.hpp"

namespace colltune::topo::detail {

// `params` as a preset's ("nodes=16,nic_gbit=400"; keys nodes, nic_gbit, leaf_ports, oversub,
// sharp). Throws colltune::Error when the file holds more than one host, a parameter is
// unknown or out of range, or several nodes are asked of a server without a NIC to the network.
Topology replicate_server(const Topology& server, const std::string& file, std::string_view params);

}  // namespace colltune::topo::detail
