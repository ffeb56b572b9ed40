// NCCL's tuning constants per release. Every figure was read from NCCL's source at the tag
// named; the file is given at each group. The 2.28 table is written out in full; 2.21 and 2.30
// are 2.28 with the differences listed (so a reader sees exactly what changed).
#include "colltune/sim/nccl_constants.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"

namespace colltune::sim {
namespace {

constexpr std::size_t kTree = 0, kRing = 1, kCnDirect = 2, kCnChain = 3, kNvls = 4, kNvlsTree = 5, kPat = 6;
constexpr std::size_t kLL = 0, kLL128 = 1, kSimple = 2;
constexpr std::size_t kNvlinkHw = 0, kPciHw = 1, kNetHw = 2;

// v2.28.9-1 src/graph/tuning.cc: ncclTunerConstantsDefaults, nvlsEfficiency, treeCorrectionFactor
// (23 sizes; the 24th entry is 2.30's, which only its NVLSTree correction reads).
void set_tuning_2_28(NcclConstants& c) {
  c.base_lat = {{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}}};
  c.hw_lat[kNvlinkHw] = {{{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}}};
  c.hw_lat[kPciHw] = {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}}};
  c.hw_lat[kNetHw] = {{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
  // Rows Volta/Intel, Ampere/AMD, Hopper, Blackwell; columns 1 node, 2 nodes, 3+ nodes.
  c.ll_max_bw = {{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}}};
  c.per_ch_max_ring_ll128_bw = {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {2 * 36.7, 34.6, 2 * 36.7}}};
  c.per_ch_max_tree_ll128_bw = {{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
  c.per_ch_max_tree_bw = {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
  c.per_ch_max_nvls_tree_bw = {{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}}};
  c.nvls_efficiency = {0.0f, 0.0f, 0.85f, 0.74f};
  c.tree_correction = {{
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9},
  }};
  // getNetOverhead(): 1 us Intel, 2 us AMD, x3 for Simple. ncclTopoGetAlgoTime(): the ring
  // plateau factor 1.9 before sm80, 1.4 from sm80.
  c.net_overhead_intel_us = 1.0;
  c.net_overhead_amd_us = 2.0;
  c.net_overhead_simple_factor = 3.0;
  c.ring_plateau_pre_sm80 = 1.9;
  c.ring_plateau_sm80 = 1.4;
}

// v2.28.9-1 src/include/device.h (NCCL_STEPS, MAXCHANNELS, thread counts, arities), comm.h
// (thread thresholds), init.cc (DEFAULT_*BUFFSIZE), graph/topo.h (PCI_BW), transport/nvls.cc
// (NVLS_NCHANNELS_*), graph/search.cc (speed arrays).
void set_kernel_2_28(NcclConstants& c) {
  c.nccl_steps = 8;
  c.max_channels = 64;
  c.max_nvls_arity = 32;
  c.max_direct_arity = 7;
  c.max_threads = 640;
  c.simple_max_threads = 512;
  c.ll_max_threads = 512;
  c.ll128_max_threads = 640;
  c.warp_size = 32;
  c.thread_threshold = {8, 8, 64};
  c.collnet_thread_threshold = 512;
  c.pci_bw = 12.0;
  // LL: 8 lines/thread x 512 threads x NCCL_STEPS x 16 B; LL128: 120 elements/thread x 640
  // threads x NCCL_STEPS x 8 B; Simple: 4 MiB.
  c.buffsize = {8L * 512 * 8 * 16, 120L * 640 * 8 * 8, 1L << 22};
  c.nvls_channels_sm90 = 16;
  c.nvls_channels_sm100 = 32;
  c.nvls_channels_sm100_one_node = 24;
  c.speeds_pre_sm90 = {{40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0},
                       {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2,
                        0.24, 0.12}};
  c.speeds_sm90 = {{60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0},
                   {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12}};
  c.speeds_sm100 = {{90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0},
                    {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24,
                     0.12}};
}

NcclConstants make_2_28() {
  NcclConstants c;
  c.version = {2, 28};
  c.rules = NcclModelRules{};
  set_tuning_2_28(c);
  set_kernel_2_28(c);
  return c;
}

