// The preset catalog: names, parameters with defaults, and dispatch to the builders.
#include "colltune/topology/presets.hpp"

#include "colltune/common/error.hpp"
#include "colltune/topology/hardware.hpp"
#include "graph/text_util.hpp"
#include "presets/preset_builders.hpp"

namespace colltune::topo {
namespace {

using Builder = Topology (*)(const detail::PresetParams&);

using detail::fmt_num;

// The parameters of a network of servers whose NICs default to `nic` (a hardware-table name).
std::vector<PresetParam> network_params(std::string_view nic) {
  return {{"nodes", "1", "number of servers; more than one adds a leaf/spine network"},
          {"nic_gbit", fmt_num(find_nic(nic).gbit), "rate of each NIC, Gb/s per direction"},
          {"oversub", "1", "leaf down:up bandwidth ratio (1 = non-blocking)"},
          {"leaf_ports", "32", "NIC ports per leaf switch (a 64-port switch, half up)"},
          {"sharp", "0", "1: the leaf and spine switches reduce in the network (SHARP, NCCL's CollNet)"},
          {"transport", "ib", "what the network runs over: ib, roce or tcp (the step model's transport efficiency)"}};
}

std::vector<PresetParam> with(std::vector<PresetParam> base, std::vector<PresetParam> extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

// NVLink SHARP on or off (NCCL's NVLS and NVLSTree; NCCL_NVLS_ENABLE=0 turns it off on the
// real machine).
const PresetParam kNvlsParam{"nvls", "1", "1: the NVSwitch reduces in the switch (NVLink SHARP, NCCL's NVLS) where it "
                                          "can (Hopper and later); 0: off, as NCCL_NVLS_ENABLE=0"};

struct Entry {
  PresetInfo info;
  Builder build;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"dgx-h100", "NVIDIA DGX H100: 8 H100 SXM on NVLink4 NVSwitch (450 GB/s per GPU), 8 ConnectX-7 400 Gb/s",
        with(network_params("ndr"), {kNvlsParam})},
       detail::build_dgx_h100},
      {{"dgx-a100", "NVIDIA DGX A100: 8 A100 SXM on NVLink3 NVSwitch (300 GB/s per GPU), 8 ConnectX-6 200 Gb/s",
        network_params("hdr")},
       detail::build_dgx_a100},
      {{"dgx1-v100", "NVIDIA DGX-1V: 8 V100 SXM2 in the NVLink2 hybrid cube-mesh, 4 EDR 100 Gb/s NICs",
        network_params("edr")},
       detail::build_dgx1_v100},
      {{"pcie-box", "GPUs behind PCIe switches, no NVLink (L40S by default, PCIe Gen4 by default)",
        with(network_params("edr"), {{"gpus", "8", "GPUs per server"},
                                     {"per_switch", "2", "GPUs per PCIe switch"},
                                     {"gen", "4", "PCIe generation 1..6 (x16 links)"},
                                     {"nics", "2", "NICs per server"},
                                     {"gpu", "l40s", "GPU (" + known_gpus() + "): compute rates, reduce rate"}})},
       detail::build_pcie_box},
      {{"fat-tree", "GPU servers (H100 by default, NVSwitch inside) on a two-level leaf/spine fat-tree",
        {{"nodes", "4", "number of servers"},
         {"gpus", "8", "GPUs per server"},
         {"nics", "8", "NICs per server"},
         {"per_switch", "0", "GPUs per PCIe switch, the NICs spread over the switches (0 = the GPU generation's "
                             "reference server: as DGX H100 on Hopper and later, a NIC per GPU switch; as DGX "
                             "A100 and DGX-1 before, two GPUs a switch)"},
         {"nic_gbit", fmt_num(find_nic("ndr").gbit), "rate of each NIC, Gb/s per direction"},
         {"oversub", "1", "leaf down:up bandwidth ratio (1 = non-blocking)"},
         {"leaf_ports", "32", "NIC ports per leaf switch"},
         {"sharp", "0", "1: the leaf and spine switches reduce in the network (SHARP, NCCL's CollNet)"},
         {"nvlink", fmt_num(find_gpu("h100").nvlink.gbps()), "per-GPU NVSwitch bandwidth inside a server, GB/s (0 = none)"},
         kNvlsParam,
         {"gpu", "h100", "GPU (" + known_gpus() + "): compute rates, reduce rate, PCIe generation"},
         {"cpu", "xeon-8480c", "CPUs (" + known_cpus() + "): reduce rate, socket links, NCCL's CPU class"},
         {"transport", "ib", "what the network runs over: ib, roce or tcp (the step model's transport efficiency)"}}},
       detail::build_fat_tree},
      {{"torus", "GPUs on a 2-D or 3-D torus of direct links (wrap-around in every dimension)",
        {{"dims", "4x4", "torus sizes, 2 or 3 dimensions, e.g. 4x4x4"},
         {"bw", fmt_num(nvlink_generations().at(3).link_gbps), "bandwidth of each link, GB/s per direction (one NVLink4 link)"},
         {"lat", "0.5", "latency of each link, us"},
         {"per_host", "1", "consecutive GPUs per host (must divide the GPU count)"},
         {"reduce", fmt_num(find_gpu("h100").reduce_gbps()), "GPU reduce rate, GB/s"}}},
       detail::build_torus},
      {{"flat", "the textbook alpha-beta machine: every pair of ranks at latency alpha and bandwidth bw",
        {{"ranks", "8", "number of ranks"},
         {"alpha", "5", "rank-to-rank latency, us"},
         {"bw", "12.5", "rank-to-rank bandwidth, GB/s per direction"},
         {"reduce", "50", "reduce rate of each rank, GB/s"},
         {"nodes", "1", "hosts; ranks are split evenly over them"}}},
       detail::build_flat},
  };
  return table;
}

std::string_view preset_name(std::string_view spec) { return spec.substr(0, spec.find(':')); }

}  // namespace

const std::vector<PresetInfo>& preset_catalog() {
  static const std::vector<PresetInfo> catalog = [] {
    std::vector<PresetInfo> out;
    for (const Entry& e : entries()) out.push_back(e.info);
    return out;
  }();
  return catalog;
}

bool is_preset_spec(std::string_view spec) {
  for (const Entry& e : entries())
    if (e.info.name == preset_name(spec)) return true;
  return false;
}

Topology make_preset(std::string_view spec) {
  const std::string_view name = preset_name(spec);
  for (const Entry& e : entries()) {
    if (e.info.name != name) continue;
    const std::string_view params = name.size() < spec.size() ? spec.substr(name.size() + 1) : std::string_view{};
    Topology t = e.build(detail::PresetParams(e.info, params));
    t.name = std::string(spec);
    if (t.description.empty()) t.description = e.info.summary;
    return t;
  }
  const std::string valid =
      detail::join_names(entries(), [](const Entry& e) -> const std::string& { return e.info.name; });
  throw Error("unknown topology preset '" + std::string(name) + "' (valid: " + valid + "; or a .json / .xml file)");
}

}  // namespace colltune::topo
