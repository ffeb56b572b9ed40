// colltune.json (versioned) and the `--json` summary.
#include <cmath>
#include <nlohmann/json.hpp>

#include "colltune/common/finite.hpp"
#include "colltune/tuner/emit.hpp"
#include "colltune/tuner/knobs.hpp"

namespace colltune::tuner {
namespace {

using nlohmann::json;

json ms_or_null(double us) { return std::isfinite(us) ? json(us / 1000.0) : json(nullptr); }

json candidate_json(const Candidate& c) {
  json out = json::object();
  for (const Knob& k : knobs())
    std::visit([&](const auto& v) { out[std::string(k.json_key)] = v; }, k.json(c));
  return out;
}

json table_json(const std::vector<SizeRange>& table) {
  json rows = json::array();
  for (const auto& r : table) {
    rows.push_back({{"min_bytes", r.min_bytes},
                    {"max_bytes", r.max_bytes},
                    {"algorithm", r.choice.algorithm},
                    {"inner", r.choice.inner},
                    {"protocol", r.protocol},
                    {"chunk_bytes", r.choice.chunk_bytes},
                    {"sampled_bytes", r.sampled_bytes},
                    {"time_us", r.time_us}});
    if (!r.nccl_algorithm.empty()) rows.back()["nccl_algorithm"] = r.nccl_algorithm;
    if (r.nccl_pick_us >= 0) rows.back()["nccl_pick_time_us"] = r.nccl_pick_us;
  }
  return rows;
}

// Every named step cost (step_costs.hpp) by its --cost name, derived ones resolved.
json step_costs_json(const sim::StepCosts& costs) {
  json out = json::object();
  for (const sim::StepCostField& f : sim::step_cost_fields()) out[std::string(f.name)] = costs.*f.member;
  return out;
}

json input_json(const TuneResult& r) {
  json in{{"topology", r.topology},        {"ranks", r.ranks},
          {"hosts", r.hosts},              {"model", r.model},
          {"gradient_bytes", r.gradient_bytes}, {"objective", r.objective},
          {"runtime", std::string(coll::to_string(r.runtime))},
          {"strategy", std::string(to_string(r.strategy))}, {"seed", r.seed},
          {"space_size", r.space_size},    {"evaluations", r.history.size()},
          {"fixed", r.fixes},              {"search_ms", r.search_ms}};
  if (r.step_costs) in["step_costs"] = step_costs_json(*r.step_costs);
  if (!r.compute.empty()) in["compute"] = r.compute;
  return in;
}

json fp16_json(const TuneResult& r) {
  return json{{"chosen", r.best.candidate.fp16},
              {"relative_error", r.fp16.relative_error},
              {"summation_depth", r.fp16.summation_depth},
              {"max_allowed", r.fp16.max_allowed},
              {"accepted", r.fp16.accepted},
              {"method", r.fp16.method},
              {"best_step_time_ms_off", ms_or_null(r.best_fp16_off_us)},
              {"best_step_time_ms_on", ms_or_null(r.best_fp16_on_us)}};
}

json top_json(const TuneResult& r) {
  json rows = json::array();
  for (const auto& e : r.top) {
    json row = candidate_json(e.candidate);
    row["step_time_ms"] = e.step_time_us / 1000.0;
    row["speedup"] = r.baseline.step_time_us / e.step_time_us;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

std::string emit_colltune_json(const TuneResult& r) {
  json chosen = candidate_json(r.best.candidate);
  chosen["hierarchical_allreduce"] = r.hierarchical_allreduce;
  json baseline = candidate_json(r.baseline.candidate);
  baseline["description"] = r.baseline_description;
  baseline["nccl_model"] = r.nccl_priced;
  baseline["step_time_ms"] = ms_or_null(r.baseline.step_time_us);
  if (r.allreduce_step_us > 0) baseline["allreduce_step_time_ms"] = ms_or_null(r.allreduce_step_us);
  json doc{{"format", "colltune-tune"},
           {"version", kColltuneJsonVersion},
           {"input", input_json(r)},
           {"chosen", chosen},
           {"predicted",
            {{"step_time_ms", r.best.step_time_us / 1000.0},
             {"compute_ms", r.best_step.compute_us / 1000.0},
             {"exposed_comm_ms", r.best_step.exposed_comm_us / 1000.0},
             {"scaling_efficiency", r.best_step.scaling_efficiency},
             {"buffers", r.best_step.buffers.size()}}},
           {"baseline", baseline},
           {"speedup", r.speedup()},
           {"fp16", fp16_json(r)},
           {"algorithms", table_json(r.algo_table)},
           {"nccl_algorithms", table_json(r.nccl_table)},
           {"nccl_algorithms_empty_because", r.no_nccl_rows},
           {"top", top_json(r)}};
  return finite::json_text(doc, 2, "colltune.json") + "\n";
}

std::string summary_json(const TuneResult& r, const std::vector<std::filesystem::path>& files) {
  json paths = json::array();
  for (const auto& f : files) paths.push_back(f.string());
  json doc{{"topology", r.topology},
           {"model", r.model},
           {"compute", r.compute},
           {"ranks", r.ranks},
           {"objective", r.objective},
           {"runtime", std::string(coll::to_string(r.runtime))},
           {"strategy", std::string(to_string(r.strategy))},
           {"evaluations", r.history.size()},
           {"chosen", candidate_json(r.best.candidate)},
           {"hierarchical_allreduce", r.hierarchical_allreduce},
           {"step_time_ms", r.best.step_time_us / 1000.0},
           {"baseline_step_time_ms", ms_or_null(r.baseline.step_time_us)},
           {"baseline", r.baseline_description},
           {"speedup", r.speedup()},
           {"fp16_relative_error", r.fp16.relative_error},
           {"files", paths}};
  return finite::json_text(doc, 2, "tune --json");
}

}  // namespace colltune::tuner
