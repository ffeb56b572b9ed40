#pragma once
// The hardware table: every figure colltune takes from a data sheet, one row per part, each
// row with the URL of its source (topology/src/hardware/*.cpp; docs/hardware.md shows them).
// Presets, the NCCL XML import, `topo detect`, NCCL's model and the step model all look their
// figures up here; nothing else writes a hardware number.
//
//  - GPUs by name and compute capability: memory bandwidth (and from it the reduce rate),
//    NVLink generation, links and per-link rate, PCIe generation, dense peak TFLOP/s per
//    precision (gpus.cpp);
//  - links: NVLink per generation, PCIe per generation and width (links.cpp);
//  - NICs: InfiniBand / Ethernet port rates (links.cpp);
//  - CPUs: memory bandwidth, socket links (links.cpp).
// Bandwidths are per direction, GB/s = 1e9 B/s; throughput is TFLOP/s, dense (the data
// sheets' "with sparsity" figures halved).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/topology/topology.hpp"

namespace colltune::topo {

class Topology;

// ---- rules -------------------------------------------------------------------------------

// Reduce rate of a device from its memory bandwidth: each byte reduced is read from the wire
// buffer, read from the local buffer and written back, three passes over memory. A device's
// reduce_gbps (topology.hpp) is GB/s of incoming data reduced.
inline constexpr double kReduceMemoryPasses = 3;
inline double reduce_gbps_of_memory(double memory_gbps) { return memory_gbps / kReduceMemoryPasses; }

// ---- GPUs -------------------------------------------------------------------------------

// A GPU's NVLink ports: its generation, how many links, one link's rate in one direction.
struct NvlinkPorts {
  int generation = 0;  // 0: no NVLink
  int links = 0;
  double link_gbps = 0;
  double gbps() const { return links * link_gbps; }  // every link together, one direction
};

// Dense peak TFLOP/s per precision. tf32: TF32 tensor cores, 0 where there are none. fp16:
// tensor cores with fp32 accumulation (what mixed-precision training uses; GeForce boards run it
// at half their fp16-accumulate rate), or the fp16 ALU rate on a GPU without tensor cores. bf16
// and fp8: 0 where the GPU has no such format.
struct PeakTflops {
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0;
};

struct GpuSpec {
  std::string name;            // "h100": what `gpu=` and a topology's "gpu" take
  std::string board;           // the board the figures are for, e.g. "H100 SXM5 80GB"
  std::vector<std::string> nvidia_smi_names;  // what `nvidia-smi --query-gpu=name` prints for it
  int compute_capability = 0;  // x10 + minor: 60, 70, 75, 80, 86, 89, 90, 100
  double memory_gbps = 0;      // device memory bandwidth
  NvlinkPorts nvlink;
  int pcie_gen = 0;            // the host interface's generation (x16)
  PeakTflops peak;
  std::string source;  // URL of the data sheet or white paper

