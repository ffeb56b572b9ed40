// Workload validation, the versioned JSON workload format (docs/workload-format.md) and
// load_workload(), which accepts a profile name, a workload file or a Horovod timeline.
#include "colltune/sim/workload.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "colltune/common/finite.hpp"
#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/json_input.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/sim/timeline.hpp"

namespace colltune::sim {
namespace {

using nlohmann::json;

std::string num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

[[noreturn]] void bad(std::string_view source, const std::string& field, const std::string& why) {
  throw Error(std::string(source) + ": " + field + ": " + why);
}

void check_time(std::string_view source, const std::string& field, double value) {
  if (!std::isfinite(value) || value < 0) bad(source, field, num(value) + " must be a non-negative finite time in us");
}

const json& require(const json& object, const char* key, std::string_view source, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) bad(source, where + key, "missing");
  return *it;
}

double read_time(const json& object, const char* key, std::string_view source, const std::string& where) {
  const json& v = require(object, key, source, where);
  if (!v.is_number()) bad(source, where + key, json_input::shown(v) + " is not a number");
  const double value = v.get<double>();
  check_time(source, where + key, value);
  return value;
}

std::string read_string(const json& object, const char* key, std::string_view source, const std::string& where) {
  const json& v = require(object, key, source, where);
  if (!v.is_string()) bad(source, where + key, json_input::shown(v) + " is not a string");
  return v.get<std::string>();
}

// Rejects keys outside `allowed`, so a misspelt field is an error rather than silently ignored.
void check_keys(const json& object, std::initializer_list<std::string_view> allowed, std::string_view source,
                const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      bad(source, where + it.key(), "unknown field");
    }
  }
}

GradTensor read_tensor(const json& t, std::string_view source, std::size_t index) {
  const std::string where = "tensors[" + std::to_string(index) + "].";
  if (!t.is_object()) bad(source, where.substr(0, where.size() - 1), json_input::shown(t) + " is not an object");
  check_keys(t, {"name", "count", "dtype", "ready_us"}, source, where);
  GradTensor out;
  out.name = read_string(t, "name", source, where);
  const json& count = require(t, "count", source, where);
  if (!count.is_number_unsigned()) bad(source, where + "count", json_input::shown(count) + " must be a non-negative integer");
  out.count = count.get<std::size_t>();
  if (t.contains("dtype")) {
    const std::string dtype = read_string(t, "dtype", source, where);
    try {
      out.dtype = coll::parse_dtype(dtype);
    } catch (const Error& e) {
      bad(source, where + "dtype", e.what());
    }
  }
  out.ready_us = read_time(t, "ready_us", source, where);
  return out;
}

Workload read_workload(const json& doc, std::string_view source) {
  if (!doc.is_object()) bad(source, "(top level)", "expected a JSON object");
  check_keys(doc, {"format", "version", "name", "forward_us", "backward_us", "tensors"}, source, "");
  if (doc.contains("format") && doc["format"] != "colltune-workload") {
    bad(source, "format", json_input::shown(doc["format"]) + " is not \"colltune-workload\"");
  }
  const json& version = require(doc, "version", source, "");
  if (!version.is_number_integer() || version.get<long long>() != kWorkloadFormatVersion) {
    bad(source, "version", json_input::shown(version) + " is not supported (this build reads version " +
                               std::to_string(kWorkloadFormatVersion) + ")");
  }
  Workload w;
  w.name = doc.contains("name") ? read_string(doc, "name", source, "") : std::string(source);
  w.forward_us = read_time(doc, "forward_us", source, "");
  w.backward_us = read_time(doc, "backward_us", source, "");
  const json& tensors = require(doc, "tensors", source, "");
  if (!tensors.is_array()) bad(source, "tensors", "is not an array");
  w.tensors.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) w.tensors.push_back(read_tensor(tensors[i], source, i));
  std::stable_sort(w.tensors.begin(), w.tensors.end(),
                   [](const GradTensor& a, const GradTensor& b) { return a.ready_us < b.ready_us; });
  return w;
}

// A timeline is a Chrome trace: a top-level array (possibly cut short) or {"traceEvents": ...}.
bool looks_like_timeline(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return false;
  if (text[first] == '[') return true;
  return text.find("\"traceEvents\"") != std::string::npos && text.find("\"tensors\"") == std::string::npos;
}

}  // namespace

std::size_t Workload::total_bytes() const {
  std::size_t total = 0;
  for (const GradTensor& t : tensors) total += t.bytes();
  return total;
}

