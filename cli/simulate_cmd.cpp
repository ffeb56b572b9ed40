// colltune simulate: predicted allreduce time on a topology, by the analytical model or the
// event simulator, for one size or an nccl-tests style sweep (x2 per row).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "colltune/bench/bench.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/trace.hpp"
#include "colltune/topology/topology.hpp"
#include "commands.hpp"

namespace colltune::cli {
namespace {

struct SimulateArgs {
  std::string topology;
  std::string algo = "ring";
  std::string bytes;
  std::string engine = "analytic";
  std::string inner = "ring";
  std::string chunk;
  std::string trace;
  int ranks = 0;  // 0 = all of the topology's ranks
  bool fp16 = false;
  bool json = false;
};

struct Row {
  std::string algorithm;
  std::size_t bytes = 0;
  double time_us = 0;
};

constexpr std::size_t kElem = 4;  // fp32 payloads, as nccl-tests' default

std::size_t checked_size(const std::string& text, const char* what) {
  const std::size_t bytes = parse_size(text, what);
  if (bytes > limits::kMaxBytesPerRank)
    limits::exceeded(std::string(what) + " " + text, "1 PiB per rank", limits::kMaxBytesReason);
  return bytes;
}

// Sizes of `--bytes SIZE` or `--bytes MIN:MAX` (MIN, 2 MIN, ... <= MAX), rounded down to whole
// fp32 elements.
std::vector<std::size_t> sizes_of(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {checked_size(text, "--bytes") / kElem * kElem};
  const std::size_t lo = checked_size(text.substr(0, colon), "--bytes MIN");
  const std::size_t hi = checked_size(text.substr(colon + 1), "--bytes MAX");
  if (lo == 0) throw Error("--bytes '" + text + "': MIN must be positive for a x2 sweep");
  if (lo > hi) throw Error("--bytes '" + text + "': MIN is larger than MAX");
  std::vector<std::size_t> sizes;
  for (std::size_t s = lo;; s *= 2) {
    sizes.push_back(s / kElem * kElem);
    if (s > hi / 2) break;
  }
  return sizes;
}

// --chunk is bytes, as everywhere, in whole fp32 elements.
std::size_t chunk_elements(const std::string& text) {
  const std::size_t bytes = parse_size(text, "--chunk", BareNumber::refused);
  if (bytes % kElem != 0)
    throw Error("--chunk " + text + ": " + std::to_string(bytes) + " B is not a whole number of fp32 elements (" +
                std::to_string(kElem) + " B each)");
  return bytes / kElem;
}

class Predictor {
 public:
  Predictor(const SimulateArgs& args, sim::Engine engine, const topo::Topology& topology)
      : args_(args), engine_(engine), topology_(topology),
        model_(topology, args.ranks > 0 ? args.ranks : topology.num_ranks()) {
    options_.inner = args.inner;
    if (!args.chunk.empty()) options_.chunk_elems = chunk_elements(args.chunk);
  }
  int ranks() const { return model_.layout.nranks(); }

  // Time of one algorithm; +infinity when it does not apply.
  double time_us(const coll::Algorithm& algo, std::size_t bytes, bool trace) const {
    const sim::CollectiveRequest req = request(algo.id, bytes);
    if (engine_ == sim::Engine::analytic) return model_.time_us(algo, req);
    const sim::WireRequest wire = sim::wire_request(req);
    if (algo.not_applicable && algo.not_applicable(model_.layout, wire.bytes / wire.elem_size, options_))
      return std::numeric_limits<double>::infinity();
    sim::EventSimOptions opts;
    opts.record_trace = trace;
    const sim::EventSimResult result = sim::simulate_collective(model_, topology_, req, opts);
    if (trace) sim::write_chrome_trace(args_.trace, result, ranks(), algo.id + " on " + topology_.name);
    return result.time_us;
  }

  Row predict(std::size_t bytes) const {
    if (args_.algo != "auto") {
      const coll::Algorithm& algo = coll::find_algorithm(args_.algo);
      const double t = time_us(algo, bytes, !args_.trace.empty());
      if (!std::isfinite(t)) throw Error("--algo " + args_.algo + ": " + why_not(algo, bytes));
      return {algo.id, bytes, t};
    }
    Row best{"", bytes, std::numeric_limits<double>::infinity()};
    for (const coll::Algorithm& algo : coll::algorithms()) {
      if (algo.collective != coll::Collective::allreduce) continue;
      const double t = time_us(algo, bytes, false);
      if (sim::clearly_faster(t, best.time_us)) best = {algo.id, bytes, t};
    }
    if (best.algorithm.empty()) throw Error("--algo auto: no allreduce algorithm applies to this topology");
    if (!args_.trace.empty()) time_us(coll::find_algorithm(best.algorithm), bytes, true);
    return best;
  }

