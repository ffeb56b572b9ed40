// What each runtime runs and how it is priced (model in runtime_model.hpp).
#include "colltune/tuner/runtime_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "colltune/common/error.hpp"
#include "colltune/sim/calibration.hpp"
#include "colltune/sim/priced_machine.hpp"
#include "nccl_tables.hpp"

namespace colltune::tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Horovod's hierarchical allreduce crosses hosts with MPI_Allreduce, whose algorithm MPI
// chooses; colltune prices that phase as its ring (Open MPI's choice for large messages).
constexpr std::string_view kHorovodCrossHost = "ring";

std::string gbps_text(double gbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", gbps);
  return buf;
}

sim::NcclAlgo nccl_algo_of(const std::string& id) {
  return sim::parse_nccl_algo(coll::find_algorithm(id).nccl_name);
}

sim::BufferPrice buffer_price(const sim::NcclPrice& p) {
  return sim::BufferPrice{"nccl " + p.label(), p.time_us};
}

}  // namespace

std::size_t horovod_fusion_threshold(std::size_t bytes, int ranks_per_host) {
  const std::size_t unit = static_cast<std::size_t>(std::max(ranks_per_host, 1)) * 8 * 64;
  return (bytes + unit - 1) / unit * unit;
}

RuntimeSpec parse_runtime_spec(std::string_view text) {
  if (text.rfind("ps:", 0) == 0) {
    RuntimeSpec spec(coll::Runtime::ps);
    spec.ps = sim::parse_ps_options(text.substr(3));
    return spec;
  }
  if (text == "ps") throw Error("--runtime ps: needs servers=S (e.g. ps:servers=4)");
  return RuntimeSpec(coll::parse_runtime(text));
}

std::string to_string(const RuntimeSpec& spec) {
  std::string s(coll::to_string(spec.runtime));
  if (spec.runtime == coll::Runtime::ps) {
    s += ':';  // appended piece by piece: GCC 12 warns (-Wrestrict) on ":" + std::string here
    s += sim::to_string(spec.ps);
  }
  return s;
}

RuntimeModel::RuntimeModel(const topo::Topology& topology, const RuntimeSpec& runtime, const RuntimeOptions& options)
    : runtime_(runtime.runtime),
      spec_(runtime),
      cost_(topology),
      nccl_margin_(options.nccl_margin),
      nccl_(options.nccl) {
  if (!(options.nccl_margin >= 0 && options.nccl_margin < 1))
    throw Error("--nccl-margin " + gbps_text(options.nccl_margin) + ": expected a fraction in [0, 1), e.g. 5%");
  calibration_ = sim::calibration_facts(topology);
  if (runtime_ == coll::Runtime::ps) {
    ps_ = std::make_unique<sim::PsExchange>(topology, spec_.ps);
    fallback_ = "--runtime ps runs no NCCL allreduce";
    return;
  }
  if (!options.nccl_model) {
    fallback_ = "the measured objective runs colltune's executors, not NCCL";
    return;
  }
  try {
    pricer_ = sim::make_nccl_pricer(topology, options.nccl, options.costs);
  } catch (const Error& e) {
    fallback_ = std::string("NCCL's model does not fit this topology (") + e.what() + ")";
  }
  if (runtime_ != coll::Runtime::horovod || cost_.layout.nhosts() < 2) return;
  if (!pricer_) {
    hierarchical_fallback_ = "hierarchical priced as colltune's schedule: " + fallback_;
    return;
  }
  try {
    horovod_hierarchical_.emplace(topology, options.costs, sim::kPageableCopyEfficiency, options.nccl);
  } catch (const Error& e) {
    hierarchical_fallback_ = std::string("hierarchical priced as colltune's schedule: ") + e.what();
  }
}

std::vector<std::string> RuntimeModel::flat_algorithms() const {
  std::vector<std::string> out;
  for (const auto& a : coll::algorithms())
    if (a.collective == coll::Collective::allreduce && a.placement == coll::Placement::flat && a.runs_on(runtime_) &&
        !a.in_switch)  // priced on the machine's own ranks, which have no switch rank
      out.push_back(a.id);
  return out;
}

