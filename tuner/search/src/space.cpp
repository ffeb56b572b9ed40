// The search space: default knob values, `--fix` parsing and enumeration.
#include "colltune/tuner/space.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "colltune/tuner/knobs.hpp"

namespace colltune::tuner {
namespace {

std::string normalise_knob(std::string_view knob) {
  std::string out;
  for (char c : knob) out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
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
  std::string out;
  for (const Knob& k : knobs()) {
    if (!out.empty()) out += ' ';
    out.append(k.label).append("=").append(k.text(c));
  }
  return out;
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
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Knob& k : knobs()) out.emplace_back(k.name);
    return out;
  }();
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
  const Knob* k = find_knob(knob);
  return k && std::find(fixed_.begin(), fixed_.end(), k->name) != fixed_.end();
}

void SearchSpace::fix(std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == assignment.size()) {
    throw Error("--fix '" + std::string(assignment) + "': expected knob=value (knobs: " + known_knobs() + ")");
  }
  const Knob* knob = find_knob(assignment.substr(0, eq));
  if (!knob)
    throw Error("--fix " + normalise_knob(assignment.substr(0, eq)) + ": unknown knob (known: " + known_knobs() + ")");
  knob->fix(*this, "--fix " + std::string(knob->name), assignment.substr(eq + 1));
  if (enumerate().empty()) {
    std::string with;
    for (const auto& a : hierarchical_algorithms) with += (with.empty() ? "" : ", ") + a;
    throw Error("--fix " + std::string(assignment) + ": no valid configuration left (with --runtime " + runtime +
                ", hierarchical=on combines only with algorithm " + (with.empty() ? "none" : with) + ")");
  }
  fixed_.emplace_back(knob->name);
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

// Every combination of the knobs' values, the table's first knob varying slowest (an
// odometer over the value indices), keeping the valid ones.
std::vector<Candidate> SearchSpace::enumerate() const {
  const auto& table = knobs();
  std::vector<std::size_t> counts, index(table.size(), 0);
  for (const Knob& k : table) {
    counts.push_back(k.count(*this));
    if (counts.back() == 0) return {};
  }
  std::vector<Candidate> out;
  for (;;) {
    Candidate c;
    for (std::size_t k = 0; k < table.size(); ++k) table[k].assign(*this, index[k], c);
    if (valid(c.algorithm, c.hierarchical)) out.push_back(std::move(c));
    std::size_t k = table.size();
    while (k > 0 && ++index[k - 1] == counts[k - 1]) index[--k] = 0;
    if (k == 0) return out;
  }
}

bool SearchSpace::contains(const Candidate& c) const {
  if (!valid(c.algorithm, c.hierarchical)) return false;
  return std::all_of(knobs().begin(), knobs().end(), [&](const Knob& k) { return k.contains(*this, c); });
}

}  // namespace colltune::tuner
