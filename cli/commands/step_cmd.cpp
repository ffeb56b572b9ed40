// colltune step: predicted training step (Horovod's loop over a workload on a topology).
#include <algorithm>
#include <iomanip>
#include <cstdint>
#include <iostream>
#include <optional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/common/finite.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/bottleneck.hpp"
#include "colltune/sim/compute_source.hpp"
#include "colltune/sim/step_costs.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/stragglers.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/hardware.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/tuner/runtime_model.hpp"
#include "commands.hpp"
#include "commands/simulate_nccl.hpp"
#include "commands/step_whatif.hpp"
#include "options/compute_option.hpp"
#include "options/cost_option.hpp"
#include "options/options.hpp"

namespace colltune::cli {
namespace {

struct StepArgs {
  std::string topology;
  std::string model;
  std::string fusion_threshold = "128MiB";
  std::string cycle_time = "1ms";
  std::string chunk;  // --chunk: each allreduce's pipelining chunk (tune's chunk_bytes); empty: none
  bool fp16_compress = false;
  std::string algorithm;  // empty: NCCL's own choice under Horovod, as tune's baseline (resolved())
  std::string engine = "analytic";
  std::vector<std::string> slow;  // --slow WHO:FACTORx
  std::string jitter;             // --jitter DIST:PARAM
  int steps = 0;                  // 0: 1 without jitter, 1000 with
  std::uint64_t seed = 1;
  std::vector<std::string> costs;  // --cost NAME=VALUE
  std::string runtime;             // --runtime: priced as tune prices it (empty: the plain step model)
  ComputeArgs compute;             // --precision, --measured-throughput
  bool hierarchical = false;       // --hierarchical: Horovod's flag (with --runtime horovod)
  NcclSimulateOptions nccl;        // --nccl-algo, --nccl-proto, --nccl-env: the user's NCCL settings
  WhatIfArgs whatif;  // --batches/--uneven, --fail (step_whatif.hpp)
  JsonOutput json;
  bool stragglers() const { return !slow.empty() || !jitter.empty() || steps > 0; }
};

double ms(double us) { return us / 1e3; }

std::string percent(double fraction) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << 100.0 * fraction << " %";
  return out.str();
}

// Every named cost as the CLI spells it, resolved.
nlohmann::ordered_json costs_json(const sim::StepCosts& costs) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const sim::StepCostField& f : sim::step_cost_fields()) out[std::string(f.name)] = costs.*f.member;
  return out;
}

// "name=value" for every cost, `per_line` to a line, lines indented to the summary's column.
std::string costs_text(const sim::StepCosts& costs, std::size_t per_line) {
  std::ostringstream out;
  const auto& fields = sim::step_cost_fields();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out << (i % per_line == 0 ? "\n                    " : ", ");
    out << fields[i].name << "=" << std::setprecision(4) << costs.*fields[i].member;
  }
  return out.str();
}

nlohmann::ordered_json to_json(const StepArgs& a, const sim::LoadedWorkload& l, const sim::StepConfig& c,
                               const sim::StepSimulator& s, const topo::Topology& t, const sim::StepResult& r) {
  const sim::Workload& w = l.workload;
  const int ranks = s.nranks();
  nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
  for (const sim::BufferRecord& b : r.buffers) {
    buffers.push_back({{"bytes", b.bytes}, {"tensors", b.tensors}, {"algorithm", b.algorithm},
                       {"start_ms", ms(b.start_us)}, {"end_ms", ms(b.end_us)}});
  }
  return {{"step_time_ms", ms(r.step_time_us)},
          {"compute_ms", ms(r.compute_us)},
          {"exposed_comm_ms", ms(r.exposed_comm_us)},
          {"scaling_efficiency", r.scaling_efficiency},
          {"buffers", buffers},
          {"model", w.name},
          {"topology", a.topology},
          {"ranks", ranks},
          {"engine", a.engine},
          {"algorithm", c.algorithm},
          {"fusion_threshold_bytes", c.fusion_threshold_bytes},
          {"cycle_time_ms", ms(c.cycle_time_us)},
          {"fp16_compress", c.fp16_compress},
          {"forward_ms", ms(w.forward_us)},
          {"backward_ms", ms(w.backward_us)},
          {"gradient_bytes", w.total_bytes()},
          {"gpu", topo::gpu_of(t).name},
          {"precision", l.precision},
          {"compute_source", l.compute},
          {"samples_per_s_per_gpu", l.samples_per_s},
          {"transport", std::string(topo::to_string(t.transport))},
          {"negotiation_us", s.negotiation_us()},
          {"costs", costs_json(s.costs())}};
}