SearchSpace RuntimeModel::space() const {
  SearchSpace s = SearchSpace::defaults(flat_algorithms());
  s.runtime = std::string(coll::to_string(runtime_));
  if (ps_) {
    // The framework's bucketing (fusion threshold, cycle) is what a PS job can tune, and the
    // partition a buffer's shards are cut into: none (ps-lite, TensorFlow: a key's push then
    // its pull) or 4 MiB (BytePS's BYTEPS_PARTITION_BYTES default, 4096000 bytes, rounded),
    // whose pulls overlap the next partition's push. fp16 as for allreduce: gradients cast
    // before the push.
    s.algorithms = {"ps"};
    s.hierarchical_algorithms = {};
    s.hierarchical = {false};
    s.no_hierarchical_reason = "--runtime ps has no hierarchical allreduce";
    s.chunks = {0, 4 * MiB};
    return s;
  }
  if (runtime_ == coll::Runtime::colltune) {
    s.hierarchical_algorithms = s.algorithms;  // "auto" with hierarchical=on: per-host ones too
    return s;
  }
  if (pricer_) s.algorithms.insert(s.algorithms.begin(), std::string(kNcclChoice));
  s.chunks = {0};  // NCCL sizes its own chunks (NCCL_BUFFSIZE, slices)
  const bool per_host = std::any_of(coll::algorithms().begin(), coll::algorithms().end(), [&](const auto& a) {
    return a.collective == coll::Collective::allreduce && a.placement == coll::Placement::per_host &&
           a.runs_on(runtime_);
  });
  s.hierarchical_algorithms = {std::string(kHorovodCrossHost)};
  if (!per_host) {
    s.hierarchical = {false};
    s.no_hierarchical_reason = "--runtime " + s.runtime + " has no hierarchical allreduce (Horovod's path; use "
                               "--runtime horovod)";
  } else if (cost_.layout.nhosts() <= 1) {
    // Horovod ignores the flag on one node (a plain ncclAllReduce runs): it is not a knob there.
    s.hierarchical = {false};
    s.no_hierarchical_reason = "Horovod ignores HOROVOD_HIERARCHICAL_ALLREDUCE on one node";
  }
  return s;
}

Candidate RuntimeModel::baseline() const {
  Candidate c = horovod_baseline();
  c.algorithm = ps_ ? "ps" : pricer_ ? std::string(kNcclChoice) : "ring";
  return c;
}

std::string RuntimeModel::baseline_description() const {
  if (ps_) return "parameter servers (" + servers_description() + ") with 128 MiB buckets and a 1 ms cycle";
  const std::string horovod = "Horovod defaults (128 MiB fusion, 1 ms cycle, no compression, not hierarchical)";
  std::string under;
  for (const std::string& s : nccl_setting_lines(nccl_)) under += (under.empty() ? " under " : ", ") + s;
  if (pricer_)
    return horovod + " with NCCL's own algorithm and protocol choice (NCCL's model" + under + "), priced by colltune";
  return horovod + " over colltune's ring; " + fallback_;
}

std::vector<std::string> nccl_setting_lines(const sim::NcclOptions& nccl) {
  std::vector<std::string> out;
  if (!nccl.algo_env.empty()) out.push_back("NCCL_ALGO=" + nccl.algo_env);
  if (!nccl.proto_env.empty()) out.push_back("NCCL_PROTO=" + nccl.proto_env);
  for (std::string& line : sim::setting_lines(nccl.channel_env)) out.push_back(std::move(line));
  return out;
}

std::string RuntimeModel::servers_description() const {
  if (!ps_) return "";
  const sim::PsOptions& o = ps_->options();
  return std::to_string(o.servers) + (o.colocated ? " colocated" : " dedicated") + " server" +
         (o.servers == 1 ? "" : "s") + ", aggregating at " +
         (ps_->agg_gbps() > 0 ? gbps_text(ps_->agg_gbps()) + " GB/s" : "no cost");
}

