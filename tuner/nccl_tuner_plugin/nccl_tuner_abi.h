/* The NCCL tuner-plugin ABI, declared here because NCCL does not install its plugin headers.
 * Written from NCCL's documented tuner interface (releases 2.21 to 2.30); only the layouts and
 * values matter, so the names are colltune's own. Everything here must stay binary-identical to
 * what NCCL expects: field order, pointer-sized fields, int-sized C enums.
 *
 * C, so that the plugin needs no C++ runtime (docs/nccl-tuner-plugin.md, "Build, install, use"); the
 * C++ names at the end are for the tests that load the plugin as NCCL does.
 *
 * How NCCL finds a plugin: dlopen(NCCL_TUNER_PLUGIN) with RTLD_NOW | RTLD_LOCAL, then dlsym of
 * one struct per interface version, newest first. Which symbols each release looks up:
 *   2.21          ncclTunerPlugin_v2 only (2.19 and 2.20 look up a v1 this plugin does not offer)
 *   2.22 .. 2.23  v3, then v2
 *   2.24 .. 2.27  v4, v3, v2
 *   2.28 .. 2.29  v5, v4, v3, v2
 *   2.30          v6, v5, v4, v3, v2
 * A plugin that exports all five is therefore served by the newest interface of each release.
 * 2.21 and 2.22 pass 6 algorithm rows (no PAT); later releases 7: numAlgo says which. */
#ifndef COLLTUNE_NCCL_TUNER_ABI_H
#define COLLTUNE_NCCL_TUNER_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ncclResult_t: a C enum, passed and returned as int. */
typedef int ct_result;
#define CT_SUCCESS 0

/* ncclDebugLogLevel and the ncclDebugLogSubSys bit flags used with NCCL's logger. */
typedef enum {
  CT_LOG_NONE = 0,
  CT_LOG_VERSION = 1,
  CT_LOG_WARN = 2,
  CT_LOG_INFO = 3,
  CT_LOG_ABORT = 4,
  CT_LOG_TRACE = 5
} ct_log_level;
#define CT_SUBSYS_INIT 0x1UL
#define CT_SUBSYS_TUNING 0x40UL

/* ncclDebugLogger_t: printf-style, filtered by NCCL_DEBUG / NCCL_DEBUG_SUBSYS inside NCCL. */
typedef void (*ct_logger)(ct_log_level level, unsigned long flags, const char* file, int line, const char* fmt, ...);

/* ncclFunc_t values for the collectives a tuner is asked about. */
enum { CT_BROADCAST = 0, CT_REDUCE = 1, CT_ALLGATHER = 2, CT_REDUCESCATTER = 3, CT_ALLREDUCE = 4, CT_NUM_COLLECTIVES = 5 };

/* Rows and columns of the cost table (NCCL_ALGO_* and NCCL_PROTO_*); -1 means "undefined". */
enum {
  CT_TREE = 0,
  CT_RING = 1,
  CT_COLLNET_DIRECT = 2,
  CT_COLLNET_CHAIN = 3,
  CT_NVLS = 4,
  CT_NVLS_TREE = 5,
  CT_PAT = 6,
  CT_NUM_ALGORITHMS = 7
};
enum { CT_LL = 0, CT_LL128 = 1, CT_SIMPLE = 2, CT_NUM_PROTOCOLS = 3 };
#define CT_UNDEFINED (-1)
/* A cost-table cell NCCL will not use (disabled or unsupported): NCCL_ALGO_PROTO_IGNORE. */
#define CT_IGNORED_COST (-1.0f)
/* NCCL's MAXCHANNELS (src/include/device.h): it copies a tuner's channel count into every task
 * and loops over that many channel ids, so a larger count is never passed on. */
#define CT_MAX_CHANNELS 64

/* v5/v6 init arguments NCCL passes by pointer. colltune reads neither; they are declared so the
 * init signature is exact. */
typedef struct {
  int domains; /* NVLink domains in the communicator */
  int min_ranks_per_domain;
  int max_ranks_per_domain;
} ct_nvl_domain_info;
#define CT_NUM_HW_LINKS 3      /* NVLink, PCI, network */
#define CT_NUM_COMP_CAPS 4     /* Volta, Ampere, Hopper, Blackwell */
#define CT_NUM_TUNING_SCALES 3 /* 1 node, 2 nodes, 3+ nodes */
typedef struct {               /* NCCL's latency and bandwidth model, in/out */
  double base_latency_us[CT_NUM_ALGORITHMS][CT_NUM_PROTOCOLS];
  double hw_latency_us[CT_NUM_HW_LINKS][CT_NUM_ALGORITHMS][CT_NUM_PROTOCOLS];
  double ll_max_bw[CT_NUM_COMP_CAPS][CT_NUM_TUNING_SCALES];
  double per_channel_max_ring_ll128_bw[CT_NUM_COMP_CAPS][CT_NUM_TUNING_SCALES];
  double per_channel_max_tree_ll128_bw[CT_NUM_COMP_CAPS][CT_NUM_TUNING_SCALES];
  double per_channel_max_tree_bw[CT_NUM_COMP_CAPS][CT_NUM_TUNING_SCALES];
  double per_channel_max_nvls_tree_bw[CT_NUM_COMP_CAPS][CT_NUM_TUNING_SCALES];
} ct_tuner_constants;

