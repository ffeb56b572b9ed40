#pragma once
// The one table of tuner knobs. Each entry says everything the tuner's generic parts need: its
// --fix name and alias, how it is parsed and pinned, its values in the search space (for
// enumeration and membership), its text (describe, the report's cell and column), its
// colltune.json key and value, and its Bayesian encoding. space.cpp (fix, enumerate,
// contains, describe), strategy.cpp (encode, knobs changed), emit_json.cpp and report_html.cpp
// iterate over it.
//
// Adding a knob: docs/tuner-tables.md lists every place (a field of Candidate, its values in
// SearchSpace, one entry here with designated initializers, its row in the docs, its test).
// Format-specific emitters (horovod.yaml, nccl.env, ...) and RuntimeModel's pricing read the
// fields they map.
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "colltune/tuner/space.hpp"

namespace colltune::tuner {

// How the Bayesian strategy encodes a knob (strategy.hpp encode()): log-scaled coordinates in
// [0, 1] first (over the space's positive values; 0 maps to the bottom), then switches as 0/1,
// then one-hot groups over the space's values, each group in table order.
enum class KnobEncoding { log_scale, binary, one_hot };

// A knob's value in colltune.json.
using KnobJson = std::variant<bool, std::size_t, double, std::string>;

// Written with designated initializers (knobs.cpp), so each field is named where it is set.
struct Knob {
  std::string_view name;   // --fix spelling: "fusion-threshold"
  std::string_view alias = {};  // short --fix spelling: "fusion"; empty: none
  std::string_view label;  // describe(): "fusion"
  std::string_view column; // the report's column: "fusion"
  std::string_view json_key;
  KnobEncoding encoding = KnobEncoding::binary;
  // --fix knob=value: parses `value` and pins the space to it; throws colltune::Error that
  // starts with `what` ("--fix fusion-threshold") and names the value.
  void (*fix)(SearchSpace& space, const std::string& what, std::string_view value);
  // The space's values: how many, the i-th written into a candidate, whether it holds c's.
  std::size_t (*count)(const SearchSpace& space);
  void (*assign)(const SearchSpace& space, std::size_t i, Candidate& c);
  bool (*contains)(const SearchSpace& space, const Candidate& c);
  bool (*same)(const Candidate& a, const Candidate& b);
  std::string (*text)(const Candidate& c);         // describe() and the summary
  std::string (*cell)(const Candidate& c);         // the report's table cell (HTML-safe)
  KnobJson (*json)(const Candidate& c);
  // The encoding's functions; those an encoding does not use are null (tests/tuner/test_knobs.cpp
  // checks each knob has the ones it needs).
  // log_scale: the value and the floor used when the space has no positive value; binary: the
  // 0/1 value; one_hot: unused (encoded against the space's values by `one_hot`).
  double (*scalar)(const Candidate& c) = nullptr;
  double log_floor = 0;
  // one_hot only: 1/0 per value of the space, in order.
  void (*one_hot)(const SearchSpace& space, const Candidate& c, std::vector<double>& out) = nullptr;
  // log_scale only: the space's values as doubles (for the encoding's range).
  std::vector<double> (*values)(const SearchSpace& space) = nullptr;
};

// The table, in enumeration order (the first knob varies slowest).
const std::vector<Knob>& knobs();
// The knob named `name` (its --fix name or alias, any case, '_' for '-'); nullptr if none.
const Knob* find_knob(std::string_view name);

}  // namespace colltune::tuner