nlohmann::ordered_json bottleneck_json(const sim::Bottleneck& b) {
  nlohmann::ordered_json whatifs = nlohmann::ordered_json::array();
  for (const sim::WhatIf& w : b.whatifs)
    whatifs.push_back({{"resource", w.resource}, {"label", w.label}, {"step_ms", ms(w.time_us)}});
  return {{"resource", b.resource},       {"description", b.description}, {"rate_gbps", b.rate_gbps},
          {"step_ms", ms(b.time_us)},     {"twice_as_fast_ms", ms(b.faster_us)}, {"whatifs", whatifs}};
}

// The user's NCCL settings, "NCCL_ALGO=Ring", "NCCL_MAX_NCHANNELS=4"; empty without any.
std::vector<std::string> nccl_setting_lines(const StepArgs& a) {
  return tuner::nccl_setting_lines(nccl_settings(a.nccl));
}

std::string runtime_text(const StepArgs& a) {
  if (a.runtime.empty()) return "";
  std::string text = " (runtime " + a.runtime;
  for (const std::string& s : nccl_setting_lines(a)) text += ", " + s;
  return text + ")";
}

void print_summary(std::ostream& out, const StepArgs& a, const sim::LoadedWorkload& l, const sim::StepConfig& c,
                   const sim::StepSimulator& s, const topo::Topology& t, const sim::StepResult& r,
                   const sim::Bottleneck& limit) {
  const sim::Workload& w = l.workload;
  const int ranks = s.nranks();
  out << "model               " << w.name << " (" << w.tensors.size() << " gradient tensors, "
      << format_bytes(w.total_bytes()) << ")\n"
      << "topology            " << a.topology << " (" << ranks << " ranks)\n"
      << "config              fusion " << format_bytes(c.fusion_threshold_bytes) << ", cycle "
      << format_time_us(c.cycle_time_us) << ", fp16 compression " << (c.fp16_compress ? "on" : "off") << ", algorithm "
      << a.algorithm << runtime_text(a) << ", engine " << a.engine << "\n"
      << "gpu, network        " << topo::gpu_of(t).name << ", " << topo::to_string(t.transport) << " (negotiation "
      << format_time_us(s.negotiation_us()) << " per cycle)\n"
      << "compute from        " << l.compute << "\n"
      << "costs               " << costs_text(s.costs(), 4) << "\n"
      << "step time           " << format_time_us(r.step_time_us) << "\n"
      << "compute             " << format_time_us(r.compute_us) << " (forward " << format_time_us(w.forward_us)
      << ", backward " << format_time_us(w.backward_us) << ")\n"
      << "exposed comm        " << format_time_us(r.exposed_comm_us) << "\n"
      << "scaling efficiency  " << percent(r.scaling_efficiency) << "\n"
      << "bottleneck          " << limit.line() << "\n";
  if (r.buffers.empty()) return;
  // The algorithm column as wide as its longest label ("nccl NVLSTree/Simple (nccl_nvls_tree)").
  std::size_t width = 14;
  for (const sim::BufferRecord& b : r.buffers) width = std::max(width, b.algorithm.size() + 2);
  const int column = static_cast<int>(width);
  out << "\n" << r.buffers.size() << " fusion buffer(s), times from the start of the backward pass:\n"
      << std::setw(5) << "#" << std::setw(14) << "bytes" << std::setw(9) << "tensors" << "  " << std::left
      << std::setw(column) << "algorithm" << std::right << std::setw(12) << "start" << std::setw(12) << "end" << "\n";
  for (std::size_t i = 0; i < r.buffers.size(); ++i) {
    const sim::BufferRecord& b = r.buffers[i];
    out << std::setw(5) << i << std::setw(14) << format_bytes(b.bytes) << std::setw(9) << b.tensors << "  "
        << std::left << std::setw(column) << b.algorithm << std::right << std::setw(12) << format_time_us(b.start_us)
        << std::setw(12) << format_time_us(b.end_us) << "\n";
  }
}

sim::StragglerOptions straggler_options(const StepArgs& a, const topo::Topology& topology) {
  sim::StragglerOptions o;
  o.rank_factor.assign(static_cast<std::size_t>(topology.num_ranks()), 1.0);
  for (const std::string& s : a.slow) sim::apply_slow(s, topology, o.rank_factor);
  if (!a.jitter.empty()) o.jitter = sim::parse_jitter(a.jitter);
  o.steps = a.steps > 0 ? a.steps : (o.jitter.kind == sim::Jitter::Kind::none ? 1 : 1000);
  o.seed = a.seed;
  return o;
}

