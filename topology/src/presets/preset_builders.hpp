#pragma once
// Internal: one builder per preset; each reads its parameters and returns the machine.
#include "colltune/topology/topology.hpp"
#include "presets/preset_params.hpp"

namespace colltune::topo::detail {

Topology build_dgx_h100(const PresetParams& p);
Topology build_dgx_a100(const PresetParams& p);
Topology build_dgx1_v100(const PresetParams& p);
Topology build_pcie_box(const PresetParams& p);
Topology build_fat_tree(const PresetParams& p);
Topology build_torus(const PresetParams& p);
Topology build_flat(const PresetParams& p);

}  // namespace colltune::topo::detail
