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

// The accessors of a knob whose values in the space are SearchSpace::*Values and whose value in
// a candidate is Candidate::*Field.
template <auto Values, auto Field>
struct Member {
  static std::size_t count(const SearchSpace& s) { return (s.*Values).size(); }
  static void assign(const SearchSpace& s, std::size_t i, Candidate& c) { c.*Field = (s.*Values)[i]; }
  static bool contains(const SearchSpace& s, const Candidate& c) { return has(s.*Values, c.*Field); }
  static bool same(const Candidate& a, const Candidate& b) { return a.*Field == b.*Field; }
  static KnobJson json(const Candidate& c) { return KnobJson{c.*Field}; }
  static double scalar(const Candidate& c) { return static_cast<double>(c.*Field); }  // a switch: 0 or 1
  static std::vector<double> values(const SearchSpace& s) { return as_doubles(s.*Values); }
};

template <auto Field>
std::string bytes_text(const Candidate& c) {
  return format_bytes(c.*Field);
}

template <auto Field>
std::string on_off_text(const Candidate& c) {
  return on_off(c.*Field);
}

using Fusion = Member<&SearchSpace::fusion_thresholds, &Candidate::fusion_threshold_bytes>;
using Cycle = Member<&SearchSpace::cycle_times_us, &Candidate::cycle_time_us>;
using Fp16 = Member<&SearchSpace::fp16, &Candidate::fp16>;
using Algorithm = Member<&SearchSpace::algorithms, &Candidate::algorithm>;
using Chunk = Member<&SearchSpace::chunks, &Candidate::chunk_bytes>;
using Hierarchical = Member<&SearchSpace::hierarchical, &Candidate::hierarchical>;

std::vector<Knob> make_knobs() {
  using E = KnobEncoding;
  return {
      {.name = "fusion-threshold", .alias = "fusion", .label = "fusion", .column = "fusion",
       .json_key = "fusion_threshold_bytes", .encoding = E::log_scale, .fix = fix_fusion, .count = Fusion::count,
       .assign = Fusion::assign, .contains = Fusion::contains, .same = Fusion::same,
       .text = bytes_text<&Candidate::fusion_threshold_bytes>, .cell = bytes_text<&Candidate::fusion_threshold_bytes>,
       .json = Fusion::json, .scalar = Fusion::scalar, .log_floor = static_cast<double>(MiB), .values = Fusion::values},
      {.name = "cycle-time", .alias = "cycle", .label = "cycle", .column = "cycle", .json_key = "cycle_time_ms",
       .encoding = E::log_scale, .fix = fix_cycle, .count = Cycle::count, .assign = Cycle::assign,
       .contains = Cycle::contains, .same = Cycle::same,
       .text = [](const Candidate& c) { return format_time_us(c.cycle_time_us); }, .cell = cycle_cell,
       .json = [](const Candidate& c) { return KnobJson{c.cycle_time_us / 1000.0}; }, .scalar = Cycle::scalar,
       .log_floor = 1000.0, .values = Cycle::values},
      {.name = "fp16", .label = "fp16", .column = "fp16", .json_key = "fp16_compression", .encoding = E::binary,
       .fix = fix_fp16, .count = Fp16::count, .assign = Fp16::assign, .contains = Fp16::contains, .same = Fp16::same,
       .text = on_off_text<&Candidate::fp16>, .cell = on_off_text<&Candidate::fp16>, .json = Fp16::json,
       .scalar = Fp16::scalar},
      {.name = "algorithm", .alias = "algo", .label = "algo", .column = "algorithm", .json_key = "algorithm",
       .encoding = E::one_hot, .fix = fix_algorithm, .count = Algorithm::count, .assign = Algorithm::assign,
       .contains = Algorithm::contains, .same = Algorithm::same, .text = [](const Candidate& c) { return c.algorithm; },
       .cell = [](const Candidate& c) { return c.algorithm; }, .json = Algorithm::json, .one_hot = algorithm_one_hot},
      {.name = "chunk", .label = "chunk", .column = "chunk", .json_key = "chunk_bytes", .encoding = E::log_scale,
       .fix = fix_chunk, .count = Chunk::count, .assign = Chunk::assign, .contains = Chunk::contains,
       .same = Chunk::same, .text = bytes_text<&Candidate::chunk_bytes>, .cell = bytes_text<&Candidate::chunk_bytes>,
       .json = Chunk::json, .scalar = Chunk::scalar, .log_floor = static_cast<double>(MiB), .values = Chunk::values},
      {.name = "hierarchical", .alias = "hier", .label = "hier", .column = "hierarchical", .json_key = "hierarchical",
       .encoding = E::binary, .fix = fix_hierarchical, .count = Hierarchical::count, .assign = Hierarchical::assign,
       .contains = Hierarchical::contains, .same = Hierarchical::same, .text = on_off_text<&Candidate::hierarchical>,
       .cell = on_off_text<&Candidate::hierarchical>, .json = Hierarchical::json, .scalar = Hierarchical::scalar},
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