  // round(reduce_gbps_of_memory(memory_gbps)): whole GB/s, as every topology has carried it.
  double reduce_gbps() const;
  // The precision automatic mixed precision computes in: "bf16" where the GPU has it (Ampere
  // and later), else "fp16" where it has tensor cores (Volta, Turing: fp16 above twice fp32),
  // else "fp32" (Pascal).
  std::string amp_precision() const;
};

// The table, by compute capability; of the rows that share one, the first is the one a bare
// compute capability means (an NCCL dump names no board): 80 a100 (80GB), 86 a40, 89 l40s,
// 90 h100 (SXM).
const std::vector<GpuSpec>& gpu_table();
// The names, comma-separated ("p100, v100, ...") for messages.
std::string known_gpus();
// Throws colltune::Error naming `what` (e.g. "preset fat-tree: gpu=x100") and listing the
// known names when `name` is not in the table.
const GpuSpec& find_gpu(std::string_view name, std::string_view what = "");
// The row a compute capability means: the first row with it, else the newest older one (a
// GPU the table lacks counts as the generation before it), else the oldest row.
const GpuSpec& gpu_of_compute_capability(int compute_capability);
// The row whose nvidia_smi_names holds `board` (nvidia-smi's name, with or without its
// "NVIDIA " prefix); nullptr when none does.
const GpuSpec* gpu_of_board(std::string_view board);
// The GPU of a topology: its `gpu` attribute when set, else the row of rank 0's compute
// capability, else h100 (a topology without GPUs, e.g. `flat`: the default the step model has
// always assumed).
const GpuSpec& gpu_of(const Topology& topology);

// The fraction of the NVLink line rate NCCL's collectives reach on a GPU, as NCCL's maintainers
// state it, and where they do: A100 230 of 300 GB/s (nccl-tests#149), H100 and H200 370 of 450
// (nccl-tests#212). nullopt for a GPU of which they state none.
struct StatedNvlinkEfficiency {
  double fraction = 0;
  std::string_view source;  // URL
};
std::optional<StatedNvlinkEfficiency> stated_nvlink_efficiency(const GpuSpec& gpu);
// Per-link NVLink rate of a GPU of this compute capability. A GPU without NVLink that a
// topology nevertheless links by NVLink (a hand-written file) counts at the rate of the
// newest older row that has NVLink.
double nvlink_link_gbps(int compute_capability);
// The most NVLinks any GPU of the table has (18: H100, B200). nvidia-smi shows every GPU pair
// on an NVSwitch with the GPU's full count, so counts that add up to more mean a switch.
int max_nvlinks_per_gpu();

// ---- links --------------------------------------------------------------------------------

struct NvlinkGeneration {
  int generation = 0;
  double link_gbps = 0;  // one link, one direction
  int links_per_gpu = 0; // on the data-center GPU that introduced it
  std::string first_gpu;
  std::string source;
};
const std::vector<NvlinkGeneration>& nvlink_generations();

struct PcieGeneration {
  int generation = 0;
  double gts = 0;       // per lane
  double encoding = 0;  // 8b/10b, 128b/130b, 242/256 (FLIT)
  std::string source;
};
const std::vector<PcieGeneration>& pcie_generations();
// One direction of a PCIe link of `width` lanes at `generation` (1..6; colltune::Error
// otherwise). Gen4 x16 = 16 GT/s x 128/130 x 16 / 8 = 31.5 GB/s.
double pcie_gbps(int generation, int width);

// ---- NICs ---------------------------------------------------------------------------------

struct NicSpec {
  std::string name;         // "ndr"
  std::string description;  // "InfiniBand NDR 4x / 400GbE (ConnectX-7)"
  double gbit = 0;          // port rate, Gb/s per direction
  std::string source;
  double gbps() const { return gbit / 8; }
};
const std::vector<NicSpec>& nic_table();
const NicSpec& find_nic(std::string_view name);

// ---- CPUs ---------------------------------------------------------------------------------

struct CpuSpec {
  std::string name;         // "xeon-8480c"
  std::string description;  // "Intel Xeon Platinum 8480C: 8 x DDR5-4800, 4 UPI 2.0 links at 16 GT/s"
  double memory_gbps = 0;   // channels x MT/s x 8 B
  double socket_link_gbps = 0;  // to the other socket, all links, one direction
  NcclCpu nccl_cpu = NcclCpu::intel_srp;  // the class NCCL's model gives it (topology.hpp)
  std::string source;
  double reduce_gbps() const;  // round(reduce_gbps_of_memory(memory_gbps))
};
const std::vector<CpuSpec>& cpu_table();
const CpuSpec& find_cpu(std::string_view name);
std::string known_cpus();  // "xeon-8480c, epyc-7742, ..."

// ---- approximations -----------------------------------------------------------------------
namespace hw {

// Latency per link traversal, chosen so that end-to-end figures land near NCCL's hardware
// latency table (src/graph/tuning.cc: ~0.6 us NVLink, ~1 us PCIe, a few us over the network):
// GPU -> NVSwitch -> GPU = 0.7 us.
inline constexpr double kNvlinkLatencyUs = 0.35;
inline constexpr double kPcieLatencyUs = 0.5;
inline constexpr double kSysLatencyUs = 0.6;
inline constexpr double kNetLatencyUs = 1.0;
// Shared-memory hop between a CPU rank and its socket: two hops between ranks of one socket
// are 0.4 us, the order of an MPI shared-memory ping-pong.
inline constexpr double kShmLatencyUs = 0.2;

// What `topo detect` assumes where it cannot read a figure cheaply, for `colltune calibrate`
// to refine: a CPU socket as an EPYC 7742 (8 channels of DDR4-3200, xGMI), a NIC whose rate
// sysfs does not give as EDR / 100GbE.
inline constexpr std::string_view kDefaultCpu = "epyc-7742";
inline constexpr std::string_view kDefaultNic = "edr";

}  // namespace hw
}  // namespace colltune::topo
