#pragma once
// Import of NCCL's topology XML (the file NCCL writes to NCCL_TOPO_DUMP_FILE, and reads from
// NCCL_TOPO_FILE): <system> / <cpu> / <pci> / <gpu> / <nvlink> / <nic> / <net>.
//
// What becomes what:
//  - <cpu>: a cpu device; CPUs of one host (same host_hash attribute, or none) are joined by
//    sys links. Each distinct host_hash is a host ("host0", "host1", ... in file order).
//  - <pci> with <pci> children (a bridge / PCIe switch): a pcie_switch device. Its link to the
//    parent gets link_width x link_speed ("16.0 GT/s PCIe" = Gen4); an unknown speed or width
//    inherits the parent link's bandwidth. <pci> elements holding neither bridge, GPU nor NIC
//    (NVMe drives, ...) are left out.
//  - <gpu> (inside its <pci>): a gpu device linked to the parent by that <pci>'s PCIe rate,
//    mapped to its "rank" attribute (document order when no GPU has one).
//  - <nvlink target count tclass>: count x the per-link rate of the GPU's generation ("sm"
//    attribute). Targets of class 0x068000 are NVSwitch ports: like NCCL, all of a host's
//    NVSwitches become one nvswitch vertex, linked to each GPU at the sum of its switch links
//    (18 x 25 = 450 GB/s per direction for an H100). A GPU target gets a direct link in the
//    listed direction (its own element lists the reverse); class 0x060400 is a CPU (POWER9).
//  - <nic><net name speed .../></nic>: one nic device per <net>, linked to the <pci> parent and
//    to a "fabric" network switch at speed Mb/s / 8000 GB/s.
// Figures and their sources: topology/src/hardware/hw_figures.hpp.
#include <filesystem>
#include <string>
#include <string_view>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

// Parses XML text; `source` names the file in messages. Not validated.
Topology topology_from_nccl_xml(std::string_view text, const std::string& source);

// Reads and parses a file (not validated).
Topology load_nccl_xml(const std::filesystem::path& path);

// One direction of a PCIe link described as NCCL writes it: link_speed "16.0 GT/s PCIe" (or
// "16 GT/s"), link_width "16". Returns 0 when either is unknown ("Unknown", "", width 0);
// throws colltune::Error on a speed that is no PCIe generation.
double pcie_link_gbps(std::string_view link_speed, std::string_view link_width);

}  // namespace colltune::topo