bool RuntimeModel::runs_nccl_allreduce(const Candidate& c) const {
  if (c.algorithm == kNcclChoice) return true;
  return runtime_ != coll::Runtime::colltune && !ps_ && !c.hierarchical;
}

std::shared_ptr<const std::vector<SizeRange>> RuntimeModel::table_for(const std::string& algorithm) const {
  return tables_.get(algorithm, [&] { return build_table(algorithm); });
}

std::shared_ptr<const std::vector<SizeRange>> RuntimeModel::build_table(const std::string& algorithm) const {
  const std::vector<std::string> ids =
      algorithm == kAutoAlgorithm ? flat_algorithms() : std::vector<std::string>{algorithm};
  std::vector<SizeRange> table;
  if (pricer_ && algorithm == kAutoAlgorithm) {
    // NCCL's pick where no calibration measured the machine: colltune overrides NCCL only
    // where measurements back its prices.
    table = calibration_.calibrated ? nccl_override_table(*pricer_, nccl_margin_) : nccl_choice_table(*pricer_);
  } else if (pricer_) {
    table = nccl_algorithm_table(*pricer_, nccl_algo_of(algorithm), algorithm);
  } else {
    AlgoTableOptions options;
    options.algorithms = ids;
    options.hierarchical = false;
    table = build_algo_table(cost_, options);
  }
  return std::make_shared<const std::vector<SizeRange>>(std::move(table));
}

sim::StepConfig RuntimeModel::step_config(const Candidate& c) const {
  sim::StepConfig config = to_step_config(c);
  if (ps_) {
    if (c.algorithm != "ps") throw Error("--runtime ps runs algorithm ps (got " + c.algorithm + ")");
    config.price_buffer = [this, chunk = config.options.chunk_elems](std::size_t bytes, std::size_t elem_size, std::size_t /*tensors*/) {
      return sim::BufferPrice{"ps", ps_->time_us(bytes, elem_size, chunk)};
    };
    return config;
  }
  if (runtime_ == coll::Runtime::horovod)
    config.fusion_threshold_bytes = horovod_fusion_threshold(c.fusion_threshold_bytes, cost_.layout.max_ranks_per_host());
  if (c.algorithm == kNcclChoice && pricer_) {
    config.price_buffer = [this](std::size_t bytes, std::size_t elem_size, std::size_t /*tensors*/) {
      return buffer_price(pricer_->price(sim::NcclColl::allreduce, bytes, elem_size));
    };
    return config;
  }
  if (c.algorithm == kNcclChoice) throw Error("algorithm nccl: " + fallback_);
  // Horovod's flag with algorithm ring (the space's only hierarchical choice: the cross-host
  // phase is MPI's): Horovod's own path. Other pairings stay registry `hierarchical` over that
  // inner algorithm, which the step model finds inapplicable or prices as colltune's schedule.
  if (c.hierarchical && horovod_hierarchical_ && c.algorithm == kHorovodCrossHost) {
    config.price_buffer = [this](std::size_t bytes, std::size_t elem_size, std::size_t tensors) {
      const sim::HorovodHierarchicalPhases p = horovod_hierarchical_->phases(bytes, elem_size, tensors);
      return sim::BufferPrice{"horovod_hierarchical(" + p.nccl_reduce_scatter + ", mpi ring, " + p.nccl_allgather + ")",
                              p.total_us()};
    };
    return config;
  }
  if (!runs_nccl_allreduce(c)) return config;
  // Without NCCL's model a fixed algorithm is colltune's schedule of it, under either engine.
  if (!pricer_ && c.algorithm != kAutoAlgorithm) return config;
  config.price_buffer = [this, table = table_for(c.algorithm)](std::size_t bytes, std::size_t elem_size, std::size_t /*tensors*/) {
    if (pricer_) return buffer_price(price_by_table(*pricer_, *table, bytes));
    const SizeRange& row = row_for(*table, bytes);
    sim::CollectiveRequest request;
    request.algorithm = row.choice.algorithm;
    request.bytes = bytes;
    request.elem_size = elem_size;
    return sim::BufferPrice{row.choice.algorithm, cost_.time_us(request)};
  };
  return config;
}

