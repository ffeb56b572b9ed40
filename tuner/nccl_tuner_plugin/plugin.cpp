// libcolltune-nccl-tuner.so: colltune's NCCL tuner plugin. At communicator init it loads the
// per-size table `colltune tune` wrote (nccl_tuner.conf); for every collective NCCL then asks,
// the first matching row makes its (algorithm, protocol) the cheapest cell of NCCL's cost table
// and, where the row says so, sets the channel count.
//
// Contract with NCCL, kept on every path:
// - every entry point returns success: NCCL fails the communicator (init) or the collective
//   (getCollInfo) on any other result, and a tuning table is never worth that;
// - a table that cannot be used produces one warning and then no change at all;
// - a cell NCCL marked unusable (-1) is never made usable, and *nChannels is written only from
//   a row that sets channels (NCCL applies any non-zero value).
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "choice.hpp"
#include "log.hpp"
#include "nccl_tuner_abi.h"
#include "table.hpp"

namespace colltune::nccl_plugin {
namespace {

using nccl_abi::Result;
using nccl_abi::kSuccess;

constexpr const char* kPluginName = "colltune";

// Where the table comes from. COLLTUNE_TUNER_TABLE wins so that a job can point this plugin at
// colltune's table while NCCL_TUNER_CONFIG_FILE stays set for something else; then
// NCCL_TUNER_CONFIG_FILE (what nccl.env sets); then nccl_tuner.conf in the working directory,
// the default of NCCL's example plugin. An empty variable counts as unset.
struct TableSource {
  std::string path;
  const char* origin;
};

TableSource table_source() {
  for (const char* var : {"COLLTUNE_TUNER_TABLE", "NCCL_TUNER_CONFIG_FILE"})
    if (const char* value = std::getenv(var); value != nullptr && *value != '\0') return {value, var};
  return {"nccl_tuner.conf", "the default; neither COLLTUNE_TUNER_TABLE nor NCCL_TUNER_CONFIG_FILE is set"};
}

// One communicator's tuner state, read-only after init but for the report flags (mutable: they
// change what is logged, never what is chosen).
struct Context {
  Context(nccl_abi::Logger logger, std::size_t nodes, std::size_t ranks) : log(logger), n_nodes(nodes), n_ranks(ranks) {}

  Log log;
  std::size_t n_nodes;
  std::size_t n_ranks;
  std::vector<Row> rows;                  // only the rows that fit this communicator's shape
  mutable std::vector<std::atomic<bool>> logged;  // per row: its first decision was logged at INFO
};

std::unique_ptr<Context> load_context(std::size_t n_ranks, std::size_t n_nodes, nccl_abi::Logger logger) {
  auto ctx = std::make_unique<Context>(logger, n_nodes, n_ranks);
  const TableSource source = table_source();
  const Table table = load_table(source.path);
  if (!table.error.empty()) {
    ctx->log.warn("colltune tuner: table %s (from %s): %s; the table is ignored and NCCL keeps its own choices",
                  source.path.c_str(), source.origin, table.error.c_str());
    return ctx;
  }
  ctx->rows = rows_for(table.rows, n_nodes, n_ranks);
  ctx->logged = std::vector<std::atomic<bool>>(ctx->rows.size());
  ctx->log.info_init("colltune tuner: loaded %zu rows from %s (from %s); %zu apply to nNodes=%zu nRanks=%zu",
                     table.rows.size(), source.path.c_str(), source.origin, ctx->rows.size(), n_nodes, n_ranks);
  return ctx;
}

Result init(std::size_t n_ranks, std::size_t n_nodes, nccl_abi::Logger logger, void** context) noexcept {
  if (context == nullptr) return kSuccess;
  *context = nullptr;
  try {
    *context = load_context(n_ranks, n_nodes, logger).release();
  } catch (const std::exception& e) {  // allocation only; NCCL keeps its choices (null context)
    Log(logger).warn("colltune tuner: cannot load the table (%s); NCCL keeps its own choices", e.what());
  } catch (...) {
    Log(logger).warn("colltune tuner: cannot load the table; NCCL keeps its own choices");
  }
  return kSuccess;
}

const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::applied: return "preferred";
    case Verdict::channels_only: return "algorithm left to NCCL";
    case Verdict::unusable: return "not usable here, NCCL keeps its choice";
    case Verdict::outside_table: return "not in this NCCL's cost table, NCCL keeps its choice";
  }
  return "?";
}