nlohmann::ordered_json stragglers_json(const sim::StragglerResult& s) {
  return {{"steps", s.steps},           {"ideal_step_ms", ms(s.ideal_us)}, {"mean_step_ms", ms(s.mean_us)},
          {"p50_step_ms", ms(s.p50_us)}, {"p99_step_ms", ms(s.p99_us)},     {"waiting_fraction", s.waiting_fraction}};
}

void print_stragglers(std::ostream& out, const StepArgs& a, const sim::StragglerResult& s) {
  std::string what;
  for (const std::string& slow : a.slow) what += (what.empty() ? "" : ", ") + slow;
  if (!a.jitter.empty()) what += (what.empty() ? "jitter " : ", jitter ") + a.jitter;
  out << "\nstragglers          " << what << "; " << s.steps << " step(s), seed " << a.seed << "\n"
      << "step time           mean " << format_time_us(s.mean_us) << ", p50 " << format_time_us(s.p50_us) << ", p99 "
      << format_time_us(s.p99_us) << " (without stragglers " << format_time_us(s.ideal_us) << ")\n"
      << "waiting             " << percent(s.waiting_fraction)
      << " of the ranks' time waits for the slowest rank\n";
}

// The step config the runtime runs for the step's knobs (tune's pricing of that candidate).
sim::StepConfig runtime_config(const tuner::RuntimeModel& runtime, const sim::StepConfig& plain, bool hierarchical) {
  tuner::Candidate c;
  c.fusion_threshold_bytes = plain.fusion_threshold_bytes;
  c.cycle_time_us = plain.cycle_time_us;
  c.fp16 = plain.fp16_compress;
  c.chunk_bytes = plain.options.chunk_elems * (plain.fp16_compress ? 2 : 4);
  c.algorithm = runtime.ps() ? "ps" : plain.algorithm;
  c.hierarchical = hierarchical;
  return runtime.step_config(c);
}

// What limits the step: each resource twice as fast, the step priced again on the same path
// (the runtime's pricing with --runtime; sim/bottleneck.hpp).
sim::Bottleneck bottleneck_of(const StepArgs& a, const topo::Topology& topology, const sim::Workload& workload,
                              const sim::StepConfig& plain, const sim::StepCosts& given,
                              const sim::StepSimulator& simulator, sim::Engine engine, const sim::NcclOptions& nccl) {
  std::optional<tuner::RuntimeSpec> spec;
  if (!a.runtime.empty()) spec = tuner::parse_runtime_spec(a.runtime);
  const auto price = [&](const topo::Topology& t, const sim::Workload& w, const sim::StepCosts& c, double cycle) {
    const sim::StepSimulator s(t, c);
    sim::StepConfig config = plain;
    config.cycle_time_us *= cycle;
    if (!spec) return s.run(w, config, engine).step_time_us;
    const tuner::RuntimeModel runtime(t, *spec, tuner::RuntimeOptions{true, c, tuner::kDefaultNcclMargin, nccl});
    return s.run(w, runtime_config(runtime, config, a.hierarchical), engine).step_time_us;
  };
  return sim::step_bottleneck(topology, workload, given, simulator.costs(), price, spec.has_value());
}

// The runtime the step is priced as (resolved() has put Horovod there for NCCL's choice);
// --hierarchical is Horovod's flag and needs it.
std::string runtime_of(const StepArgs& a) {
  if (a.hierarchical && a.runtime.empty())
    throw Error("--hierarchical: Horovod's flag; give --runtime horovod");
  return a.runtime;
}

// The parameter servers next to the allreduce the job would run instead, same buffers.
void print_allreduce(std::ostream& out, const StepArgs& a, const tuner::RuntimeModel& runtime,
                     const sim::StepResult& ps, const sim::StepResult& allreduce) {
  std::ostringstream ratio;
  ratio << std::fixed << std::setprecision(2) << ps.step_time_us / allreduce.step_time_us;
  out << "\nparameter servers   " << tuner::to_string(runtime.spec()) << ": " << runtime.servers_description()
      << "\nallreduce instead   step time " << format_time_us(allreduce.step_time_us) << " with --algo "
      << a.algorithm << " (same buffers); the PS step takes x" << ratio.str() << " of it\n";
}