std::size_t Workload::total_params() const {
  std::size_t total = 0;
  for (const GradTensor& t : tensors) total += t.count;
  return total;
}

std::string_view dtype_json_name(coll::DType dtype) {
  switch (dtype) {
    case coll::DType::f32: return "fp32";
    case coll::DType::f64: return "fp64";
    case coll::DType::f16: return "fp16";
    case coll::DType::bf16: return "bf16";
    case coll::DType::i32: return "int32";
    case coll::DType::i64: return "int64";
  }
  return "fp32";
}

void validate_workload(const Workload& w, std::string_view source) {
  check_time(source, "forward_us", w.forward_us);
  check_time(source, "backward_us", w.backward_us);
  if (w.tensors.empty()) bad(source, "tensors", "is empty: a workload needs at least one gradient tensor");
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  // Field names are built only on error: the step model validates on every run.
  auto field = [&](std::size_t i, const char* key) {
    return "tensors[" + std::to_string(i) + "] (" + w.tensors[i].name + ")." + key;
  };
  std::size_t total = 0;
  double previous = 0;
  for (std::size_t i = 0; i < w.tensors.size(); ++i) {
    const GradTensor& t = w.tensors[i];
    const std::size_t elem = coll::dtype_size(t.dtype);
    if (t.count > kMax / elem) bad(source, field(i, "count"), std::to_string(t.count) + " overflows a byte count");
    if (t.bytes() > kMax - total) bad(source, field(i, "count"), "total gradient bytes overflow a byte count");
    total += t.bytes();
    if (!std::isfinite(t.ready_us) || t.ready_us < 0) check_time(source, field(i, "ready_us"), t.ready_us);
    if (t.ready_us > w.backward_us) {
      bad(source, field(i, "ready_us"), num(t.ready_us) + " is after the end of the backward pass (backward_us " +
                                            num(w.backward_us) + ")");
    }
    if (t.ready_us < previous) {
      bad(source, field(i, "ready_us"), num(t.ready_us) + " is earlier than the tensor before it (" + num(previous) +
                                            "): tensors must be listed in the order they become ready");
    }
    previous = t.ready_us;
  }
}

Workload parse_workload_json(std::string_view text, std::string_view source) {
  const json doc = json_input::parse(text, source);  // syntax, number range, depth
  Workload w;
  try {
    w = read_workload(doc, source);
  } catch (const json::exception& e) {  // a type the reader did not check: still one clear line
    json_input::rethrow(e, source, "");
  }
  validate_workload(w, source);
  return w;
}

Workload load_workload_json(const std::filesystem::path& path) {
  return parse_workload_json(read_file(path), path.string());
}

std::string workload_to_json(const Workload& w) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const GradTensor& t : w.tensors) {
    tensors.push_back({{"name", t.name}, {"count", t.count}, {"dtype", dtype_json_name(t.dtype)}, {"ready_us", t.ready_us}});
  }
  nlohmann::ordered_json doc = {{"format", "colltune-workload"}, {"version", kWorkloadFormatVersion}, {"name", w.name},
              {"forward_us", w.forward_us},     {"backward_us", w.backward_us},      {"tensors", tensors}};
  return finite::json_text(doc, 1, "the workload JSON") + "\n";
}

Workload load_workload(const std::string& spec, std::vector<std::string>* notes, std::string_view gpu, bool* timeline) {
  if (timeline != nullptr) *timeline = false;
  if (is_profile_spec(spec)) return parse_profile_spec(spec, gpu);
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::status(spec, ec))) {
    if (spec.size() > 5 && spec.ends_with(".json")) throw Error(spec + ": cannot read (no such file)");
    return parse_profile_spec(spec);  // throws "unknown model ..." listing the profiles
  }
  const std::string text = read_file(spec);  // a directory, FIFO or device is refused, named
  if (looks_like_timeline(text)) {
    if (timeline != nullptr) *timeline = true;
    TimelineImport imported = import_horovod_timeline_text(text, spec);
    if (notes != nullptr) notes->insert(notes->end(), imported.notes.begin(), imported.notes.end());
    return std::move(imported.workload);
  }
  return parse_workload_json(text, spec);
}

Workload with_compute_scaled(const Workload& w, double factor) {
  Workload out = w;
  out.forward_us *= factor;
  out.backward_us *= factor;
  for (GradTensor& t : out.tensors) t.ready_us *= factor;
  return out;
}

}  // namespace colltune::sim