// The first decision of each row at INFO (what the table does, without a line per collective),
// every decision at TRACE.
void report(const Context& ctx, const Row& row, const Query& q, const Choice& c) {
  const std::size_t index = static_cast<std::size_t>(&row - ctx.rows.data());
  const bool first = !ctx.logged[index].exchange(true, std::memory_order_relaxed);
  // Both formats take the same arguments; the second ignores the trailing channel count, which
  // printf allows (excess arguments are evaluated and ignored).
  const char* fmt = c.channels_set ? "colltune tuner: %s %llu bytes -> line %d: %s/%s %s, %d channels"
                                   : "colltune tuner: %s %llu bytes -> line %d: %s/%s %s, NCCL's channels";
  const auto log = [&](auto emit) {
    emit(Format(fmt), collective_name(q.collective), static_cast<unsigned long long>(q.bytes), row.line,
         c.algorithm == kAny ? "any" : algorithm_name(c.algorithm), c.protocol == kAny ? "any" : protocol_name(c.protocol),
         verdict_text(c.verdict), row.channels);
  };
  if (first) log([&](Format f, auto... a) { ctx.log.info_tuning(f, a...); });
  log([&](Format f, auto... a) { ctx.log.trace(f, a...); });
}

const Row* match(void* context, const Query& q) {
  const auto* ctx = static_cast<const Context*>(context);
  return ctx == nullptr ? nullptr : first_match(ctx->rows, q);
}

// v4, v5 and v6 call this directly; v3 through an adapter without regBuff.
Result get_coll_info(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops, float** cost_table,
                     int num_algo, int num_proto, int reg_buff, int* n_channels) noexcept {
  const Query q{coll_type, n_bytes, num_pipe_ops, reg_buff};
  const Row* row = match(context, q);
  if (row == nullptr || cost_table == nullptr || num_algo <= 0 || num_proto <= 0) return kSuccess;
  const Choice c = apply_row(*row, CostTable(cost_table, num_algo, num_proto), n_channels);
  report(*static_cast<const Context*>(context), *row, q, c);
  return kSuccess;
}

Result get_coll_info_v3(void* context, int coll_type, std::size_t n_bytes, int num_pipe_ops, float** cost_table,
                        int num_algo, int num_proto, int* n_channels) noexcept {
  return get_coll_info(context, coll_type, n_bytes, num_pipe_ops, cost_table, num_algo, num_proto, kAny, n_channels);
}

Result get_coll_info_v2(void* context, int coll_type, std::size_t n_bytes, int /*coll_net_support*/,
                        int /*nvls_support*/, int num_pipe_ops, int* algorithm, int* protocol,
                        int* n_channels) noexcept {
  const Query q{coll_type, n_bytes, num_pipe_ops, kAny};
  const Row* row = match(context, q);
  if (row == nullptr) return kSuccess;
  const Choice c = apply_row_v2(*row, algorithm, protocol, n_channels);
  report(*static_cast<const Context*>(context), *row, q, c);
  return kSuccess;
}

Result init_v5(void** context, std::uint64_t /*comm_id*/, std::size_t n_ranks, std::size_t n_nodes,
               nccl_abi::Logger logger, nccl_abi::NvlDomainInfo* /*nvl_domain_info*/,
               nccl_abi::TunerConstants* /*constants: NCCL's model is left as it is*/) noexcept {
  return init(n_ranks, n_nodes, logger, context);
}

Result finalize(void* context) noexcept {
  delete static_cast<Context*>(context);
  return kSuccess;
}

}  // namespace
}  // namespace colltune::nccl_plugin

// The exported symbols, one per interface version NCCL looks up (nccl_tuner_abi.h). They are
// the library's only dynamic symbols (exports.map). Not const: NCCL holds them as mutable.
namespace np = colltune::nccl_plugin;
#define COLLTUNE_PLUGIN_EXPORT __attribute__((visibility("default")))
extern "C" {
COLLTUNE_PLUGIN_EXPORT colltune::nccl_abi::TunerV6 ncclTunerPlugin_v6{np::kPluginName, np::init_v5, np::get_coll_info,
                                                                     np::finalize, nullptr};
COLLTUNE_PLUGIN_EXPORT colltune::nccl_abi::TunerV5 ncclTunerPlugin_v5{np::kPluginName, np::init_v5, np::get_coll_info,
                                                                     np::finalize};
COLLTUNE_PLUGIN_EXPORT colltune::nccl_abi::TunerV4 ncclTunerPlugin_v4{np::kPluginName, np::init, np::get_coll_info,
                                                                     np::finalize};
COLLTUNE_PLUGIN_EXPORT colltune::nccl_abi::TunerV3 ncclTunerPlugin_v3{np::kPluginName, np::init,
                                                                     np::get_coll_info_v3, np::finalize};
COLLTUNE_PLUGIN_EXPORT colltune::nccl_abi::TunerV2 ncclTunerPlugin_v2{np::kPluginName, np::init,
                                                                     np::get_coll_info_v2, np::finalize};
}
