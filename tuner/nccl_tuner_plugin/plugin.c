/* libcolltune-nccl-tuner.so: colltune's NCCL tuner plugin. At communicator init it loads the
 * per-size table `colltune tune` wrote (nccl_tuner.conf); for every collective NCCL then asks,
 * the first matching row makes its (algorithm, protocol) the cheapest cell of NCCL's cost table
 * and, where the row says so, sets the channel count.
 *
 * Written in C against libc alone, so that it loads wherever NCCL runs: a C++ runtime linked in
 * statically pulled symbols of the build machine's glibc (arc4random@GLIBC_2.36,
 * _dl_find_object@GLIBC_2.35), and dlopen failed on Ubuntu 22.04 and RHEL 8/9, where NCCL then
 * runs without the tuner (docs/nccl-tuner-plugin.md; a test reads the symbol versions).
 *
 * Contract with NCCL, kept on every path:
 * - every entry point returns success: NCCL fails the communicator (init) or the collective
 *   (getCollInfo) on any other result, and a tuning table is never worth that;
 * - a table that cannot be used produces one warning and then no change at all; an empty table
 *   (colltune predicted NCCL's own choices best) one line at INFO; a table with no row for this
 *   communicator's shape (made for another job) one warning;
 * - a cell NCCL marked unusable (-1) is never made usable, and *nChannels is written only from
 *   a row that sets channels, never above NCCL's MAXCHANNELS. */
#include <stdlib.h>
#include <string.h>

#include "choice.h"
#include "nccl_tuner_abi.h"
#include "table.h"

static const char kPluginName[] = "colltune";

/* Through the logger NCCL hands the plugin at init, so the lines appear with NCCL's own and obey
 * NCCL_DEBUG / NCCL_DEBUG_SUBSYS. The format and arguments go to NCCL unformatted: NCCL drops
 * filtered lines before formatting, so a log call on the collective path costs a call. */
#define CT_LOG(logger, level, flags, ...)                                                \
  do {                                                                                   \
    if ((logger) != NULL) (logger)((level), (flags), "plugin.c", __LINE__, __VA_ARGS__); \
  } while (0)
/* Problems, and init-time facts (shown with NCCL_DEBUG=INFO and the default subsystems). */
#define CT_WARN(logger, ...) CT_LOG(logger, CT_LOG_WARN, CT_SUBSYS_INIT | CT_SUBSYS_TUNING, __VA_ARGS__)
#define CT_INFO_INIT(logger, ...) CT_LOG(logger, CT_LOG_INFO, CT_SUBSYS_INIT | CT_SUBSYS_TUNING, __VA_ARGS__)
/* Decisions (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING), and every call at TRACE. */
#define CT_INFO_TUNING(logger, ...) CT_LOG(logger, CT_LOG_INFO, CT_SUBSYS_TUNING, __VA_ARGS__)
#define CT_TRACE(logger, ...) CT_LOG(logger, CT_LOG_TRACE, CT_SUBSYS_TUNING, __VA_ARGS__)

/* Where the table comes from. COLLTUNE_TUNER_TABLE wins so that a job can point this plugin at
 * colltune's table while NCCL_TUNER_CONFIG_FILE stays set for something else; then
 * NCCL_TUNER_CONFIG_FILE (what nccl.env sets); then nccl_tuner.conf in the working directory,
 * the default of NCCL's example plugin. An empty variable counts as unset. */
typedef struct {
  const char* path;
  const char* origin;
} table_source;

static table_source find_table_source(void) {
  static const char* const kVars[] = {"COLLTUNE_TUNER_TABLE", "NCCL_TUNER_CONFIG_FILE"};
  for (size_t i = 0; i < sizeof kVars / sizeof kVars[0]; ++i) {
    const char* value = getenv(kVars[i]);
    if (value != NULL && *value != '\0') return (table_source){value, kVars[i]};
  }
  return (table_source){"nccl_tuner.conf", "the default; neither COLLTUNE_TUNER_TABLE nor NCCL_TUNER_CONFIG_FILE is set"};
}

/* One communicator's tuner state, read-only after init but for the report flags (they change
 * what is logged, never what is chosen). */