 private:
  sim::CollectiveRequest request(const std::string& id, std::size_t bytes) const {
    sim::CollectiveRequest req;
    req.algorithm = id;
    req.bytes = bytes;
    req.elem_size = kElem;
    req.fp16_compress = args_.fp16;
    req.options = options_;
    return req;
  }
  std::string why_not(const coll::Algorithm& algo, std::size_t bytes) const {
    const auto reason = algo.not_applicable ? algo.not_applicable(model_.layout, bytes / kElem, options_) : std::nullopt;
    return reason ? *reason : "not applicable to " + std::to_string(ranks()) + " ranks";
  }

  const SimulateArgs& args_;
  sim::Engine engine_;
  const topo::Topology& topology_;
  sim::CostModel model_;
  coll::AlgoOptions options_;
};

nlohmann::json row_json(const Row& row, const SimulateArgs& args, int ranks) {
  const double algbw = gbps(row.bytes, row.time_us);
  nlohmann::json j{{"algorithm", row.algorithm},
                   {"ranks", ranks},
                   {"bytes", row.bytes},
                   {"time_us", row.time_us},
                   {"algbw_gbps", algbw},
                   {"busbw_gbps", algbw * bench::allreduce_busbw_factor(ranks)},
                   {"engine", args.engine}};
  j["fp16_compress"] = args.fp16;
  if (args.algo == "auto") j["selected_by"] = "auto";
  return j;
}

void print_table(const std::vector<Row>& rows, const SimulateArgs& args, const topo::Topology& topology, int ranks) {
  std::printf("# colltune simulate: allreduce on %s, %d ranks, engine %s%s\n", topology.name.c_str(), ranks,
              args.engine.c_str(), args.fp16 ? ", fp16 compression" : "");
  if (args.algo == "auto") std::printf("# algorithm: auto (the fastest applicable one for each size)\n");
  std::printf("#%13s %12s %7s %13s %12s %12s %12s\n", "size(B)", "count", "type", "algorithm", "time(us)",
              "algbw(GB/s)", "busbw(GB/s)");
  for (const Row& row : rows) {
    const double algbw = gbps(row.bytes, row.time_us);
    std::printf("%14zu %12zu %7s %13s %12.2f %12.2f %12.2f\n", row.bytes, row.bytes / kElem, "float",
                row.algorithm.c_str(), row.time_us, algbw, algbw * bench::allreduce_busbw_factor(ranks));
  }
  if (!args.trace.empty()) std::printf("# trace written to %s\n", args.trace.c_str());
}

void run_simulate(const SimulateArgs& args) {
  if (args.algo != "auto") coll::find_algorithm(args.algo);  // unknown ids fail before any work
  const sim::Engine engine = sim::parse_engine(args.engine);
  const std::vector<std::size_t> sizes = sizes_of(args.bytes);
  if (!args.trace.empty() && engine != sim::Engine::event) throw Error("--trace needs --engine event");
  if (!args.trace.empty() && sizes.size() > 1) throw Error("--trace needs a single --bytes size, not a sweep");
  const topo::Topology topology = topo::load_topology(args.topology);
  const Predictor predictor(args, engine, topology);
  std::vector<Row> rows;
  for (std::size_t bytes : sizes) rows.push_back(predictor.predict(bytes));
  if (!args.json) return print_table(rows, args, topology, predictor.ranks());
  nlohmann::json out = nlohmann::json::array();
  for (const Row& row : rows) out.push_back(row_json(row, args, predictor.ranks()));
  std::cout << (sizes.size() == 1 && args.bytes.find(':') == std::string::npos ? out[0] : out).dump() << "\n";
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand("simulate", "Predict an allreduce's time on a topology (analytic model or event simulation)");
  cmd->add_option("--topology", args->topology, "Preset spec (dgx-h100:nodes=4), topology JSON or NCCL XML")->required();
  cmd->add_option("--algo", args->algo, "ring|tree|dbtree|rhd|hierarchical|... or auto (fastest per size)");
  cmd->add_option("--bytes", args->bytes, "Payload per rank: SIZE, or MIN:MAX to sweep x2 (B, KiB, MiB, GiB)")->required();
  cmd->add_option("--engine", args->engine, "analytic (closed form) or event (discrete-event simulation)");
  cmd->add_option("--ranks", args->ranks, "Use only the first N ranks of the topology (default: all)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--inner", args->inner, "hierarchical: the algorithm across hosts");
  cmd->add_option("--chunk", args->chunk, "Pipelining chunk, bytes with a unit (e.g. 1MiB; default: one chunk per block)");
  cmd->add_flag("--fp16-compress", args->fp16, "Compress fp32 payloads to fp16 on the wire");
  cmd->add_option("--trace", args->trace, "Write a Chrome trace (Perfetto) of the event simulation to FILE");
  cmd->add_flag("--json", args->json, "Print JSON on one line (an object, or an array for a sweep)");
  cmd->callback([args] { run_simulate(*args); });
}

}  // namespace colltune::cli
