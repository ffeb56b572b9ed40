// Server presets: DGX H100, DGX A100, DGX-1V and a generic PCIe-only box, each optionally
// several of them on a leaf/spine network (nodes=N). Every figure is a row of the hardware table
// (hardware.hpp), which has its source.
#include <array>

#include "colltune/topology/hardware.hpp"

#include "presets/preset_builders.hpp"
#include "presets/preset_hosts.hpp"

namespace colltune::topo::detail {

// DGX H100 (NVIDIA DGX H100 user guide / data sheet): 8 H100 SXM5 with 18 NVLink4 links each
// (18 x 25 = 450 GB/s per direction) into 4 NVSwitch chips; 2 Xeon Platinum 8480C joined by
// UPI 2.0; 8 ConnectX-7 400 Gb/s compute NICs, each sharing a PCIe Gen5 switch with one GPU
// (`nvidia-smi topo -m` on the machine: GPUi-NICi PIX, every other GPU-NIC pair SYS), four
// switches per CPU.
Topology build_dgx_h100(const PresetParams& p) {
  HostPlan plan = host_of(find_gpu("h100"), find_cpu("xeon-8480c"));
  plan.gpus = 8;
  plan.gpus_per_switch = 1;
  plan.nvswitch_gbps = find_gpu("h100").nvlink.gbps();
  plan.nvls = p.nvls(true, "");  // third-generation NVSwitch: NVLink SHARP
  plan.nics = 8;
  return servers(p, plan);
}

// DGX A100 (NVIDIA DGX A100 system architecture white paper): 8 A100 SXM4 80GB with 12 NVLink3
// links each (12 x 25 = 300 GB/s per direction) into 6 NVSwitch chips; 2 AMD EPYC 7742 joined
// by xGMI; 4 PCIe Gen4 switches, each with 2 GPUs and 2 ConnectX-6 200 Gb/s compute NICs.
Topology build_dgx_a100(const PresetParams& p) {
  HostPlan plan = host_of(find_gpu("a100"), find_cpu("epyc-7742"));
  plan.gpus = 8;
  plan.nvswitch_gbps = find_gpu("a100").nvlink.gbps();  // second-generation NVSwitch: no in-switch reduction
  plan.nics = 8;
  return servers(p, plan);
}

// DGX-1 with V100 (NVIDIA DGX-1 with Tesla V100 system architecture white paper): 8 V100 SXM2,
// 6 NVLink2 links each (25 GB/s per direction per link) in the hybrid cube-mesh below, the
// `nvidia-smi topo -m` matrix of the machine (NV1 = one link, NV2 = two); 2 Xeon E5-2698 v4
// joined by QPI; 4 PCIe Gen3 switches, each with 2 GPUs and one EDR 100 Gb/s NIC.
Topology build_dgx1_v100(const PresetParams& p) {
  // Links between GPU i and GPU j (i < j): {i, j, count}. Every GPU has 6 in total.
  static constexpr std::array<std::array<int, 3>, 16> kMesh{{
      {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1}, {1, 5, 2}, {2, 3, 2},
      {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2},
  }};
  const GpuSpec& v100 = find_gpu("v100");
  HostPlan plan = host_of(v100, find_cpu("xeon-e5-2698v4"));
  plan.gpus = 8;
  plan.nics = 4;
  auto mesh = [&v100](Topology& t, const HostDevices& h) {
    for (const auto& [a, b, count] : kMesh)
      t.add_duplex_link(h.gpus[static_cast<std::size_t>(a)], h.gpus[static_cast<std::size_t>(b)], LinkKind::nvlink,
                        count * v100.nvlink.link_gbps, hw::kNvlinkLatencyUs);
  };
  return servers(p, plan, mesh);
}

// A generic PCIe server: GPUs in groups of per_switch behind PCIe switches of generation
// `gen` (x16 links), 2 CPUs (Xeon 8480-class, UPI), NICs spread over the switches; no NVLink,
// so GPU traffic between switches crosses the CPUs. The GPU generation `gpu` (default L40S,
// 864 GB/s GDDR6) sets the reduce rate and compute capability; the PCIe generation stays
// `gen`'s, the slot the GPUs sit in.
Topology build_pcie_box(const PresetParams& p) {
  HostPlan plan = host_of(p.gpu(), find_cpu("xeon-8480c"));
  plan.gpus = p.integer("gpus", 1, 1024);
  plan.gpus_per_switch = p.integer("per_switch", 1, 1024);
  plan.pcie_gbps = plan.pcie_uplink_gbps = pcie_gbps(p.integer("gen", 1, 6), 16);
  plan.nics = p.integer("nics", 0, 1024);
  return servers(p, plan);
}

}  // namespace colltune::topo::detail
