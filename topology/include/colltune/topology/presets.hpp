#pragma once
// Built-in machines, spelled "name" or "name:key=value,key=value" (e.g. "dgx-h100:nodes=4",
// "fat-tree:nodes=512,gpus=8,oversub=2", "torus:dims=4x4x4", "flat:ranks=16,alpha=5,bw=12.5").
#include <string>
#include <string_view>
#include <vector>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

struct PresetParam {
  std::string key;
  std::string default_value;
  std::string help;
};

struct PresetInfo {
  std::string name;
  std::string summary;  // one line: what machine it is and where its numbers come from
  std::vector<PresetParam> params;
};

// Every preset with its parameters and defaults.
const std::vector<PresetInfo>& preset_catalog();

// True when `spec` names a preset ("name" or "name:..."), whether or not its parameters parse.
bool is_preset_spec(std::string_view spec);

// Builds the preset (not yet validated; load_topology() validates). Unknown preset, unknown
// key or a bad value: colltune::Error listing the valid names.
Topology make_preset(std::string_view spec);

}  // namespace colltune::topo