typedef struct {
  ct_logger log;
  ct_row* rows;           /* only the rows that fit this communicator's shape */
  size_t count;
  unsigned char* logged;  /* per row: its first decision was logged at INFO (atomic) */
} context;

/* Keeps the rows of `table` that fit the communicator, logging what was loaded. */
static void take_rows(context* ctx, ct_table* table, const char* path, const char* origin, size_t n_nodes,
                      size_t n_ranks) {
  const size_t loaded = table->count;
  if (loaded == 0) {
    CT_INFO_INIT(ctx->log, "colltune tuner: table %s (from %s) has no rows: colltune predicted NCCL's own choices "
                 "best for its job, so NCCL keeps them", path, origin);
    ct_free_table(table);
    return;
  }
  ctx->count = ct_rows_for(table->rows, table->count, n_nodes, n_ranks);
  if (ctx->count == 0) {
    CT_WARN(ctx->log, "colltune tuner: loaded %zu rows from %s (from %s); 0 apply to nNodes=%zu nRanks=%zu: the table "
            "was made for another job shape, and NCCL keeps its own choices", loaded, path, origin, n_nodes, n_ranks);
    ct_free_table(table);
    return;
  }
  ctx->rows = table->rows;
  ctx->logged = (unsigned char*)calloc(ctx->count, 1);
  if (ctx->logged == NULL) {
    CT_WARN(ctx->log, "colltune tuner: out of memory; NCCL keeps its own choices");
    ct_free_table(table);
    ctx->rows = NULL;
    ctx->count = 0;
    return;
  }
  CT_INFO_INIT(ctx->log, "colltune tuner: loaded %zu rows from %s (from %s); %zu apply to nNodes=%zu nRanks=%zu", loaded,
               path, origin, ctx->count, n_nodes, n_ranks);
}

static context* load_context(size_t n_ranks, size_t n_nodes, ct_logger log) {
  context* ctx = (context*)calloc(1, sizeof(context));
  if (ctx == NULL) {
    CT_WARN(log, "colltune tuner: out of memory; NCCL keeps its own choices");
    return NULL;
  }
  ctx->log = log;
  const table_source source = find_table_source();
  char path[512];
  ct_escape(source.path, strlen(source.path), path, sizeof path);
  ct_table table;
  ct_load_table(source.path, &table);
  if (table.error[0] != '\0')
    CT_WARN(log, "colltune tuner: table %s (from %s): %s; the table is ignored and NCCL keeps its own choices", path,
            source.origin, table.error);
  else
    take_rows(ctx, &table, path, source.origin, n_nodes, n_ranks);
  return ctx;
}

static ct_result init(size_t n_ranks, size_t n_nodes, ct_logger logger, void** ctx) {
  if (ctx != NULL) *ctx = load_context(n_ranks, n_nodes, logger);
  return CT_SUCCESS;
}

static const char* verdict_text(ct_verdict v) {
  switch (v) {
    case CT_APPLIED: return "preferred";
    case CT_CHANNELS_ONLY: return "algorithm left to NCCL";
    case CT_UNUSABLE: return "not usable here, NCCL keeps its choice";
    case CT_OUTSIDE_TABLE: return "not in this NCCL's cost table, NCCL keeps its choice";
  }
  return "?";
}

/* The first decision of each row at INFO (what the table does, without a line per collective),
 * every decision at TRACE. Both formats take the same arguments; the second ignores the
 * trailing channel count, which printf allows (excess arguments are evaluated and ignored). */
static void report(const context* ctx, const ct_row* row, const ct_query* q, ct_choice c) {
  const size_t index = (size_t)(row - ctx->rows);
  const int first = !__atomic_exchange_n(&ctx->logged[index], (unsigned char)1, __ATOMIC_RELAXED);
  const char* fmt = c.channels_set ? "colltune tuner: %s %llu bytes -> line %d: %s/%s %s, %d channels"
                                   : "colltune tuner: %s %llu bytes -> line %d: %s/%s %s, NCCL's channels";
  const char* algorithm = c.algorithm == CT_ANY ? "any" : ct_algorithm_name(c.algorithm);
  const char* protocol = c.protocol == CT_ANY ? "any" : ct_protocol_name(c.protocol);
  const unsigned long long bytes = (unsigned long long)q->bytes;
  if (first)
    CT_INFO_TUNING(ctx->log, fmt, ct_collective_name(q->collective), bytes, row->line, algorithm, protocol,
                   verdict_text(c.verdict), row->channels);
  CT_TRACE(ctx->log, fmt, ct_collective_name(q->collective), bytes, row->line, algorithm, protocol,
           verdict_text(c.verdict), row->channels);
}

