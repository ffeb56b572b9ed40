#pragma once
// colltune's topology JSON format ("format": "colltune-topology", "version": 2; version 1 files are read too), documented in
// docs/topology-format.md. Saving then loading gives the same graph: the same hosts, devices
// (in order), links (in index order, with the same figures) and rank mapping.
#include <filesystem>
#include <string>
#include <string_view>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

inline constexpr std::string_view kJsonFormatName = "colltune-topology";
// Version 2 added the optional device keys compute_capability and switch_reduction; version 1
// files are still read.
inline constexpr int kJsonFormatVersion = 2;

// The topology as JSON text (2-space indent, trailing newline). A link followed by its exact
// reverse (same kind and figures) is written once with "duplex": true.
std::string to_json(const Topology& topology);

// Parses JSON text; `source` names the file in error messages ("FILE: FIELD: problem").
// Checks every field (kinds, references, positive bandwidths, each rank listed once) but does
// not run Topology::validate(); load_topology() does.
Topology topology_from_json(std::string_view text, const std::string& source);

// Reads and parses a file (not validated).
Topology load_topology_json(const std::filesystem::path& path);

}  // namespace colltune::topo
