#pragma once
// The NCCL tuner-plugin ABI, declared here because NCCL does not install its plugin headers.
// Written from NCCL's documented tuner interface (releases 2.21 to 2.30); only the layouts and
// values matter, so the names are colltune's own. Everything here must stay binary-identical to
// what NCCL expects: field order, pointer-sized fields, int-sized C enums.
//
// How NCCL finds a plugin: dlopen(NCCL_TUNER_PLUGIN) with RTLD_NOW | RTLD_LOCAL, then dlsym of
// one struct per interface version, newest first. Which symbols each release looks up:
//   2.21          ncclTunerPlugin_v2 only (2.19 and 2.20 look up a v1 this plugin does not offer)
//   2.22 .. 2.23  v3, then v2
//   2.24 .. 2.27  v4, v3, v2
//   2.28 .. 2.29  v5, v4, v3, v2
//   2.30          v6, v5, v4, v3, v2
// A plugin that exports all five is therefore served by the newest interface of each release.
// 2.21 and 2.22 pass 6 algorithm rows (no PAT); later releases 7: numAlgo says which.
#include <cstddef>
#include <cstdint>

namespace colltune::nccl_abi {

// ncclResult_t: a C enum, passed and returned as int.
using Result = int;
inline constexpr Result kSuccess = 0;

// ncclDebugLogLevel and the ncclDebugLogSubSys bit flags used with NCCL's logger.
enum LogLevel : int { kLogNone = 0, kLogVersion = 1, kLogWarn = 2, kLogInfo = 3, kLogAbort = 4, kLogTrace = 5 };
inline constexpr unsigned long kSubsysInit = 0x1;
inline constexpr unsigned long kSubsysTuning = 0x40;

// ncclDebugLogger_t: printf-style, filtered by NCCL_DEBUG / NCCL_DEBUG_SUBSYS inside NCCL.
using Logger = void (*)(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// ncclFunc_t values for the collectives a tuner is asked about.
enum Collective : int { kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4 };
inline constexpr int kNumCollectives = 5;

// Rows and columns of the cost table (NCCL_ALGO_* and NCCL_PROTO_*); -1 means "undefined".
enum Algorithm : int {
  kTree = 0, kRing = 1, kCollNetDirect = 2, kCollNetChain = 3, kNvls = 4, kNvlsTree = 5, kPat = 6
};
inline constexpr int kNumAlgorithms = 7;
enum Protocol : int { kLL = 0, kLL128 = 1, kSimple = 2 };
inline constexpr int kNumProtocols = 3;
inline constexpr int kUndefined = -1;
// A cost-table cell NCCL will not use (disabled or unsupported): NCCL_ALGO_PROTO_IGNORE.
inline constexpr float kIgnoredCost = -1.0f;

// v5/v6 init arguments NCCL passes by pointer. colltune reads neither; they are declared so the
// init signature is exact.
struct NvlDomainInfo {
  int domains;                // NVLink domains in the communicator
  int min_ranks_per_domain;
  int max_ranks_per_domain;
};
inline constexpr int kNumHwLinks = 3;      // NVLink, PCI, network
inline constexpr int kNumCompCaps = 4;     // Volta, Ampere, Hopper, Blackwell
inline constexpr int kNumTuningScales = 3; // 1 node, 2 nodes, 3+ nodes
struct TunerConstants {                   // NCCL's latency and bandwidth model, in/out
  double base_latency_us[kNumAlgorithms][kNumProtocols];
  double hw_latency_us[kNumHwLinks][kNumAlgorithms][kNumProtocols];
  double ll_max_bw[kNumCompCaps][kNumTuningScales];
  double per_channel_max_ring_ll128_bw[kNumCompCaps][kNumTuningScales];
  double per_channel_max_tree_ll128_bw[kNumCompCaps][kNumTuningScales];
  double per_channel_max_tree_bw[kNumCompCaps][kNumTuningScales];
  double per_channel_max_nvls_tree_bw[kNumCompCaps][kNumTuningScales];
};

// The cost table is a contiguous float[numAlgo][numProto] that NCCL casts to float** before the
// call; it is never an array of row pointers.
using CostTable = float**;

// v2: no cost table. The plugin names an algorithm and protocol (or leaves them -1) and NCCL
// uses them as given; collNetSupport and nvlsSupport are the only hints of what is usable.
struct TunerV2 {
  const char* name;
  Result (*init)(std::size_t n_ranks, std::size_t n_nodes, Logger log, void** context);
  Result (*get_coll_info)(void* context, int coll_type, std::size_t n_bytes, int coll_net_support,
                          int nvls_support, int num_pipe_ops, int* algorithm, int* protocol, int* n_channels);
  Result (*destroy)(void* context);
};

// v3: the plugin edits NCCL's cost table instead of naming a choice.
struct TunerV3 {
  const char* name;
  Result (*init)(std::size_t n_ranks, std::size_t n_nodes, Logger log, void** context);
  Result (*get_coll_info)(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops,
                          CostTable cost_table, int num_algo, int num_proto, int* n_channels);
  Result (*destroy)(void* context);
};

// The cost-table call with regBuff (whether the user buffers are registered), v4 onwards.
using GetCollInfoV4 = Result (*)(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops,
                                 CostTable cost_table, int num_algo, int num_proto, int reg_buff,
                                 int* n_channels);

struct TunerV4 {
  const char* name;
  Result (*init)(std::size_t n_ranks, std::size_t n_nodes, Logger log, void** context);
  GetCollInfoV4 get_coll_info;
  Result (*destroy)(void* context);
};

// v5: init gains the communicator id, NVLink domain info and NCCL's model constants; destroy is
// renamed finalize (same signature).
using InitV5 = Result (*)(void** context, std::uint64_t comm_id, std::size_t n_ranks, std::size_t n_nodes,
                          Logger log, NvlDomainInfo* nvl_domain_info, TunerConstants* constants);
struct TunerV5 {
  const char* name;
  InitV5 init;
  GetCollInfoV4 get_coll_info;
  Result (*finalize)(void* context);
};

// v6: v5 plus an optional chunk-size override (NULL keeps NCCL's chunk size).
struct TunerV6 {
  const char* name;
  InitV5 init;
  GetCollInfoV4 get_coll_info;
  Result (*finalize)(void* context);
  Result (*get_chunk_size)(void* context, int coll_type, std::size_t n_bytes, int algorithm, int protocol,
                           int n_channels, std::size_t* chunk_size);
};

}  // namespace colltune::nccl_abi