static const ct_row* match(void* ctx, const ct_query* q) {
  const context* c = (const context*)ctx;
  return c == NULL ? NULL : ct_first_match(c->rows, c->count, q);
}

/* v4, v5 and v6 call this directly; v3 through an adapter without regBuff. */
static ct_result get_coll_info(void* ctx, int coll_type, size_t n_bytes, int num_pipe_ops, float** cost_table,
                               int num_algo, int num_proto, int reg_buff, int* n_channels) {
  const ct_query q = {coll_type, (uint64_t)n_bytes, num_pipe_ops, reg_buff};
  const ct_row* row = match(ctx, &q);
  if (row == NULL || cost_table == NULL || num_algo <= 0 || num_proto <= 0) return CT_SUCCESS;
  /* The cost table is float[num_algo][num_proto], contiguous, passed cast to float**. */
  const ct_choice c = ct_apply_row(row, (float*)(void*)cost_table, num_algo, num_proto, n_channels);
  report((const context*)ctx, row, &q, c);
  return CT_SUCCESS;
}

static ct_result get_coll_info_v3(void* ctx, int coll_type, size_t n_bytes, int num_pipe_ops, float** cost_table,
                                  int num_algo, int num_proto, int* n_channels) {
  return get_coll_info(ctx, coll_type, n_bytes, num_pipe_ops, cost_table, num_algo, num_proto, CT_ANY, n_channels);
}

static ct_result get_coll_info_v2(void* ctx, int coll_type, size_t n_bytes, int coll_net_support, int nvls_support,
                                  int num_pipe_ops, int* algorithm, int* protocol, int* n_channels) {
  (void)coll_net_support;
  (void)nvls_support;
  const ct_query q = {coll_type, (uint64_t)n_bytes, num_pipe_ops, CT_ANY};
  const ct_row* row = match(ctx, &q);
  if (row == NULL) return CT_SUCCESS;
  const ct_choice c = ct_apply_row_v2(row, algorithm, protocol, n_channels);
  report((const context*)ctx, row, &q, c);
  return CT_SUCCESS;
}

static ct_result init_v5(void** ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes, ct_logger logger,
                         ct_nvl_domain_info* nvl_domain_info, ct_tuner_constants* constants) {
  (void)comm_id;
  (void)nvl_domain_info;
  (void)constants; /* NCCL's model is left as it is */
  return init(n_ranks, n_nodes, logger, ctx);
}

static ct_result finalize(void* ctx) {
  context* c = (context*)ctx;
  if (c != NULL) {
    free(c->rows);
    free(c->logged);
    free(c);
  }
  return CT_SUCCESS;
}

/* The exported symbols, one per interface version NCCL looks up (nccl_tuner_abi.h). They are the
 * library's only dynamic symbols (exports.map). Not const: NCCL holds them as mutable. */
#define CT_EXPORT __attribute__((visibility("default")))
CT_EXPORT ct_tuner_v6 ncclTunerPlugin_v6 = {kPluginName, init_v5, get_coll_info, finalize, NULL};
CT_EXPORT ct_tuner_v5 ncclTunerPlugin_v5 = {kPluginName, init_v5, get_coll_info, finalize};
CT_EXPORT ct_tuner_v4 ncclTunerPlugin_v4 = {kPluginName, init, get_coll_info, finalize};
CT_EXPORT ct_tuner_v3 ncclTunerPlugin_v3 = {kPluginName, init, get_coll_info_v3, finalize};
CT_EXPORT ct_tuner_v2 ncclTunerPlugin_v2 = {kPluginName, init, get_coll_info_v2, finalize};
