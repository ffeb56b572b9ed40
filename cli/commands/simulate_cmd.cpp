// colltune simulate: predicted allreduce time on a topology, by the analytical model or the
// event simulator, for one size or an nccl-tests style sweep (x2 per row); with --algo nccl,
// NCCL's own choice and time per size from NCCL's model (simulate_nccl.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "colltune/common/finite.hpp"
#include "colltune/bench/bench.hpp"
#include "colltune/calibrate/measurements.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/trace.hpp"
#include "colltune/topology/subset.hpp"
#include "colltune/topology/topology.hpp"
#include "commands.hpp"
#include "options/options.hpp"
#include "commands/simulate_bottleneck.hpp"
#include "commands/simulate_nccl.hpp"

namespace colltune::cli {
namespace {

struct SimulateArgs {
  std::string topology;
  std::string algo = "ring";
  std::string bytes;
  std::string min_bytes, max_bytes;  // -b/-e, as bench and nccl-tests take them
  std::size_t factor = 2;            // -f
  std::string engine;                // empty: analytic, or event with --trace
  std::string inner;  // empty: not given (ring)
  std::string chunk;
  std::string trace;
  std::vector<std::string> late;  // --late WHO:TIME
  int ranks = 0;  // 0 = all of the topology's ranks
  bool fp16 = false;
  JsonOutput json;
  NcclSimulateOptions nccl;  // --algo nccl only
  std::string collective;    // --algo nccl: --collective (default allreduce)
};

constexpr const char* kNcclAlgo = "nccl";  // NCCL's own choice per size, not a registry entry

struct Row {
  std::string algorithm;
  std::size_t bytes = 0;
  double time_us = 0;
  double on_time_us = -1;  // --late: the same collective with every rank on time
  std::string protocol;  // --algo nccl: NCCL's protocol and channel count
  int channels = 0;
  double nccl_time_us = -1;  // --algo nccl: NCCL's own predicted time for its pick
  std::string schedule;      // --algo nccl: the colltune schedule that priced it ("": NCCL's time stands in)
  std::string fallback;      // --algo nccl: why NCCL's own time stands in
  sim::Bottleneck bottleneck = {};  // what limits it (simulate_bottleneck.hpp)
};

constexpr std::size_t kElem = 4;  // fp32 payloads, as nccl-tests' default

std::size_t checked_size(const std::string& text, const char* what) {
  const std::size_t bytes = parse_size(text, what);
  if (bytes > limits::kMaxBytesPerRank)
    limits::exceeded(std::string(what) + " " + text, "1 PiB per rank", limits::kMaxBytesReason);
  return bytes;
}

// -b MIN [-e MAX] [-f FACTOR], as bench and nccl-tests: MIN, MIN*F, ... <= MAX.
std::vector<std::size_t> factor_sizes(const SimulateArgs& a) {
  const std::size_t lo = checked_size(a.min_bytes, "-b/--minbytes");
  const std::size_t hi = a.max_bytes.empty() ? lo : checked_size(a.max_bytes, "-e/--maxbytes");
  // nccl-tests' rounding down to whole elements, but never to an empty payload.
  if (lo < kElem) parse::refuse("-b/--minbytes", a.min_bytes, "must be at least one fp32 element (4 B)");
  if (lo > hi) throw Error("-b/--minbytes " + a.min_bytes + " is larger than -e/--maxbytes " + a.max_bytes);
  if (a.factor < 2) throw Error("-f/--stepfactor " + std::to_string(a.factor) + ": must be at least 2");
  std::vector<std::size_t> sizes;
  for (std::size_t s = lo;; s *= a.factor) {
    sizes.push_back(s / kElem * kElem);
    if (s > hi / a.factor) break;
  }
  return sizes;
}

std::vector<std::size_t> sizes_of(const SimulateArgs& a) {
  if (!a.bytes.empty() && !a.min_bytes.empty()) throw Error("--bytes and -b/--minbytes: give one of them");
  if (!a.bytes.empty()) return fp32_sizes(a.bytes, "--bytes");
  if (!a.min_bytes.empty()) return factor_sizes(a);
  if (!a.max_bytes.empty()) throw Error("-e/--maxbytes needs -b/--minbytes");
  throw Error("--bytes (or -b/-e/-f) is required");
}

// nccl-tests' bus bandwidth factor of the collective: allreduce 2(n-1)/n, reduce-scatter and
// allgather (n-1)/n.
double busbw_factor(coll::Collective c, int ranks) {
  const double one_way = ranks > 1 ? static_cast<double>(ranks - 1) / ranks : 0.0;
  return c == coll::Collective::allreduce ? 2 * one_way : one_way;
}

bool in_switch(const std::string& algo) {
  return algo != "auto" && algo != "nccl" && coll::find_algorithm(algo).in_switch;
}

// An in-switch algorithm runs on the machine plus its switches as the last ranks: every host's
// NVSwitch (nccl_nvls, nccl_nvls_tree) or the network's SHARP switch (nccl_collnet).
topo::Topology machine_for(const SimulateArgs& args, topo::Topology topology) {
  if (!in_switch(args.algo)) return topology;
  if (args.ranks > 0)
    throw Error("--ranks: not with --algo " + args.algo + " (it runs on every GPU of the machine and its switches)");
  try {
    if (coll::find_algorithm(args.algo).in_network_switch) return topo::with_sharp_switch(topology);
    return topo::with_nvls_switch(topology);
  } catch (const Error& e) {
    throw Error("--algo " + args.algo + ": not applicable (" + e.what() + ")");
  }
}

// The collective the rows are of: the algorithm's (auto is allreduce; nccl --collective's).
coll::Collective collective_of(const SimulateArgs& args) {
  if (args.algo == "nccl" && !args.collective.empty()) return tuner::parse_collective_name(args.collective);
  if (args.algo == "auto" || args.algo == "nccl") return coll::Collective::allreduce;
  return coll::find_algorithm(args.algo).collective;
}

sim::NcclColl nccl_coll_of(coll::Collective c) {
  return c == coll::Collective::allgather        ? sim::NcclColl::allgather
         : c == coll::Collective::reduce_scatter ? sim::NcclColl::reduce_scatter
                                                 : sim::NcclColl::allreduce;
}

class Predictor {
 public:
  Predictor(const SimulateArgs& args, sim::Engine engine, const topo::Topology& topology)
      : args_(args), engine_(engine), topology_(topology),
        model_(topology, args.ranks > 0 ? args.ranks : topology.num_ranks()) {
    if (!args.inner.empty()) options_.inner = args.inner;
    if (!args.chunk.empty()) options_.chunk_elems = chunk_elements(args.chunk, kElem, "fp32");
  }
  int ranks() const { return model_.layout.nranks(); }
  const sim::CostModel& model() const { return model_; }
  // The GPUs: an in-switch algorithm's last ranks are switches (Algorithm::in_switch), one per
  // host (every host's NVSwitch) or one for the machine (the network's SHARP switch).
  int data_ranks() const {
    if (!in_switch(args_.algo)) return ranks();
    const int switches = coll::find_algorithm(args_.algo).in_network_switch ? 1 : model_.layout.nhosts();
    return ranks() - switches;
  }
  // --late: when each rank starts (empty: all at 0).
  void set_starts(std::vector<double> starts) { starts_ = std::move(starts); }
  // The Chrome trace of the last traced run (--trace), for the output files.
  const std::string& trace() const { return trace_; }