/* The cost table is a contiguous float[numAlgo][numProto] that NCCL casts to float** before the
 * call; it is never an array of row pointers. */
typedef float** ct_cost_table;

typedef ct_result (*ct_init_fn)(size_t n_ranks, size_t n_nodes, ct_logger log, void** context);

/* v2: no cost table. The plugin names an algorithm and protocol (or leaves them -1) and NCCL
 * uses them as given; collNetSupport and nvlsSupport are the only hints of what is usable. */
typedef struct {
  const char* name;
  ct_init_fn init;
  ct_result (*get_coll_info)(void* context, int coll_type, size_t n_bytes, int coll_net_support, int nvls_support,
                             int num_pipe_ops, int* algorithm, int* protocol, int* n_channels);
  ct_result (*destroy)(void* context);
} ct_tuner_v2;

/* v3: the plugin edits NCCL's cost table instead of naming a choice. */
typedef struct {
  const char* name;
  ct_init_fn init;
  ct_result (*get_coll_info)(void* context, int coll_type, size_t n_bytes, int num_pipe_ops, ct_cost_table cost_table,
                             int num_algo, int num_proto, int* n_channels);
  ct_result (*destroy)(void* context);
} ct_tuner_v3;

/* The cost-table call with regBuff (whether the user buffers are registered), v4 onwards. */
typedef ct_result (*ct_get_coll_info_v4)(void* context, int coll_type, size_t n_bytes, int num_pipe_ops,
                                         ct_cost_table cost_table, int num_algo, int num_proto, int reg_buff,
                                         int* n_channels);

typedef struct {
  const char* name;
  ct_init_fn init;
  ct_get_coll_info_v4 get_coll_info;
  ct_result (*destroy)(void* context);
} ct_tuner_v4;

/* v5: init gains the communicator id, NVLink domain info and NCCL's model constants; destroy is
 * renamed finalize (same signature). */
typedef ct_result (*ct_init_v5_fn)(void** context, uint64_t comm_id, size_t n_ranks, size_t n_nodes, ct_logger log,
                                   ct_nvl_domain_info* nvl_domain_info, ct_tuner_constants* constants);
typedef struct {
  const char* name;
  ct_init_v5_fn init;
  ct_get_coll_info_v4 get_coll_info;
  ct_result (*finalize)(void* context);
} ct_tuner_v5;

/* v6: v5 plus an optional chunk-size override (NULL keeps NCCL's chunk size). */
typedef struct {
  const char* name;
  ct_init_v5_fn init;
  ct_get_coll_info_v4 get_coll_info;
  ct_result (*finalize)(void* context);
  ct_result (*get_chunk_size)(void* context, int coll_type, size_t n_bytes, int algorithm, int protocol,
                              int n_channels, size_t* chunk_size);
} ct_tuner_v6;

#ifdef __cplusplus
}  /* extern "C" */

/* The same declarations under C++ names, for the tests that dlopen the plugin. */
namespace colltune::nccl_abi {
using Result = ct_result;
inline constexpr Result kSuccess = CT_SUCCESS;
using LogLevel = ct_log_level;
inline constexpr LogLevel kLogNone = CT_LOG_NONE, kLogVersion = CT_LOG_VERSION, kLogWarn = CT_LOG_WARN,
                          kLogInfo = CT_LOG_INFO, kLogAbort = CT_LOG_ABORT, kLogTrace = CT_LOG_TRACE;
inline constexpr unsigned long kSubsysInit = CT_SUBSYS_INIT, kSubsysTuning = CT_SUBSYS_TUNING;
using Logger = ct_logger;
inline constexpr int kBroadcast = CT_BROADCAST, kReduce = CT_REDUCE, kAllGather = CT_ALLGATHER,
                     kReduceScatter = CT_REDUCESCATTER, kAllReduce = CT_ALLREDUCE, kNumCollectives = CT_NUM_COLLECTIVES;
inline constexpr int kTree = CT_TREE, kRing = CT_RING, kCollNetDirect = CT_COLLNET_DIRECT,
                     kCollNetChain = CT_COLLNET_CHAIN, kNvls = CT_NVLS, kNvlsTree = CT_NVLS_TREE, kPat = CT_PAT,
                     kNumAlgorithms = CT_NUM_ALGORITHMS;
inline constexpr int kLL = CT_LL, kLL128 = CT_LL128, kSimple = CT_SIMPLE, kNumProtocols = CT_NUM_PROTOCOLS;
inline constexpr int kUndefined = CT_UNDEFINED;
inline constexpr float kIgnoredCost = CT_IGNORED_COST;
inline constexpr int kMaxChannels = CT_MAX_CHANNELS;
using NvlDomainInfo = ct_nvl_domain_info;
using TunerConstants = ct_tuner_constants;
using CostTable = ct_cost_table;
using TunerV2 = ct_tuner_v2;
using TunerV3 = ct_tuner_v3;
using TunerV4 = ct_tuner_v4;
using TunerV5 = ct_tuner_v5;
using TunerV6 = ct_tuner_v6;
}  // namespace colltune::nccl_abi
#endif

#endif /* COLLTUNE_NCCL_TUNER_ABI_H */
