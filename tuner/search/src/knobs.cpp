// The table of tuner knobs (knobs.hpp): one entry per knob, its parsing, values, text and
// encoding side by side.
#include "colltune/tuner/knobs.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/sim/step_model.hpp"

namespace colltune::tuner {
namespace {

std::string lower_dashed(std::string_view s) {
  std::string out;
  for (char c : s) out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool parse_switch(const std::string& what, std::string_view value) {
  const std::string v = lower_dashed(value);
  if (v == "on" || v == "1" || v == "true" || v == "yes") return true;
  if (v == "off" || v == "0" || v == "false" || v == "no") return false;
  throw Error(what + "=" + std::string(value) + ": expected on or off");
}

std::string on_off(bool v) { return v ? "on" : "off"; }

template <typename T>
bool has(const std::vector<T>& values, const T& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

template <typename T>
std::vector<double> as_doubles(const std::vector<T>& values) {
  return std::vector<double>(values.begin(), values.end());
}

// ---- fusion-threshold: bytes, whole MiB (horovodrun's fusion_threshold_mb is an integer) ----
void fix_fusion(SearchSpace& s, const std::string& what, std::string_view value) {
  const std::size_t bytes = parse_size(value, what, BareNumber::refused);
  if (bytes > 4 * GiB) throw Error(what + "=" + std::string(value) + ": above 4 GiB");
  if (bytes % MiB != 0)
    throw Error(what + "=" + std::string(value) + ": not a whole number of MiB (horovod.yaml's fusion_threshold_mb "
                "and horovodrun --fusion-threshold-mb take an integer)");
  s.fusion_thresholds = {bytes};
}

// ---- cycle-time: microseconds, positive ----
void fix_cycle(SearchSpace& s, const std::string& what, std::string_view value) {
  const double us = sim::parse_cycle_time_us(value, what);
  if (us == 0) parse::refuse(what, value, "must be positive (horovod.yaml's cycle_time_ms)");
  s.cycle_times_us = {us};
}

std::string cycle_cell(const Candidate& c) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g", c.cycle_time_us / 1000.0);
  return std::string(buf) + " ms";
}

// ---- fp16 ----
void fix_fp16(SearchSpace& s, const std::string& what, std::string_view value) { s.fp16 = {parse_switch(what, value)}; }

// ---- algorithm: one the runtime runs (SearchSpace::fix_algorithm says why not) ----
void fix_algorithm(SearchSpace& s, const std::string& what, std::string_view value) {
  s.fix_algorithm(what, std::string(value));
}

void algorithm_one_hot(const SearchSpace& s, const Candidate& c, std::vector<double>& out) {
  for (const auto& a : s.algorithms) out.push_back(a == c.algorithm ? 1.0 : 0.0);
}

// ---- chunk: bytes; NCCL sizes its own chunks; under ps it is the partition size ----
void fix_chunk(SearchSpace& s, const std::string& what, std::string_view value) {
  const std::size_t bytes = parse_size(value, what, BareNumber::refused);
  // Whole fp32 elements, as simulate and bench take --chunk (and so whole fp16 ones on the wire):
  // a 3-byte chunk was priced as no chunking (to_step_config divides by the element size).
  if (bytes % 4 != 0) parse::refuse(what, value, "is not a whole number of fp32 elements (4 B each)");
  if (s.runtime != "colltune" && s.runtime != "ps" && bytes != 0)
    throw Error(what + "=" + std::string(value) + ": --runtime " + s.runtime + " leaves chunking to NCCL (only chunk=0)");
  s.chunks = {bytes};
}

// ---- hierarchical: only where the runtime has a hierarchical allreduce ----
void fix_hierarchical(SearchSpace& s, const std::string& what, std::string_view value) {
  const bool on = parse_switch(what, value);
  if (!has(s.hierarchical, on))
    throw Error(what + "=" + std::string(value) + ": " +
                (s.no_hierarchical_reason.empty() ? "not in the search space" : s.no_hierarchical_reason));
  s.hierarchical = {on};
}

double no_scalar(const Candidate& /*c*/) { return 0; }
std::vector<double> no_values(const SearchSpace& /*s*/) { return {}; }
void no_one_hot(const SearchSpace& /*s*/, const Candidate& /*c*/, std::vector<double>& /*out*/) {}

std::vector<Knob> make_knobs() {
  using E = KnobEncoding;
  return {
      {"fusion-threshold", "fusion", "fusion", "fusion", "fusion_threshold_bytes", E::log_scale, fix_fusion,
       [](const SearchSpace& s) { return s.fusion_thresholds.size(); },
       [](const SearchSpace& s, std::size_t i, Candidate& c) { c.fusion_threshold_bytes = s.fusion_thresholds[i]; },
       [](const SearchSpace& s, const Candidate& c) { return has(s.fusion_thresholds, c.fusion_threshold_bytes); },
       [](const Candidate& a, const Candidate& b) { return a.fusion_threshold_bytes == b.fusion_threshold_bytes; },
       [](const Candidate& c) { return format_bytes(c.fusion_threshold_bytes); },
       [](const Candidate& c) { return format_bytes(c.fusion_threshold_bytes); },
       [](const Candidate& c) { return KnobJson{c.fusion_threshold_bytes}; },
       [](const Candidate& c) { return static_cast<double>(c.fusion_threshold_bytes); }, static_cast<double>(MiB),
       no_one_hot, [](const SearchSpace& s) { return as_doubles(s.fusion_thresholds); }},
      {"cycle-time", "cycle", "cycle", "cycle", "cycle_time_ms", E::log_scale, fix_cycle,
       [](const SearchSpace& s) { return s.cycle_times_us.size(); },
       [](const SearchSpace& s, std::size_t i, Candidate& c) { c.cycle_time_us = s.cycle_times_us[i]; },
       [](const SearchSpace& s, const Candidate& c) { return has(s.cycle_times_us, c.cycle_time_us); },
       [](const Candidate& a, const Candidate& b) { return a.cycle_time_us == b.cycle_time_us; },
       [](const Candidate& c) { return format_time_us(c.cycle_time_us); }, cycle_cell,
       [](const Candidate& c) { return KnobJson{c.cycle_time_us / 1000.0}; },
       [](const Candidate& c) { return c.cycle_time_us; }, 1000.0, no_one_hot,
       [](const SearchSpace& s) { return as_doubles(s.cycle_times_us); }},
      {"fp16", "", "fp16", "fp16", "fp16_compression", E::binary, fix_fp16,
       [](const SearchSpace& s) { return s.fp16.size(); },
       [](const SearchSpace& s, std::size_t i, Candidate& c) { c.fp16 = s.fp16[i]; },
       [](const SearchSpace& s, const Candidate& c) { return has(s.fp16, c.fp16); },
       [](const Candidate& a, const Candidate& b) { return a.fp16 == b.fp16; },
       [](const Candidate& c) { return on_off(c.fp16); }, [](const Candidate& c) { return on_off(c.fp16); },
       [](const Candidate& c) { return KnobJson{c.fp16}; }, [](const Candidate& c) { return c.fp16 ? 1.0 : 0.0; }, 0,
       no_one_hot, no_values},
      {"algorithm", "algo", "algo", "algorithm", "algorithm", E::one_hot, fix_algorithm,
       [](const SearchSpace& s) { return s.algorithms.size(); },
       [](const SearchSpace& s, std::size_t i, Candidate& c) { c.algorithm = s.algorithms[i]; },
       [](const SearchSpace& s, const Candidate& c) { return has(s.algorithms, c.algorithm); },
       [](const Candidate& a, const Candidate& b) { return a.algorithm == b.algorithm; },
       [](const Candidate& c) { return c.algorithm; }, [](const Candidate& c) { return c.algorithm; },
       [](const Candidate& c) { return KnobJson{c.algorithm}; }, no_scalar, 0, algorithm_one_hot, no_values},
      {"chunk", "", "chunk", "chunk", "chunk_bytes", E::log_scale, fix_chunk,
       [](const SearchSpace& s) { return s.chunks.size(); },
       [](const SearchSpace& s, std::size_t i, Candidate& c) { c.chunk_bytes = s.chunks[i]; },
       [](const SearchSpace& s, const Candidate& c) { return has(s.chunks, c.chunk_bytes); },
       [](const Candidate& a, const Candidate& b) { return a.chunk_bytes == b.chunk_bytes; },
       [](const Candidate& c) { return format_bytes(c.chunk_bytes); },
       [](const Candidate& c) { return format_bytes(c.chunk_bytes); },
       [](const Candidate& c) { return KnobJson{c.chunk_bytes}; },
       [](const Candidate& c) { return static_cast<double>(c.chunk_bytes); }, static_cast<double>(MiB), no_one_hot,
       [](const SearchSpace& s) { return as_doubles(s.chunks); }},
      {"hierarchical", "hier", "hier", "hierarchical", "hierarchical", E::binary, fix_hierarchical,
       [](const SearchSpace& s) { return s.hierarchical.size(); },
       [](const SearchSpace& s, std::size_t i, Candidate& c) { c.hierarchical = s.hierarchical[i]; },
       [](const SearchSpace& s, const Candidate& c) { return has(s.hierarchical, c.hierarchical); },
       [](const Candidate& a, const Candidate& b) { return a.hierarchical == b.hierarchical; },
       [](const Candidate& c) { return on_off(c.hierarchical); },
       [](const Candidate& c) { return on_off(c.hierarchical); },
       [](const Candidate& c) { return KnobJson{c.hierarchical}; },
       [](const Candidate& c) { return c.hierarchical ? 1.0 : 0.0; }, 0, no_one_hot, no_values},
  };
}

}  // namespace

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> table = make_knobs();
  return table;
}

const Knob* find_knob(std::string_view name) {
  const std::string n = lower_dashed(name);
  for (const Knob& k : knobs())
    if (n == k.name || (!k.alias.empty() && n == k.alias)) return &k;
  return nullptr;
}

}  // namespace colltune::tuner