std::vector<SizeRange> RuntimeModel::nccl_table(const Candidate& c) const {
  if (c.algorithm == kNcclChoice || !runs_nccl_allreduce(c)) return {};
  return plugin_rows(*table_for(c.algorithm));
}

std::string RuntimeModel::why_no_nccl_rows(const Candidate& c) const {
  if (!nccl_table(c).empty()) return "";
  if (runtime_ == coll::Runtime::colltune) return "--runtime colltune: colltune's executors run the allreduces";
  if (ps_) return "--runtime ps runs no NCCL allreduce";
  if (c.hierarchical) return "Horovod's hierarchical allreduce makes no ncclAllReduce calls (reduce-scatter, MPI, allgather)";
  if (!pricer_) return fallback_;
  if (!calibration_.calibrated)
    return "NCCL's choice is predicted best on an uncalibrated machine: colltune overrides NCCL only where a "
           "calibration measured the machine (colltune calibrate ... -o cal.json, then tune --topology cal.json)";
  // The tuned configuration keeps NCCL's choice because the step is not faster with an
  // override, which says nothing about single sizes: the file must not claim more.
  if (c.algorithm == kNcclChoice)
    return "the tuned configuration keeps NCCL's own algorithm and protocol choice (no per-size override predicts a "
           "faster step)";
  char margin[32];
  std::snprintf(margin, sizeof margin, "%g%%", 100 * nccl_margin_);
  return std::string("no size where another algorithm and protocol beats NCCL's pick by more than ") + margin;
}

// The ps exchange at powers of two (fp32), one row: the algorithm is fixed.
std::vector<SizeRange> RuntimeModel::ps_table() const {
  std::vector<SizeRange> table;
  std::size_t previous = 0;
  for (std::size_t s = 1 * KiB; s <= 1 * GiB; s *= 2) {
    add_sample(table, SizeRange{0, s, AlgoChoice{"ps", "", 0}, "", s, ps_->time_us(s, 4), -1, ""}, s, previous);
    previous = s;
  }
  table.back().max_bytes = std::max(table.back().max_bytes, kTableMaxBytes);
  return table;
}

std::vector<SizeRange> RuntimeModel::size_table(const Candidate& c) const {
  if (ps_) return ps_table();
  if (c.algorithm == kNcclChoice && pricer_) return nccl_choice_table(*pricer_);
  if (runs_nccl_allreduce(c) && c.algorithm != kNcclChoice) return *table_for(c.algorithm);
  AlgoTableOptions options;
  options.choices = possible_algorithms(c);
  options.fp16 = c.fp16;
  return build_algo_table(cost_, options);
}

std::vector<AlgoChoice> RuntimeModel::possible_algorithms(const Candidate& c) const {
  std::vector<AlgoChoice> out;
  if (c.algorithm == kNcclChoice) {
    for (const auto& a : coll::algorithms())
      if (a.collective == coll::Collective::allreduce && !a.nccl_name.empty()) out.push_back({a.id, "", 0});
    return out;
  }
  if (c.algorithm != kAutoAlgorithm) {
    if (c.hierarchical) return {AlgoChoice{std::string(kHierarchicalAlgorithm), c.algorithm, c.chunk_bytes}};
    return {AlgoChoice{c.algorithm, "", c.chunk_bytes}};
  }
  for (const auto& a : coll::algorithms()) {
    if (a.collective != coll::Collective::allreduce || !a.runs_on(runtime_) || a.in_switch) continue;
    if (a.placement == coll::Placement::flat) out.push_back({a.id, "", c.chunk_bytes});
    else if (c.hierarchical) out.push_back({a.id, "ring", c.chunk_bytes});  // "auto" keeps the default inner
  }
  return out;
}

}  // namespace colltune::tuner