// The one default: without --algo and --runtime, the step runs what tune's baseline runs, NCCL's
// own choice under Horovod (RuntimeModel::baseline: colltune's ring where NCCL's model does not
// fit the machine), so step, tune, sweep and the demo give one number for one configuration.
// --algo nccl alone is also Horovod's; --runtime ps keeps ring for the allreduce beside it. A
// --fail re-prices on a smaller machine, which the runtime's price hook cannot: there the
// default stays colltune's ring.
StepArgs resolved(StepArgs a, const topo::Topology& topology, const sim::NcclOptions& nccl) {
  if (a.algorithm == tuner::kNcclChoice && a.runtime.empty() && a.whatif.fail_wanted())
    throw Error("--algo nccl with --fail: failures re-price the step with colltune's step model only (give a colltune "
                "--algo, e.g. ring)");
  if (a.runtime.empty() && (a.algorithm.empty() || a.algorithm == tuner::kNcclChoice) && !a.whatif.fail_wanted())
    a.runtime = "horovod";
  if (!a.algorithm.empty()) return a;
  const tuner::RuntimeSpec spec = tuner::parse_runtime_spec(a.runtime.empty() ? "horovod" : a.runtime);
  a.algorithm =
      a.runtime.empty() || spec.runtime == coll::Runtime::ps
          ? "ring"
          : tuner::RuntimeModel(topology, spec, tuner::RuntimeOptions{true, {}, tuner::kDefaultNcclMargin, nccl})
                .baseline()
                .algorithm;
  return a;
}

// The user's NCCL settings apply where NCCL runs the allreduce: NCCL's choice under Horovod (no
// --algo, --algo nccl, --runtime horovod).
void check_nccl_settings_apply(const StepArgs& a) {
  if (!has_nccl_settings(a.nccl)) return;
  const auto [option, value] = first_nccl_setting(a.nccl);
  const std::string given = option + " " + value;
  if (a.runtime.empty())
    throw Error(given + ": NCCL does not run colltune's --algo " + a.algorithm +
                "; the settings apply to NCCL's choice (no --algo, or --algo nccl)");
  if (tuner::parse_runtime_spec(a.runtime).runtime == coll::Runtime::ps)
    throw Error(given + ": --runtime " + a.runtime + " runs no NCCL allreduce");
}

void run_step(const StepArgs& given) {
  OutputFiles files;
  given.json.declare(files);
  const topo::Topology topology = topo::load_topology(given.topology);
  const sim::NcclOptions nccl = nccl_settings(topology, given.nccl);
  const StepArgs a = resolved(given, topology, nccl);
  check_nccl_settings_apply(a);
  sim::StepConfig config;
  config.fusion_threshold_bytes = parse_size(a.fusion_threshold, "--fusion-threshold", BareNumber::refused);
  config.cycle_time_us = sim::parse_cycle_time_us(a.cycle_time, "--cycle-time");
  config.fp16_compress = a.fp16_compress;
  if (!a.chunk.empty() && a.algorithm == tuner::kNcclChoice)
    throw Error("--chunk " + a.chunk + ": NCCL sizes its own chunks under --algo nccl; give a colltune --algo");
  // In elements on the wire, as tune's candidates (fp16 with compression).
  config.options.chunk_elems =
      a.fp16_compress ? chunk_elements(a.chunk, 2, "fp16") : chunk_elements(a.chunk, 4, "fp32");
  config.algorithm = a.algorithm;
  const sim::Engine engine = sim::parse_engine(a.engine);
  const sim::StepCosts costs = step_costs(a.costs);
  const sim::LoadedWorkload loaded =
      sim::load_workload(a.model, compute_request(a.compute, topo::gpu_of(topology).name));
  const sim::Workload& workload = loaded.workload;
  for (const std::string& note : loaded.notes) std::cerr << "colltune: note: " << a.model << ": " << note << "\n";
  const sim::StepSimulator simulator(topology, costs);
  // --runtime: the runtime's pricing, as tune's; for ps, the allreduce (--algo) alongside.
  const sim::StepConfig plain = config;
  std::optional<tuner::RuntimeModel> runtime;
  std::optional<sim::StepResult> allreduce;
  if (const std::string spec = runtime_of(a); !spec.empty()) {
    // A failure re-prices the step on the machine without the failed host; the runtime's price
    // hook is bound to this whole machine, so the two are not combined.
    if (a.whatif.fail_wanted())
      throw Error("--fail with --runtime " + spec + ": failures re-price the step with colltune's step model only "
                  "(drop --runtime)");
    runtime.emplace(topology, tuner::parse_runtime_spec(spec),
                    tuner::RuntimeOptions{true, costs, tuner::kDefaultNcclMargin, nccl});
    if (runtime->ps()) allreduce = simulator.run(workload, config, engine);
    config = runtime_config(*runtime, config, a.hierarchical);
  }
  const sim::StepResult result = simulator.run(workload, config, engine);
  const sim::Bottleneck bottleneck = bottleneck_of(a, topology, workload, plain, costs, simulator, engine, nccl);
  std::optional<sim::StragglerResult> stragglers;
  if (a.stragglers())
    stragglers = sim::simulate_stragglers(simulator, workload, config, engine, straggler_options(a, topology));
  const WhatIfResult whatif = run_whatif(a.whatif, a.model, topology, costs, simulator, workload, config, engine,
                                         straggler_options(a, topology).rank_factor, a.seed);
  nlohmann::ordered_json json = to_json(a, loaded, config, simulator, topology, result);
  if (has_nccl_settings(a.nccl)) json["nccl_settings"] = nccl_setting_lines(a);
  json["bottleneck"] = bottleneck_json(bottleneck);
  if (stragglers) json["stragglers"] = stragglers_json(*stragglers);
  if (runtime) json["runtime"] = tuner::to_string(runtime->spec());
  if (runtime && runtime->nccl_priced() && config.price_buffer) json["selected_by"] = a.algorithm == std::string(tuner::kNcclChoice) ? "nccl" : "colltune's NCCL table";
  if (allreduce) json["allreduce"] = {{"algorithm", a.algorithm}, {"step_time_ms", ms(allreduce->step_time_us)}};
  add_whatif_json(json, whatif, topology);
  a.json.finish(finite::json_text(json, 2, "step --json"), files);
  if (!a.json.text_wanted()) return;
  print_summary(std::cout, a, loaded, config, simulator, topology, result, bottleneck);
  if (allreduce) print_allreduce(std::cout, a, *runtime, result, *allreduce);
  if (stragglers) print_stragglers(std::cout, a, *stragglers);
  print_whatif(std::cout, whatif, topology);
}

}  // namespace