  // Time of one algorithm; +infinity when it does not apply. `late` false ignores --late (the
  // on-time run beside it).
  double time_us(const coll::Algorithm& algo, std::size_t bytes, bool trace, bool late = true) const {
    const sim::CollectiveRequest req = request(algo.id, bytes);
    if (engine_ == sim::Engine::analytic) return model_.time_us(algo, req);
    const sim::WireRequest wire = sim::wire_request(req);
    if (algo.not_applicable && algo.not_applicable(model_.layout, wire.bytes / wire.elem_size, options_))
      return std::numeric_limits<double>::infinity();
    sim::EventSimOptions opts;
    opts.record_trace = trace;
    if (late) opts.rank_start_us = starts_;
    const sim::EventSimResult result = sim::simulate_collective(model_, topology_, req, opts);
    if (trace) trace_ = sim::chrome_trace_json(result, ranks(), algo.id + " on " + topology_.name);
    return result.time_us;
  }

  sim::CollectiveRequest request(const std::string& id, std::size_t bytes) const {
    sim::CollectiveRequest req;
    req.algorithm = id;
    req.bytes = bytes;
    req.elem_size = kElem;
    req.fp16_compress = args_.fp16;
    req.options = options_;
    return req;
  }

  Row predict(std::size_t bytes) const {
    if (args_.algo != "auto") {
      const coll::Algorithm& algo = coll::find_algorithm(args_.algo);
      const double t = time_us(algo, bytes, !args_.trace.empty());
      if (!std::isfinite(t)) throw Error("--algo " + args_.algo + ": " + why_not(algo, bytes));
      return with_on_time({algo.id, bytes, t, -1, {}, 0, -1, {}, {}, {}});
    }
    Row best{"", bytes, std::numeric_limits<double>::infinity(), -1, {}, 0, -1, {}, {}, {}};
    for (const coll::Algorithm& algo : coll::algorithms()) {
      if (algo.collective != coll::Collective::allreduce || algo.baseline_only || algo.in_switch) continue;
      const double t = time_us(algo, bytes, false);
      if (sim::clearly_faster(t, best.time_us)) best = {algo.id, bytes, t, -1, {}, 0, -1, {}, {}, {}};
    }
    if (best.algorithm.empty()) throw Error("--algo auto: no allreduce algorithm applies to this topology");
    if (!args_.trace.empty()) time_us(coll::find_algorithm(best.algorithm), bytes, true);
    return with_on_time(best);
  }