// v2.21.5-1: the same files, with these differences from 2.28.
NcclConstants make_2_21() {
  NcclConstants c = make_2_28();
  c.version = {2, 21};
  NcclModelRules& r = c.rules;
  r.pat = false;                        // NCCL_NUM_ALGORITHMS 6
  r.nvls_efficiency = false;            // tuning.cc: NVLS bw = min(bwIntra, bwInter), x 5/6
  r.ring_inter_steps_exact = false;     // tuning.cc: nInterSteps = 2 nNodes for allreduce
  r.ppn1_tree_net_latency = false;      // tuning.cc: interLat = hwLat[NET][algo]
  r.ring_ll128_ppn1_discount = true;    // tuning.cc: ring LL128 x (ppn < 2 ? 0.7 : 0.92)
  r.ll128_known_arch_only = true;       // tuning.cc: switch (minCompCap) 70/80/90
  r.hopper_dup_all_sm90_plus = false;   // connect.cc: minCompCap == 90
  r.nvls_raises_comm_channels = true;   // connect.cc: nChannels raised to nvlsChannels
  r.collnet_ag_rs_interpolated = true;  // tuning.cc: ppn-interpolated 0.95..0.85 factor
  r.nvls_ag_rs_multinode = false;       // enqueue.cc: single-node NVLS allgather/reduce-scatter only
  r.nvls_multinode_channel_cap = false; // enqueue.cc: NVLS always on nvlsChannels
  r.log2i_zero_is_minus_one = false;    // include/utils.h: log2i(0) = 0
  // tuning.cc: Tree/Simple base latency 0 and hardware latency 28 on every class; NVLSTree
  // network latency 14; no PAT row.
  c.base_lat[kTree][kSimple] = 0;
  for (auto& hw : c.hw_lat) hw[kTree][kSimple] = 28;
  c.hw_lat[kNetHw][kNvlsTree][kSimple] = 14;
  c.base_lat[kPat] = {0, 0, 0};
  for (auto& hw : c.hw_lat) hw[kPat] = {0, 0, 0};
  // tuning.cc: three compute-capability rows (sm100 counts as Hopper), no NVLSTree cap, no
  // nvlsEfficiency.
  c.ll_max_bw[3] = c.ll_max_bw[2];
  c.per_ch_max_ring_ll128_bw[3] = c.per_ch_max_ring_ll128_bw[2];
  c.per_ch_max_tree_ll128_bw[3] = c.per_ch_max_tree_ll128_bw[2];
  c.per_ch_max_tree_bw[3] = c.per_ch_max_tree_bw[2];
  c.per_ch_max_nvls_tree_bw = {};
  c.nvls_efficiency = {};
  // device.h: MAXCHANNELS 32; transport/nvls.cc: NCCL_NVLS_NCHANNELS 16 on every GPU;
  // search.cc: no sm100 speed arrays (sm100 takes the sm90 ones).
  c.max_channels = 32;
  c.nvls_channels_sm100 = 16;
  c.nvls_channels_sm100_one_node = 16;
  c.speeds_sm100 = c.speeds_sm90;
  return c;
}

// v2.30.7-1: the same files, with these differences from 2.28.
NcclConstants make_2_30() {
  NcclConstants c = make_2_28();
  c.version = {2, 30};
  c.rules.ll128_mixed_hopper = true;           // tuning.cc: minCompCap == maxCompCap || minCompCap >= 90
  c.rules.nvls_tree_correction_sm100 = true;   // tuning.cc: ncclTopoGetAlgoTime, NVLSTree on sm100 x86
  c.per_ch_max_ring_ll128_bw[3] = {40.0, 40.0, 40.0};  // tuning.cc: Blackwell
  c.per_ch_max_nvls_tree_bw[3] = {0.0, 96.0, 80.0};    // tuning.cc: Blackwell
  c.speeds_sm100 = {{90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0},
                    {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4,
                     1.2, 0.24, 0.12}};  // search.cc
  return c;
}

const std::vector<NcclConstants>& tables() {
  static const std::vector<NcclConstants> all = {make_2_21(), make_2_28(), make_2_30()};
  return all;
}

std::string known_list() {
  std::string out;
  for (const NcclVersion& v : NcclVersion::known()) out += (out.empty() ? "" : ", ") + v.to_string();
  return out;
}

// The numbers of "2.28", "2.28.9" or "2.28.9-1" (major, minor, patch, release); empty when the
// text is not such a version.
std::vector<int> version_numbers(std::string_view text) {
  std::vector<int> out;
  const std::size_t dash = text.find('-');
  std::string_view dotted = text.substr(0, dash);
  for (std::size_t dot = 0; dot != std::string_view::npos; dotted = dotted.substr(dot + 1)) {
    dot = dotted.find('.');
    const std::optional<int> n = parse::try_integer<int>(dotted.substr(0, dot));
    if (!n || *n < 0) return {};
    out.push_back(*n);
  }
  // MAJOR.MINOR or MAJOR.MINOR.PATCH; a release suffix only after a patch level.
  if (out.size() < 2 || out.size() > 3 || (dash != std::string_view::npos && out.size() != 3)) return {};
  if (dash != std::string_view::npos) {
    const std::optional<int> release = parse::try_integer<int>(text.substr(dash + 1));
    if (!release || *release < 0) return {};
    out.push_back(*release);
  }
  return out;
}

}  // namespace

const std::vector<NcclVersion>& NcclVersion::known() {
  static const std::vector<NcclVersion> versions = [] {
    std::vector<NcclVersion> out;
    for (const NcclConstants& c : tables()) out.push_back(c.version);
    return out;
  }();
  return versions;
}

NcclVersion NcclVersion::newest() { return known().back(); }

NcclVersion NcclVersion::installed() {
#if defined(COLLTUNE_NCCL_VERSION_MAJOR) && defined(COLLTUNE_NCCL_VERSION_MINOR)
  const NcclVersion found{COLLTUNE_NCCL_VERSION_MAJOR, COLLTUNE_NCCL_VERSION_MINOR};
  NcclVersion best = known().front();
  for (const NcclVersion& v : known())
    if (v <= found) best = v;
  return best;
#else
  return newest();
#endif
}

NcclVersion NcclVersion::parse(std::string_view text) {
  const std::vector<int> numbers = version_numbers(text);
  const bool tail_ok = !numbers.empty();
  if (!tail_ok)
    throw Error("NCCL version '" + std::string(text) + "': expected MAJOR.MINOR such as 2.28 (known: " + known_list() +
                ")");
  const NcclVersion v{numbers[0], numbers[1]};
  if (std::find(known().begin(), known().end(), v) == known().end())
    throw Error("NCCL version '" + std::string(text) + "' has no table in colltune (known: " + known_list() + ")");
  return v;
}

std::string NcclVersion::to_string() const { return std::to_string(major) + "." + std::to_string(minor); }

const NcclConstants& nccl_constants(NcclVersion version) {
  for (const NcclConstants& c : tables())
    if (c.version == version) return c;
  throw Error("NCCL version " + version.to_string() + " has no table in colltune (known: " + known_list() + ")");
}

}  // namespace colltune::sim
