#pragma once
// NCCL's tuning constants, one table per NCCL release whose model differs, read from NCCL's
// source (src/graph/tuning.cc, search.cc, connect.cc, topo.h, src/include/device.h, comm.h,
// src/init.cc, src/transport/nvls.cc of each tag). sim/nccl_model/src/nccl_constants.cpp names the file
// each figure comes from. Releases between two tables behave like the older table (see
// NcclVersion::installed()); docs/nccl-model.md lists what changed between the tables.
#include <array>
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/sim/nccl_names.hpp"

namespace colltune::sim {

struct NcclVersion {
  int major = 2;
  int minor = 28;

  // The releases with a table, oldest first ("2.21", "2.28", "2.30").
  static const std::vector<NcclVersion>& known();
  // The newest known release.
  static NcclVersion newest();
  // The release colltune was built against: NCCL_MAJOR/NCCL_MINOR of the nccl.h found at
  // configure time, mapped to the newest known release not newer than it (the oldest known one
  // when it is older than every table); without NCCL, newest().
  static NcclVersion installed();
  // "2.28", "2.28.9" or "2.28.9-1"; the release must have a table. Throws colltune::Error
  // naming the text and listing the known releases.
  static NcclVersion parse(std::string_view text);

  std::string to_string() const;  // "2.28"
  friend auto operator<=>(const NcclVersion&, const NcclVersion&) = default;
};

// Hardware classes of the latency table (NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET).
enum class NcclHw { nvlink = 0, pci = 1, net = 2 };
inline constexpr int kNcclNumHw = 3;
// Compute-capability rows of the bandwidth caps: Volta, Ampere, Hopper, Blackwell.
inline constexpr int kNcclNumCompCaps = 4;
// Node-count columns of the caps: 1 node, 2 nodes, 3 or more.
inline constexpr int kNcclNumScales = 3;
// Powers of two from 64 B in the tree correction table.
inline constexpr int kNcclTreeCorrectionSizes = 24;  // 23 before 2.30 (the last entry unused)

using NcclCapTable = std::array<std::array<double, kNcclNumScales>, kNcclNumCompCaps>;
using NcclAlgoProtoTable = std::array<std::array<double, kNcclNumProtos>, kNcclNumAlgos>;

// The channel search's per-channel speeds (GB/s), tried from the first down.
struct NcclSpeeds {
  std::vector<float> intra;  // one node
  std::vector<float> inter;  // several nodes
};

// Where the model's formulas changed between releases: each flag names the behaviour of the
// newer releases; the 2.21 table clears them.
struct NcclModelRules {
  bool pat = true;                     // PAT exists (2.23+): 7 algorithms instead of 6
  bool nvls_efficiency = true;         // NVLS bandwidth from nvlsEfficiency (2.28+), else min(intra, inter) x 5/6
  bool ring_inter_steps_exact = true;  // ring allreduce: 2(nNodes-1) network steps (2.23+), else 2 nNodes
  bool ppn1_tree_net_latency = true;   // one GPU per node: the network latency of Tree (2.23+)
  bool ring_ll128_ppn1_discount = false;  // ring LL128 x 0.7 when fewer than 2 GPUs per node (2.21/2.22)
  bool ll128_known_arch_only = false;  // LL128 only on sm70/80/90 (2.21)
  bool ll128_mixed_hopper = false;     // LL128 with mixed compute capabilities from sm90 (2.30)
  bool hopper_dup_all_sm90_plus = true;  // the multi-node channel doubling applies to sm>=90 (2.28), not only sm90
  bool nvls_raises_comm_channels = false;  // comm channels raised to the NVLS channel count (2.21)
  bool nvls_tree_correction_sm100 = false; // tree correction also on NVLSTree on sm100 x86 (2.30)
  bool collnet_ag_rs_interpolated = false; // CollNetDirect allgather/reduce-scatter: ppn-interpolated factor (2.21)
  bool nvls_ag_rs_multinode = true;    // NVLS allgather/reduce-scatter allowed on several nodes (with CollNet; 2.23+)
  bool nvls_multinode_channel_cap = true;  // multi-node NVLS runs on min(NVLS, comm) channels (2.28)
  bool log2i_zero_is_minus_one = true; // log2i(0) = -1 (2.28), 0 in 2.21: sizes below 64 B
};

struct NcclConstants {
  NcclVersion version;
  NcclModelRules rules;
  // Latency (us): base per algorithm and protocol, and per hardware class.
  NcclAlgoProtoTable base_lat{};
  std::array<NcclAlgoProtoTable, kNcclNumHw> hw_lat{};
  // Bandwidth caps (GB/s) [compute-capability row][node-count column]. ll_max_bw's rows are
  // the compute capability on one node and the CPU vendor on several (Volta row = Intel,
  // Ampere row = AMD), as NCCL indexes them.
  NcclCapTable ll_max_bw{};
  NcclCapTable per_ch_max_ring_ll128_bw{};
  NcclCapTable per_ch_max_tree_ll128_bw{};
  NcclCapTable per_ch_max_tree_bw{};
  NcclCapTable per_ch_max_nvls_tree_bw{};  // 0 where NCCL has none (2.21: no cap)
  std::array<float, kNcclNumCompCaps> nvls_efficiency{};
  std::array<std::array<double, kNcclTreeCorrectionSizes>, kNcclNumProtos> tree_correction{};  // NCCL: float
  // Network post overhead (us) per step on Intel and AMD CPUs; x3 for Simple.
  double net_overhead_intel_us = 1.0;
  double net_overhead_amd_us = 2.0;
  double net_overhead_simple_factor = 3.0;
  // Ring/Simple latency factor on several nodes (the "plateau effect"): before sm80, from sm80.
  double ring_plateau_pre_sm80 = 1.9;
  double ring_plateau_sm80 = 1.4;
  // Kernel and buffer constants.
  int nccl_steps = 8;
  int max_channels = 64;             // MAXCHANNELS
  int max_nvls_arity = 32;           // NCCL_MAX_NVLS_ARITY
  int max_direct_arity = 7;          // NCCL_MAX_DIRECT_ARITY (CollNetDirect heads up to arity + 1)
  int max_threads = 640;             // NCCL_MAX_NTHREADS
  int simple_max_threads = 512;      // NCCL_SIMPLE_MAX_NTHREADS
  int ll_max_threads = 512;          // NCCL_LL_MAX_NTHREADS
  int ll128_max_threads = 640;       // NCCL_LL128_MAX_NTHREADS
  int warp_size = 32;
  std::array<long, kNcclNumProtos> thread_threshold{8, 8, 64};  // NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD
  long collnet_thread_threshold = 512;
  double pci_bw = 12.0;              // PCI_BW: Ring/Simple uses 256 threads at or below it
  std::array<long, kNcclNumProtos> buffsize{};  // default NCCL_BUFFSIZE per protocol (bytes)
  long nvls_chunk_size = 128 * 1024;  // NCCL_NVLS_CHUNKSIZE's default (transport/nvls.cc)
  // NCCL_NVLSTREE_MAX_CHUNKSIZE unset (-2): NVLSTree's chunk at most 64 KiB from this many nodes.
  int nvls_tree_small_chunk_nodes = 4;
  int nvls_channels_sm90 = 16;
  int nvls_channels_sm100 = 16;            // several nodes (2.28+: 32)
  int nvls_channels_sm100_one_node = 16;   // one node / NVL domain (2.28+: 24)
  // Channel search.
  NcclSpeeds speeds_pre_sm90;
  NcclSpeeds speeds_sm90;
  NcclSpeeds speeds_sm100;  // 2.21 has none: sm100 uses the sm90 lists
};

// The table of a release (`version` must be one of NcclVersion::known()).
const NcclConstants& nccl_constants(NcclVersion version);

}  // namespace colltune::sim
