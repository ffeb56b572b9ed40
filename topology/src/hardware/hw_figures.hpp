#pragma once
// Internal: the hardware figures presets and the NCCL XML import turn into link bandwidths,
// latencies and reduce rates. Bandwidths are per direction, GB/s = 1e9 B/s.
//
// Sources (vendor data sheets):
//  - NVLink: 20 GB/s per link per direction for NVLink1 (P100, sm60); 25 GB/s for NVLink2
//    (V100, 6 links = 150 GB/s), NVLink3 (A100, 12 links = 300 GB/s) and NVLink4 (H100,
//    18 links = 450 GB/s, "900 GB/s" bidirectional); 50 GB/s for NVLink5 (B200, 18 links =
//    900 GB/s, "1.8 TB/s"). GA10x boards (sm86/89, e.g. A40) carry 4 NVLink3 links of
//    14.0625 GB/s ("112.5 GB/s" bidirectional).
//  - PCIe: lane rate 2.5/5/8/16/32/64 GT/s for Gen1..Gen6; 8b/10b encoding for Gen1-2,
//    128b/130b for Gen3-5, 242/256 FLIT for Gen6. Gen5 x16 = 32 * 128/130 * 16 / 8 = 63.0 GB/s,
//    Gen4 x16 = 31.5 GB/s, Gen3 x16 = 15.75 GB/s.
//  - NICs: ConnectX-7 NDR 400 Gb/s = 50 GB/s; ConnectX-6 HDR 200 Gb/s = 25 GB/s;
//    ConnectX-4/5 EDR 100 Gb/s = 12.5 GB/s.
//  - Reduce rate (reduce_gbps, GB/s of incoming data reduced): memory bandwidth / 3, since
//    each reduced byte is read from the wire buffer, read from the local buffer and written
//    back. H100 SXM 3.35 TB/s HBM3 -> 1117; A100 SXM 80GB 2.039 TB/s -> 680; V100 SXM2 900 GB/s
//    -> 300; L40S 864 GB/s GDDR6 -> 288. CPUs: Xeon 8480C 8ch DDR5-4800 307 GB/s -> 102;
//    EPYC 7742 8ch DDR4-3200 205 GB/s -> 68; Xeon E5-2698 v4 4ch DDR4-2400 77 GB/s -> 26.
//  - CPU socket links (sys), nominal per direction: UPI 2.0 on Xeon 8480C, 4 links x 16 GT/s
//    x 2 B = 128 GB/s; xGMI on EPYC 7742, 4 x16 links at 16 GT/s = 4 x 32 GB/s = 128 GB/s;
//    QPI on E5-2698 v4, 2 links x 9.6 GT/s x 2 B = 38.4 GB/s.
//  - Detected machines (colltune topo detect, detect_build.cpp) whose figures cannot be read
//    cheaply get placeholders for `colltune calibrate` to refine: memory bandwidth per CPU
//    socket 204.8 GB/s (8 channels of DDR4-3200 x 8 B = 25.6 GB/s each, an EPYC 7742 or Xeon
//    Ice Lake socket), socket links 128 GB/s (UPI 2.0 / xGMI above), a NIC whose rate sysfs does
//    not give 100 Gb/s = 12.5 GB/s (EDR / 100 GbE), shared-memory hop 0.2 us (two hops between
//    ranks of one socket: 0.4 us, the order of an MPI shared-memory ping-pong).
//  - Latencies are per link traversal and approximate, chosen so that end-to-end figures land
//    near NCCL's hardware latency table (src/graph/tuning.cc: ~0.6 us NVLink, ~1 us PCIe,
//    a few us over the network): NVLink hop 0.35 us (GPU -> NVSwitch -> GPU = 0.7 us), PCIe hop
//    0.5 us, CPU socket link 0.6 us, network cable + switch port 1.0 us.
#include <iterator>

namespace colltune::topo::hw {

inline constexpr double kNvlinkLatencyUs = 0.35;
inline constexpr double kPcieLatencyUs = 0.5;
inline constexpr double kSysLatencyUs = 0.6;
inline constexpr double kNetLatencyUs = 1.0;

inline constexpr double kNvlinkLinkGbps = 25.0;  // NVLink2/3/4, one link, one direction

// Per-link NVLink rate for a GPU of compute capability `sm` (60, 70, 80, 86, 90, 100, ...).
inline double nvlink_link_gbps(int sm) {
  if (sm < 70) return 20.0;
  if (sm == 86 || sm == 87 || sm == 89) return 14.0625;
  if (sm < 100) return kNvlinkLinkGbps;
  return 50.0;
}

// PCIe lane rate in GT/s of generation g at index g - 1 (Gen1..Gen6).
inline constexpr double kPcieGts[] = {2.5, 5, 8, 16, 32, 64};
inline constexpr int kPcieGenerations = static_cast<int>(std::size(kPcieGts));

// One direction of a PCIe link of `width` lanes at generation `gen` (1..6).
inline double pcie_gbps(int gen, int width) {
  const double enc = gen <= 2 ? 0.8 : gen <= 5 ? 128.0 / 130.0 : 242.0 / 256.0;
  return kPcieGts[gen - 1] * enc * width / 8.0;
}

inline constexpr double kH100ReduceGbps = 1117.0;
inline constexpr double kA100ReduceGbps = 680.0;
inline constexpr double kV100ReduceGbps = 300.0;
inline constexpr double kL40sReduceGbps = 288.0;
inline constexpr double kP100ReduceGbps = 244.0;   // 732 GB/s HBM2
inline constexpr double kB200ReduceGbps = 2667.0;  // 8 TB/s HBM3e

// Reduce rate of a GPU of compute capability `sm` (see above; unknown generations get the
// nearest older one; sm86/89 GDDR6 boards count as an L40S).
inline double gpu_reduce_gbps(int sm) {
  if (sm < 70) return kP100ReduceGbps;
  if (sm < 80) return kV100ReduceGbps;
  if (sm == 80) return kA100ReduceGbps;
  if (sm < 90) return kL40sReduceGbps;
  if (sm < 100) return kH100ReduceGbps;
  return kB200ReduceGbps;
}

inline constexpr double kXeon8480ReduceGbps = 102.0;
inline constexpr double kEpyc7742ReduceGbps = 68.0;
inline constexpr double kXeonE5ReduceGbps = 26.0;
inline constexpr double kUpi2Gbps = 128.0;
inline constexpr double kXgmiGbps = 128.0;
inline constexpr double kQpiGbps = 38.4;

// Placeholders for detected machines (see above).
inline constexpr double kDefaultSocketMemoryGbps = 204.8;
inline constexpr double kDefaultSysGbps = kXgmiGbps;
inline constexpr double kDefaultNicGbps = 12.5;
inline constexpr double kShmLatencyUs = 0.2;
// The most NVLinks one GPU has (H100, B200: 18): a GPU whose NV# counts to its peers add up to
// more is on an NVSwitch, whose every pair nvidia-smi shows with the GPU's full count.
inline constexpr int kMaxNvlinksPerGpu = 18;

}  // namespace colltune::topo::hw