 private:
  Row with_on_time(Row row) const {
    if (!starts_.empty()) row.on_time_us = time_us(coll::find_algorithm(row.algorithm), row.bytes, false, false);
    return row;
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
  std::vector<double> starts_;
  mutable std::string trace_;
};

// --late WHO:TIME, WHO a rank or a host name of the topology, TIME with a unit (50us, 2ms):
// those ranks start the collective that much after the others. Later settings of a rank add up.
std::vector<double> late_starts(const std::vector<std::string>& late, const topo::Topology& topology, int ranks) {
  std::vector<double> starts(static_cast<std::size_t>(ranks), 0.0);
  for (const std::string& text : late) {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
      throw Error("--late " + text + ": expected WHO:TIME, WHO a rank or a host (e.g. 3:50us, node1:2ms)");
    const std::string who = text.substr(0, colon);
    const double t = parse_time_us(text.substr(colon + 1), "--late " + text);
    const std::vector<int> named = topo::ranks_named(topology, who, ranks, "--late " + text);
    if (named.empty()) throw Error("--late " + text + ": no rank of the simulated ranks is on a host '" + who + "'");
    for (int r : named) starts[static_cast<std::size_t>(r)] += t;
  }
  return starts;
}

// NCCL's pick for every size, priced, as rows.
std::vector<Row> nccl_rows(const NcclPredictor& predictor, sim::NcclColl coll, const std::vector<std::size_t>& sizes) {
  std::vector<Row> rows;
  for (std::size_t bytes : sizes) {
    const sim::NcclPrice p = predictor.predict(coll, bytes);
    rows.push_back({std::string(sim::nccl_env_name(p.nccl.algo)), bytes, p.time_us, -1,
                    std::string(sim::nccl_env_name(p.nccl.proto)), p.nccl.channels, p.nccl.time_us, p.schedule,
                    p.fallback, {}});
  }
  return rows;
}

nlohmann::json row_json(const Row& row, const SimulateArgs& args, int ranks) {
  const double algbw = gbps(row.bytes, row.time_us);
  nlohmann::json j{{"algorithm", row.algorithm},
                   {"ranks", ranks},
                   {"bytes", row.bytes},
                   {"time_us", row.time_us},
                   {"algbw_gbps", algbw},
                   {"busbw_gbps", algbw * busbw_factor(collective_of(args), ranks)},
                   {"collective", std::string(coll::to_string(collective_of(args)))},
                   {"engine", args.engine}};
  j["fp16_compress"] = args.fp16;
  if (row.on_time_us >= 0) j["on_time_us"] = row.on_time_us;
  if (args.algo == "auto") j["selected_by"] = "auto";
  if (args.algo == kNcclAlgo) {
    // NCCL's pick and NCCL's own time beside colltune's: time_us is the schedule's price.
    j["selected_by"] = "nccl";
    j["protocol"] = row.protocol;
    j["channels"] = row.channels;
    j["nccl_time_us"] = row.nccl_time_us;
    j["priced_by"] = row.schedule.empty() ? "nccl_model" : row.schedule;
    if (!row.fallback.empty()) j["fallback"] = row.fallback;
  }
  const sim::Bottleneck& b = row.bottleneck;
  j["bottleneck"] = {{"resource", b.resource}, {"description", b.description}, {"rate_gbps", b.rate_gbps},
                     {"time_us", b.time_us}, {"twice_as_fast_us", b.faster_us}};
  return j;
}

// What limits the largest size (every row's is in --json).
void print_bottleneck(const Row& row) {
  std::printf("# bottleneck at %s: %s\n", format_bytes(row.bytes).c_str(), row.bottleneck.line().c_str());
}

// --algo nccl: NCCL's protocol and channel count, and NCCL's own time beside colltune's; a
// line for each reason NCCL's own time stands in.
void print_nccl_table(const std::vector<Row>& rows, int ranks, coll::Collective collective) {
  std::printf("#%13s %12s %7s %13s %8s %8s %12s %12s %12s %12s\n", "size(B)", "count", "type", "algorithm",
              "protocol", "channels", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "nccl(us)");
  std::vector<std::string> notes;
  for (const Row& row : rows) {
    const double algbw = gbps(row.bytes, row.time_us);
    std::printf("%14zu %12zu %7s %13s %8s %8d %12.2f %12.2f %12.2f %12.2f\n", row.bytes, row.bytes / kElem, "float",
                row.algorithm.c_str(), row.protocol.c_str(), row.channels, row.time_us, algbw,
                algbw * busbw_factor(collective, ranks), row.nccl_time_us);
    if (!row.fallback.empty() && std::find(notes.begin(), notes.end(), row.fallback) == notes.end())
      notes.push_back(row.fallback);
  }
  for (const std::string& note : notes) std::printf("# %s\n", note.c_str());
}

void print_table(const std::vector<Row>& rows, const SimulateArgs& args, const topo::Topology& topology, int ranks,
                 const std::string& selection) {
  const coll::Collective collective = collective_of(args);
  std::printf("# colltune simulate: %s on %s, %d ranks, engine %s%s\n",
              std::string(coll::to_string(collective)).c_str(), topology.name.c_str(), ranks, args.engine.c_str(),
              args.fp16 ? ", fp16 compression" : "");
  if (args.algo == "auto") std::printf("# algorithm: auto (the fastest applicable one for each size)\n");
  if (args.algo == kNcclAlgo) {
    std::printf("# algorithm: nccl (%s)\n", selection.c_str());
    std::printf("# time: colltune's schedule of NCCL's pick with its protocol, on the machine; nccl(us): NCCL's own model\n");
    print_nccl_table(rows, ranks, collective);
    print_bottleneck(rows.back());
    return;
  }
  std::printf("#%13s %12s %7s %13s %12s %12s %12s\n", "size(B)", "count", "type", "algorithm", "time(us)",
              "algbw(GB/s)", "busbw(GB/s)");
  for (const Row& row : rows) {
    const double algbw = gbps(row.bytes, row.time_us);
    std::printf("%14zu %12zu %7s %13s %12.2f %12.2f %12.2f", row.bytes, row.bytes / kElem, "float",
                row.algorithm.c_str(), row.time_us, algbw, algbw * busbw_factor(collective, ranks));
    if (row.on_time_us >= 0) std::printf("   on time %.2f us: +%.2f", row.on_time_us, row.time_us - row.on_time_us);
    std::printf("\n");
  }
  if (!args.late.empty()) {
    std::string who;
    for (const std::string& l : args.late) who += (who.empty() ? "" : ", ") + l;
    std::printf("# late: %s (time(us) counts from when the on-time ranks start)\n", who.c_str());
  }
  if (!args.trace.empty()) std::printf("# trace written to %s\n", args.trace.c_str());
  print_bottleneck(rows.back());
}

// The options of NCCL's model belong to --algo nccl, and those of colltune's schedules to the
// others: a given option that would be ignored is an error.
struct Given {
  const char* option;
  bool given;
};

const char* first_given(std::initializer_list<Given> options) {
  for (const Given& o : options)
    if (o.given) return o.option;
  return nullptr;
}

void check_option_mix(const SimulateArgs& args, sim::Engine engine) {
  const NcclSimulateOptions& n = args.nccl;
  if (args.algo == kNcclAlgo) {
    if (const char* other = first_given({{"--engine event", engine != sim::Engine::analytic},
                                         {"--fp16-compress", args.fp16},
                                         {"--inner", !args.inner.empty()},
                                         {"--chunk", !args.chunk.empty()},
                                         {"--trace", !args.trace.empty()},
                                         {"--late", !args.late.empty()}}))
      throw Error(std::string(other) + ": not with --algo nccl (NCCL's pick is priced by the analytic model: no " +
                  "event simulation, compression, chunking or trace)");
    return;
  }
  if (!args.collective.empty())
    throw Error("--collective " + args.collective + ": applies to --algo nccl only (--algo " + args.algo +
                " is a " + std::string(coll::to_string(coll::find_algorithm(args.algo).collective)) + ")");
  if (!n.protocol.empty())
    throw Error("--protocol " + n.protocol + ": --algo " + args.algo +
                " has no protocols (--algo nccl models NCCL's LL, LL128 and Simple)");
  if (const char* only = first_given({{"--nccl-version", !n.version.empty()},
                                      {"--nccl-algo", !n.algo_env.empty()},
                                      {"--nccl-proto", !n.proto_env.empty()},
                                      {"--nccl-env", !n.channel_env.empty()},
                                      {"--cpu", !n.cpu.empty()},
                                      {"--nccl-collnet", n.collnet},
                                      {"--compute-capability", n.compute_capability != 0}}))
    throw Error(std::string(only) + ": applies to --algo nccl only, not --algo " + args.algo);
}

// `nccl`: the model of --algo nccl, else nullptr. The output files (--json FILE, --trace,
// staged) are written first, then standard output.
void print_rows(const std::vector<Row>& rows, const SimulateArgs& args, const topo::Topology& topology, int ranks,
                const sim::NcclModel* nccl, bool one_size, OutputFiles& files) {
  std::string json;
  if (args.json.requested()) {
    nlohmann::json out = nlohmann::json::array();
    for (const Row& row : rows) {
      out.push_back(row_json(row, args, ranks));
      if (nccl) out.back()["nccl_version"] = nccl->constants().version.to_string();
    }
    json = finite::json_text(one_size ? out[0] : out, -1, "simulate --json");
  }
  args.json.finish(json, files);
  if (args.json.text_wanted()) print_table(rows, args, topology, ranks, nccl ? describe(*nccl) : "");
}

void run_simulate(SimulateArgs args) {
  if (args.algo != "auto" && args.algo != kNcclAlgo) coll::find_algorithm(args.algo);  // unknown ids fail first
  // A trace and late ranks are of the event simulation: --trace or --late alone implies it.
  if (args.engine.empty())
    args.engine = (args.trace.empty() && args.late.empty()) || args.algo == kNcclAlgo ? "analytic" : "event";
  const sim::Engine engine = sim::parse_engine(args.engine);
  check_option_mix(args, engine);
  const std::vector<std::size_t> sizes = sizes_of(args);
  if (!args.trace.empty() && engine != sim::Engine::event)
    throw Error("--trace records the event simulation: not with --engine " + args.engine);
  if (!args.trace.empty() && sizes.size() > 1) throw Error("--trace needs a single --bytes size, not a sweep");
  if (!args.late.empty() && engine != sim::Engine::event)
    throw Error("--late: late ranks are priced by the event simulation, not with --engine " + args.engine);
  OutputFiles files;  // checked before the simulation; written together at the end
  if (!args.trace.empty()) files.file("--trace", args.trace);
  args.json.declare(files);
  const topo::Topology topology = machine_for(args, topo::load_topology(args.topology));
  const bool one_size = sizes.size() == 1 && args.min_bytes.empty() && args.bytes.find(':') == std::string::npos;
  if (args.algo == kNcclAlgo) {
    NcclSimulateOptions nccl = args.nccl;
    nccl.ranks = args.ranks;
    const NcclPredictor predictor(topology, nccl);
    const sim::NcclColl coll = nccl_coll_of(collective_of(args));
    std::vector<Row> rows = nccl_rows(predictor, coll, sizes);
    const AllreduceBottlenecks limits(topology, predictor.model().options(), coll);
    for (Row& row : rows) row.bottleneck = limits.at(row.algorithm, row.bytes, row.time_us);
    return print_rows(rows, args, topology, predictor.ranks(), &predictor.model(), one_size, files);
  }
  Predictor predictor(args, engine, topology);
  if (!args.late.empty()) predictor.set_starts(late_starts(args.late, topology, predictor.ranks()));
  // Each row's bottleneck line, for the rows' algorithms (the analytic model prices it on the
  // machine and its what-if copies, whatever the engine: the row's own time is not read).
  const auto bottlenecks = [&](const std::vector<std::string>& algorithms) {
    const AllreduceBottlenecks limits(
        topology, predictor.model(),
        [&predictor](const std::string& algo, std::size_t bytes) { return predictor.request(algo, bytes); },
        sizes.size() == 1);
    std::vector<sim::Bottleneck> out;
    for (std::size_t i = 0; i < sizes.size(); ++i) out.push_back(limits.at(algorithms[i], sizes[i], 0));
    return out;
  };
  // A fixed algorithm's lines need no row: they are found on another thread while the rows are
  // predicted (at 16,384 ranks the what-if machines are as much work as the event simulation).
  // Where a row fails, its error is the command's, as before: the lines are then waited for and
  // dropped.
  std::future<std::vector<sim::Bottleneck>> fixed_lines;
  if (args.algo != "auto")
    fixed_lines = std::async(std::launch::async, bottlenecks,
                             std::vector<std::string>(sizes.size(), coll::find_algorithm(args.algo).id));
  std::vector<Row> rows;
  for (std::size_t bytes : sizes) rows.push_back(predictor.predict(bytes));
  std::vector<std::string> algorithms;
  for (const Row& row : rows) algorithms.push_back(row.algorithm);
  const std::vector<sim::Bottleneck> lines = fixed_lines.valid() ? fixed_lines.get() : bottlenecks(algorithms);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].bottleneck = lines[i];
  if (!args.trace.empty()) files.stage(args.trace, predictor.trace());
  print_rows(rows, args, topology, predictor.data_ranks(), nullptr, one_size, files);
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand("simulate", "Predict an allreduce's time on a topology (analytic model or event simulation)");
  cmd->add_option("--topology", args->topology, "Preset spec (dgx-h100:nodes=4), topology JSON or NCCL XML")->required();
  cmd->add_option("--algo", args->algo,
                  "ring|tree|dbtree|rhd|hierarchical|..., auto (fastest per size) or nccl (NCCL's own choice per size)");
  cmd->add_option("--bytes", args->bytes, "Payload per rank: SIZE, or MIN:MAX to sweep x2 (B, KiB, MiB, GiB)");
  cmd->add_option("-b,--minbytes", args->min_bytes, "smallest size of a sweep, as bench and nccl-tests (e.g. 1K)");
  cmd->add_option("-e,--maxbytes", args->max_bytes, "largest size of a sweep (default: -b)");
  cmd->add_option("-f,--stepfactor", args->factor, "size multiplication factor of a sweep (>= 2, default 2)");
  cmd->add_option("--engine", args->engine,
                  "analytic (closed form; the default) or event (discrete-event simulation; the default with --trace)");
  cmd->add_option("--ranks", args->ranks, "Use only the first N ranks of the topology (default: all)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--inner", args->inner, "hierarchical: the algorithm across hosts");
  cmd->add_option("--chunk", args->chunk, "Pipelining chunk, bytes with a unit (e.g. 1MiB; default: one chunk per block)");
  cmd->add_flag("--fp16-compress", args->fp16, "Compress fp32 payloads to fp16 on the wire");
  cmd->add_option("--late", args->late,
                  "a rank or host that starts late, WHO:TIME (3:50us, node1:2ms; repeatable): the event simulation "
                  "prices who waits for it");
  cmd->add_option("--trace", args->trace, "Write a Chrome trace (Perfetto) of the event simulation to FILE");
  add_json_option(*cmd, args->json, "The rows, on one line (an object, or an array for a sweep)");
  cmd->add_option("--nccl-version", args->nccl.version, "--algo nccl: NCCL's model of release 2.21|2.28|2.30 (default: installed)");
  cmd->add_option("--nccl-algo", args->nccl.algo_env, "--algo nccl: NCCL_ALGO, e.g. Ring, ^NVLS, allreduce:Tree,Ring");
  cmd->add_option("--nccl-proto", args->nccl.proto_env, "--algo nccl: NCCL_PROTO, e.g. ^LL128, LL,Simple");
  cmd->add_option("--nccl-env", args->nccl.channel_env,
                  "--algo nccl: NCCL's channel settings, NAME=COUNT (NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, "
                  "NCCL_MIN_CTAS, NCCL_MAX_CTAS); repeatable");
  cmd->add_option("--collective", args->collective,
                  "--algo nccl: allreduce (default), allgather or reduce_scatter (nccl-tests' size: the whole buffer)");
  cmd->add_option("--protocol", args->nccl.protocol, "--algo nccl: this protocol only: LL|LL128|Simple");
  cmd->add_option(
      "--cpu", args->nccl.cpu,
      "--algo nccl: the CPU NCCL's model assumes: intel_bdw|intel_skl|intel_srp|intel_erp|amd|amd_zen34|amd_zen5 "
      "(default: the topology's nccl_cpu, else intel_srp)");
  cmd->add_flag("--nccl-collnet", args->nccl.collnet, "--algo nccl: NCCL_COLLNET_ENABLE=1 (CollNet/SHARP where switches reduce)");
  cmd->add_option("--compute-capability", args->nccl.compute_capability,
                  "--algo nccl: the GPUs' compute capability where the topology gives none (e.g. 90 for H100)");
  cmd->callback([args] { run_simulate(*args); });
}

}  // namespace colltune::cli