void add_step_command(CLI::App& app) {
  auto args = std::make_shared<StepArgs>();
  CLI::App* sub = app.add_subcommand("step", "Predict a data-parallel training step (Horovod's loop) on a topology");
  sub->add_option("--topology", args->topology, "Preset spec (dgx-h100:nodes=4), topology JSON or NCCL XML")
      ->required();
  sub->add_option("--model", args->model,
                  "Model profile (resnet50, vgg16, bert-large, gpt2-xl, ...; options as resnet50:batch=64,tflops=300),"
                  " a workload JSON file or a Horovod timeline")
      ->required();
  sub->add_option("--fusion-threshold", args->fusion_threshold, "Fusion buffer size with a unit (B/KiB/MiB/GiB; 0 = no fusion)")
      ->capture_default_str();
  sub->add_option("--cycle-time", args->cycle_time, "Horovod cycle time with a unit (us/ms/s)")->capture_default_str();
  sub->add_flag("--fp16-compress", args->fp16_compress, "Cast fp32 gradients to fp16 before the allreduce");
  sub->add_option("--chunk", args->chunk,
                  "Pipelining chunk of each allreduce, bytes with a unit (tune's chunk_bytes; default: one chunk "
                  "per block)");
  sub->add_option("--algo", args->algorithm, "Allreduce algorithm id, auto (fastest per buffer) or nccl (NCCL's own "
                                           "choice under Horovod: the default, as tune's baseline)");
  sub->add_option("--runtime", args->runtime, "price the buffers as tune --runtime does (default horovod for "
                                             "--algo nccl or no --algo; none for a colltune --algo); ps:servers=S"
                                             "[,colocated][,agg_gbps=X] also shows the --algo allreduce's step");
  sub->add_flag("--hierarchical", args->hierarchical,
                "with --runtime horovod: HOROVOD_HIERARCHICAL_ALLREDUCE=1 (tune's hierarchical knob)");
  add_nccl_setting_options(*sub, args->nccl);
  sub->add_option("--engine", args->engine, "analytic (cost model) or event (discrete-event simulator)")
      ->capture_default_str();
  sub->add_option("--slow", args->slow, "a slow rank or host: WHO:FACTORx, e.g. 3:1.5x or node2:1.2x (repeatable)");
  sub->add_option("--jitter", args->jitter, "per-step random compute speed of every rank: lognormal:SIGMA, "
                                            "normal:SD or uniform:HALFWIDTH");
  sub->add_option("--steps", args->steps, "steps to simulate with stragglers (default 1, 1000 with --jitter)")
      ->check(at_least(1));
  sub->add_option("--seed", args->seed, "seed of the jitter's and --uneven-spread's draws")->capture_default_str();
  add_compute_options(*sub, args->compute);
  add_step_cost_option(*sub, args->costs);
  add_whatif_options(*sub, args->whatif);
  add_json_option(*sub, args->json, "The step");
  sub->callback([args] { run_step(*args); });
}

}  // namespace colltune::cli
