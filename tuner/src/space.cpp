// The search space: default knob values, `--fix` parsing and enumeration.
#include "colltune/tuner/space.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"

namespace colltune::tuner {
namespace {

std::string normalise_knob(std::string_view knob) {
  std::string out;
  for (char c : knob) out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Short aliases accepted on the command line.
std::string canonical_knob(const std::string& knob) {
  if (knob == "fusion") return "fusion-threshold";
  if (knob == "cycle") return "cycle-time";
  if (knob == "algo") return "algorithm";
  if (knob == "hier") return "hierarchical";
  return knob;
}

bool parse_switch(std::string_view knob, std::string_view value) {
  std::string v = normalise_knob(value);
  if (v == "on" || v == "1" || v == "true" || v == "yes") return true;
  if (v == "off" || v == "0" || v == "false" || v == "no") return false;
  throw Error("--fix " + std::string(knob) + "=" + std::string(value) + ": expected on or off");
}

// Cycle times 0.1 .. 100 ms at three points per decade (x 10^(1/3)), rounded to 3 digits so
// that 1 ms and 10 ms are exact.
std::vector<double> default_cycle_times_us() {
  std::vector<double> out;
  for (int k = 0; k <= 9; ++k) {
    double ms = 0.1 * std::pow(10.0, k / 3.0);
    double rounded = std::round(ms * 1000.0) / 1000.0;
    out.push_back(rounded * 1000.0);
  }
  return out;
}

std::vector<std::size_t> default_fusion_thresholds() {
  std::vector<std::size_t> out{0};
  for (std::size_t t = 1 * MiB; t <= 256 * MiB; t *= 2) out.push_back(t);
  return out;
}

}  // namespace

Candidate horovod_baseline() { return Candidate{}; }

std::string describe(const Candidate& c) {
  std::ostringstream out;
  out << "fusion=" << format_bytes(c.fusion_threshold_bytes) << " cycle=" << format_time_us(c.cycle_time_us)
      << " fp16=" << (c.fp16 ? "on" : "off") << " algo=" << c.algorithm << " chunk=" << format_bytes(c.chunk_bytes)
      << " hier=" << (c.hierarchical ? "on" : "off");
  return out.str();
}

sim::StepConfig to_step_config(const Candidate& c) {
  sim::StepConfig config;
  config.fusion_threshold_bytes = c.fusion_threshold_bytes;
  config.cycle_time_us = c.cycle_time_us;
  config.fp16_compress = c.fp16;
  const std::size_t wire_elem = c.fp16 ? 2 : 4;
  config.options.chunk_elems = c.chunk_bytes / wire_elem;
  config.auto_per_host = c.hierarchical;
  if (c.hierarchical && c.algorithm != kAutoAlgorithm) {
    config.algorithm = kHierarchicalAlgorithm;
    config.options.inner = c.algorithm;
  } else {
    config.algorithm = c.algorithm;
  }
  return config;
}

const std::vector<std::string>& knob_names() {
  static const std::vector<std::string> names{"fusion-threshold", "cycle-time", "fp16",
                                              "algorithm",        "chunk",      "hierarchical"};
  return names;
}

namespace {
// "fusion-threshold, cycle-time, ..." for error messages.
std::string known_knobs() {
  std::string out;
  for (const auto& k : knob_names()) out += (out.empty() ? "" : ", ") + k;
  return out;
}
}  // namespace

SearchSpace SearchSpace::defaults(const std::vector<std::string>& flat_algorithms) {
  SearchSpace s;
  s.fusion_thresholds = default_fusion_thresholds();
  s.cycle_times_us = default_cycle_times_us();
  s.fp16 = {false, true};
  s.algorithms.emplace_back(kAutoAlgorithm);
  for (const auto& a : flat_algorithms) s.algorithms.push_back(a);
  s.chunks = {0, 1 * MiB};
  s.hierarchical = {false, true};
  s.hierarchical_algorithms = flat_algorithms;
  return s;
}

bool SearchSpace::is_fixed(std::string_view knob) const {
  return std::find(fixed_.begin(), fixed_.end(), canonical_knob(normalise_knob(knob))) != fixed_.end();
}

void SearchSpace::fix(std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == assignment.size()) {
    throw Error("--fix '" + std::string(assignment) + "': expected knob=value (knobs: " + known_knobs() + ")");
  }
  const std::string knob = canonical_knob(normalise_knob(assignment.substr(0, eq)));
  const std::string_view value = assignment.substr(eq + 1);
  const std::string what = "--fix " + knob;
  if (knob == "fusion-threshold") {
    std::size_t bytes = parse_size(value, what, BareNumber::refused);
    if (bytes > 4 * GiB) throw Error(what + "=" + std::string(value) + ": above 4 GiB");
    if (bytes % MiB != 0)
      throw Error(what + "=" + std::string(value) + ": not a whole number of MiB (horovod.yaml's fusion_threshold_mb "
                  "and horovodrun --fusion-threshold-mb take an integer)");
    fusion_thresholds = {bytes};
  } else if (knob == "cycle-time") {
    double us = parse_time_us(value, what);
    if (!(us > 0) || !std::isfinite(us)) throw Error(what + "=" + std::string(value) + ": must be positive");
    cycle_times_us = {us};
  } else if (knob == "fp16") {
    fp16 = {parse_switch(knob, value)};
  } else if (knob == "algorithm") {
    fix_algorithm(what, std::string(value));
  } else if (knob == "chunk") {
    const std::size_t bytes = parse_size(value, what, BareNumber::refused);
    if (runtime != "colltune" && bytes != 0)
      throw Error(what + "=" + std::string(value) + ": --runtime " + runtime + " leaves chunking to NCCL (only chunk=0)");
    chunks = {bytes};
  } else if (knob == "hierarchical") {
    const bool on = parse_switch(knob, value);
    if (std::find(hierarchical.begin(), hierarchical.end(), on) == hierarchical.end())
      throw Error(what + "=" + std::string(value) + ": --runtime " + runtime + " has no hierarchical allreduce "
                  "(Horovod's path; use --runtime horovod)");
    hierarchical = {on};
  } else {
    throw Error("--fix " + knob + ": unknown knob (known: " + known_knobs() + ")");
  }
  if (enumerate().empty()) {
    std::string with;
    for (const auto& a : hierarchical_algorithms) with += (with.empty() ? "" : ", ") + a;
    throw Error("--fix " + std::string(assignment) + ": no valid configuration left (with --runtime " + runtime +
                ", hierarchical=on combines only with algorithm " + (with.empty() ? "none" : with) + ")");
  }
  fixed_.push_back(knob);
}

bool SearchSpace::valid(const std::string& algorithm, bool hier) const {
  return !hier || std::find(hierarchical_algorithms.begin(), hierarchical_algorithms.end(), algorithm) !=
                      hierarchical_algorithms.end();
}

void SearchSpace::fix_algorithm(const std::string& what, const std::string& id) {
  if (std::find(algorithms.begin(), algorithms.end(), id) != algorithms.end()) {
    algorithms = {id};
    return;
  }
  std::string known;
  for (const auto& a : algorithms) known += (known.empty() ? "" : ", ") + a;
  const bool registered = std::any_of(coll::algorithms().begin(), coll::algorithms().end(),
                                      [&](const coll::Algorithm& a) { return a.id == id; });
  if (registered || id == kNcclChoice)
    throw Error(what + "=" + id + ": --runtime " + runtime + " cannot run it (it can: " + known + ")");
  throw Error(what + "=" + id + ": unknown algorithm (known: " + known + ")");
}

std::vector<Candidate> SearchSpace::enumerate() const {
  std::vector<Candidate> out;
  for (std::size_t fusion : fusion_thresholds)
    for (double cycle : cycle_times_us)
      for (bool half : fp16)
        for (const auto& algo : algorithms)
          for (std::size_t chunk : chunks)
            for (bool hier : hierarchical) {
              if (!valid(algo, hier)) continue;
              out.push_back(Candidate{fusion, cycle, half, algo, chunk, hier});
            }
  return out;
}

bool SearchSpace::contains(const Candidate& c) const {
  auto has = [](const auto& values, const auto& v) { return std::find(values.begin(), values.end(), v) != values.end(); };
  if (!valid(c.algorithm, c.hierarchical)) return false;
  return has(fusion_thresholds, c.fusion_threshold_bytes) && has(cycle_times_us, c.cycle_time_us) &&
         has(fp16, c.fp16) && has(algorithms, c.algorithm) && has(chunks, c.chunk_bytes) &&
         has(hierarchical, c.hierarchical);
}

}  // namespace colltune::tuner
