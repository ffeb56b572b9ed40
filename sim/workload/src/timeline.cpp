// Horovod timeline import (see timeline.hpp for the format and the mapping to a workload).
#include "colltune/sim/timeline.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/json_input.hpp"
#include "colltune/common/parse.hpp"

namespace colltune::sim {
namespace {

using nlohmann::json;
constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

// What one tensor's track ("process") tells us.
struct Track {
  std::string name;
  std::vector<std::pair<std::string, double>> open;  // "B" events not yet closed: name, start
  bool allreduce = false;
  double first_negotiate = kUnset;      // first NEGOTIATE_ALLREDUCE start
  double first_op_start = kUnset;       // first top-level ALLREDUCE start
  double first_op_end = kUnset;
  double second_op_start = kUnset;
  std::size_t op_starts = 0;
  std::vector<double> op_start_times;   // every top-level ALLREDUCE start
  std::vector<TimelineActivity> activities;  // this tensor's view of each timed activity
  std::optional<std::size_t> count;     // from args.shape
  std::string dtype;                    // from args.dtype, as written ("" when absent: fp32)
  std::string op;                       // the first top-level operation, e.g. "BROADCAST"
};

[[noreturn]] void bad(std::string_view source, const std::string& where, const std::string& why) {
  throw Error(std::string(source) + ": " + where + ": " + why);
}

// Parses the document; when it was cut short (a killed job: the parse failed at the very end
// of the text), cuts back to the last complete event and closes the array. At most a few
// cuts: an event holds at most one nested object. Anything else that fails to parse (trailing
// garbage after a complete document, a syntax error in the middle) is an error.
json parse_repairing(std::string_view text, std::string_view source, bool& repaired) {
  json_input::SyntaxError error;
  if (std::optional<json> doc = json_input::try_parse(text, source, error)) return std::move(*doc);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (error.at_end && first != std::string_view::npos && text[first] == '[') {
    std::string_view head = text;
    for (int attempt = 0; attempt < 8; ++attempt) {
      const std::size_t brace = head.rfind('}');
      if (brace == std::string_view::npos || brace < first) break;
      json_input::SyntaxError ignored;
      if (std::optional<json> fixed = json_input::try_parse(std::string(head.substr(0, brace + 1)) + "]", source, ignored)) {
        repaired = true;
        return std::move(*fixed);
      }
      head = head.substr(0, brace);
    }
  }
  bad(source, "line " + std::to_string(error.line) + ", column " + std::to_string(error.column),
      error.problem + (error.at_end ? " (the file ends early, and is not a timeline cut short after an event)" : ""));
}

// An optional string field of event `index`: "" when absent, an error naming the event and
// the field when it is there but not a string.
std::string string_field(const json& e, const char* key, std::string_view source, std::size_t index) {
  auto it = e.find(key);
  if (it == e.end()) return "";
  if (!it->is_string())
    bad(source, "event " + std::to_string(index), std::string("\"") + key + "\": expected a string, got " +
                                                      json_input::shown(*it));
  return it->get<std::string>();
}

// "[1024, 3, 3, 64]" (Horovod's TensorShape::DebugString): the product of the dimensions; "[]"
// is a scalar.
std::size_t shape_elements(const std::string& shape, std::string_view source, const std::string& where) {
  if (shape.size() < 2 || shape.front() != '[' || shape.back() != ']') bad(source, where, "'" + shape + "' is not [d0, d1, ...]");
  std::string_view dims = std::string_view(shape).substr(1, shape.size() - 2);
  if (dims.find_first_not_of(' ') == std::string_view::npos) return 1;  // "[]", "[ ]": a scalar
  std::size_t product = 1;
  while (!dims.empty()) {
    const std::size_t comma = dims.find(',');
    std::string_view token = dims.substr(0, comma);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    const std::optional<long long> dim = parse::try_integer<long long>(token);
    if (!dim) bad(source, where, "'" + shape + "' is not [d0, d1, ...]");
    if (*dim < 0) bad(source, where, "'" + shape + "' has a negative dimension");
    const auto d = static_cast<std::size_t>(*dim);
    if (d != 0 && product > std::numeric_limits<std::size_t>::max() / d) bad(source, where, "'" + shape + "' overflows");
    product *= d;
    dims = comma == std::string_view::npos ? std::string_view{} : dims.substr(comma + 1);
    if (comma != std::string_view::npos && dims.empty()) bad(source, where, "'" + shape + "' is not [d0, d1, ...]");
  }
  return product;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// A Horovod dtype name ("float32", "HOROVOD_FLOAT16"; none: fp32) as colltune simulates it;
// nullopt for the others (uint8, int8, bool, ...).
std::optional<coll::DType> modelled_dtype(const std::string& dtype) {
  std::string name = lower(dtype);
  if (name.starts_with("horovod_")) name = name.substr(8);
  if (name.empty() || name == "float32") return coll::DType::f32;
  if (name == "float16") return coll::DType::f16;
  if (name == "float64") return coll::DType::f64;
  if (name == "bfloat16") return coll::DType::bf16;
  if (name == "int32") return coll::DType::i32;
  if (name == "int64") return coll::DType::i64;
  return std::nullopt;
}

double event_ts(const json& e, std::string_view source, std::size_t index) {
  auto it = e.find("ts");
  if (it == e.end() || !it->is_number())
    bad(source, "event " + std::to_string(index),
        "\"ts\": expected a number, got " + (it == e.end() ? std::string("nothing") : json_input::shown(*it)));
  return it->get<double>();
}

void on_begin(Track& t, const std::string& name, double ts) {
  if (name == "NEGOTIATE_ALLREDUCE") {
    t.allreduce = true;
    if (std::isnan(t.first_negotiate)) t.first_negotiate = ts;
  } else if (name == "ALLREDUCE" && t.open.empty()) {
    t.allreduce = true;
    ++t.op_starts;
    t.op_start_times.push_back(ts);
    if (t.op_starts == 1) t.first_op_start = ts;
    if (t.op_starts == 2) t.second_op_start = ts;
  }
  if (t.op.empty() && t.open.empty()) t.op = name;
  t.open.emplace_back(name, ts);
}

// The activities whose durations the step model has a counterpart for.
bool is_timed_activity(const std::string& name) {
  return name == "NEGOTIATE_ALLREDUCE" || name == "MEMCPY_IN_FUSION_BUFFER" || name == "NCCL_ALLREDUCE" ||
         name == "MEMCPY_OUT_FUSION_BUFFER";
}

void on_end(Track& t, const json& e, double ts, std::string_view source) {
  if (t.open.empty()) return;  // a timeline started mid-operation: nothing to close
  const auto [name, start] = t.open.back();
  t.open.pop_back();
  if (is_timed_activity(name) && ts >= start) t.activities.push_back({name, start, ts, 0, 0});
  if (name == "ALLREDUCE" && t.open.empty() && std::isnan(t.first_op_end)) t.first_op_end = ts;
  auto args = e.find("args");
  if (args == e.end() || !args->is_object() || t.count) return;
  auto shape = args->find("shape");
  if (shape == args->end() || !shape->is_string()) return;
  const std::string where = "tensor '" + t.name + "'";
  t.count = shape_elements(shape->get<std::string>(), source, where + " shape");
  auto dtype = args->find("dtype");
  if (dtype != args->end() && dtype->is_string()) t.dtype = dtype->get<std::string>();
}

std::map<long long, Track> read_tracks(const json& events, std::string_view source) {
  std::map<long long, Track> tracks;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object()) bad(source, "event " + std::to_string(i), json_input::shown(e) + " is not an object");
    const std::string ph = string_field(e, "ph", source, i);
    auto pid_it = e.find("pid");
    if (pid_it == e.end() || !pid_it->is_number_integer()) continue;  // global markers (CYCLE_START)
    const long long pid = pid_it->get<long long>();
    Track& t = tracks[pid];
    if (t.name.empty()) t.name = "pid " + std::to_string(pid);  // until its process_name arrives
    if (ph == "M") {
      auto args = e.find("args");
      if (string_field(e, "name", source, i) == "process_name" && args != e.end() && args->is_object() &&
          args->contains("name") && (*args)["name"].is_string()) {
        t.name = (*args)["name"].get<std::string>();
      }
    } else if (ph == "B") {
      on_begin(t, string_field(e, "name", source, i), event_ts(e, source, i));
    } else if (ph == "E") {
      on_end(t, e, event_ts(e, source, i), source);
    }
  }
  return tracks;
}

double ready_abs(const Track& t) { return std::isnan(t.first_negotiate) ? t.first_op_start : t.first_negotiate; }

bool is_gradient(const Track& t) { return t.allreduce && !std::isnan(ready_abs(t)) && modelled_dtype(t.dtype); }

// A left-out operation for the note: "broadcast/fc.bias (broadcast of float32)".
std::string left_out_entry(const Track& t) {
  std::string op = lower(t.allreduce ? "ALLREDUCE" : t.op);
  if (op.starts_with("negotiate_")) op = op.substr(10);
  return t.name + " (" + op + (t.dtype.empty() ? std::string() : " of " + lower(t.dtype)) + ")";
}

// The tracks of operations colltune does not model, in pid order (tracks without any
// operation, such as the process-0 metadata, are not operations).
std::vector<std::string> left_out_operations(const std::map<long long, Track>& tracks) {
  std::vector<std::string> out;
  for (const auto& [pid, t] : tracks)
    if (!is_gradient(t) && (t.allreduce || !t.op.empty())) out.push_back(left_out_entry(t));
  return out;
}

// "3 operation(s) left out: a, b, c" with at most kShown named.
std::string left_out_note(const std::vector<std::string>& left_out) {
  constexpr std::size_t kShown = 4;
  std::string note = std::to_string(left_out.size()) +
                     " operation(s) left out (only gradient allreduces in float16/32/64, bfloat16, int32/64 are "
                     "modelled): ";
  for (std::size_t i = 0; i < left_out.size() && i < kShown; ++i) note += (i > 0 ? ", " : "") + left_out[i];
  if (left_out.size() > kShown) note += ", and " + std::to_string(left_out.size() - kShown) + " more";
  return note;
}

// The gradient allreduces in ready order (ties by pid, i.e. by first appearance).
std::vector<const Track*> allreduced_in_ready_order(const std::map<long long, Track>& tracks) {
  std::vector<const Track*> out;
  for (const auto& [pid, t] : tracks) {
    if (is_gradient(t)) out.push_back(&t);
  }
  std::stable_sort(out.begin(), out.end(), [](const Track* a, const Track* b) { return ready_abs(*a) < ready_abs(*b); });
  return out;
}

// Element count assumed for tensors without a shape: the median of the known counts.
std::size_t median_known_count(const std::vector<const Track*>& tensors, std::string_view source) {
  std::vector<std::size_t> known;
  for (const Track* t : tensors) {
    if (t->count) known.push_back(*t->count);
  }
  if (known.empty()) bad(source, "args.shape", "no allreduced tensor has a shape: tensor sizes are unknown");
  std::nth_element(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(known.size() / 2), known.end());
  return known[known.size() / 2];
}

// Forward time estimate: the next step's first readiness minus the end of this step's last
// allreduce (see timeline.hpp); 0 when the timeline holds a single step.
double estimate_forward_us(const std::vector<const Track*>& tensors) {
  const Track& first = *tensors.front();
  if (first.op_starts < 2) return 0;  // (a second start implies the first was recorded)
  const double next_ready = first.second_op_start - (first.first_op_start - ready_abs(first));
  double comm_end = ready_abs(first);
  for (const Track* t : tensors) {
    if (!std::isnan(t->first_op_end)) comm_end = std::max(comm_end, t->first_op_end);
  }
  return std::max(0.0, next_ready - comm_end);
}

// One entry per distinct activity: a fused buffer's copy or allreduce shows on the track of
// every tensor in it with the same start and end, so those are one activity whose bytes are
// the tensors' bytes together.
void collect_activities(const std::vector<const Track*>& tensors, const Workload& w, double t0,
                        std::vector<TimelineActivity>& out) {
  std::map<std::tuple<std::string, double, double>, TimelineActivity> unique;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    for (const TimelineActivity& a : tensors[i]->activities) {
      TimelineActivity& u = unique[{a.name, a.start_us, a.end_us}];
      u.name = a.name;
      u.start_us = a.start_us - t0;
      u.end_us = a.end_us - t0;
      u.bytes += w.tensors[i].bytes();
      ++u.tensors;
    }
  for (auto& [key, a] : unique) out.push_back(a);
  std::stable_sort(out.begin(), out.end(), [](const TimelineActivity& a, const TimelineActivity& b) {
    return a.start_us < b.start_us;
  });
}

// The workload a parsed timeline describes (see timeline.hpp for the mapping).
void read_timeline(const json& doc, std::string_view source, const TimelineImportOptions& options, TimelineImport& out) {
  const json* events = &doc;
  if (doc.is_object() && doc.contains("traceEvents")) events = &doc["traceEvents"];
  if (!events->is_array()) bad(source, "(top level)", "not a Chrome trace (expected an array of events)");
  const std::map<long long, Track> tracks = read_tracks(*events, source);
  const std::vector<const Track*> tensors = allreduced_in_ready_order(tracks);
  out.left_out = left_out_operations(tracks);
  if (tensors.empty())
    bad(source, "events",
        "no gradient allreduce (NEGOTIATE_ALLREDUCE or ALLREDUCE events in a dtype colltune simulates): nothing "
        "to import" + (out.left_out.empty() ? std::string() : "; " + left_out_note(out.left_out)));
  const double t0 = ready_abs(*tensors.front());
  const std::size_t assumed = median_known_count(tensors, source);
  Workload& w = out.workload;
  w.name = std::filesystem::path(source).stem().string();
  for (const Track* t : tensors) {
    if (!t->count) ++out.assumed_sizes;
    w.tensors.push_back({t->name, t->count.value_or(assumed), *modelled_dtype(t->dtype), ready_abs(*t) - t0});
  }
  w.backward_us = options.backward_us >= 0 ? options.backward_us : w.tensors.back().ready_us;
  w.forward_us = options.forward_us >= 0 ? options.forward_us : estimate_forward_us(tensors);
  out.steps_seen = tensors.front()->op_starts;
  for (double start : tensors.front()->op_start_times) out.step_starts_us.push_back(start - t0);
  collect_activities(tensors, w, t0, out.activities);
  if (out.assumed_sizes > 0) {
    out.notes.push_back(std::to_string(out.assumed_sizes) + " tensor(s) without a shape assumed fp32 with " +
                        std::to_string(assumed) + " elements (the median)");
  }
  if (!out.left_out.empty()) out.notes.push_back(left_out_note(out.left_out));
  if (out.repaired) out.notes.push_back("the timeline was cut short; its last complete event was used");
  if (options.forward_us < 0 && out.steps_seen < 2) out.notes.push_back("a single step: forward time unknown, set to 0");
  validate_workload(w, source);
}

}  // namespace

TimelineImport import_horovod_timeline_text(std::string_view text, std::string_view source,
                                            const TimelineImportOptions& options) {
  TimelineImport out;
  const json doc = parse_repairing(text, source, out.repaired);
  try {
    read_timeline(doc, source, options, out);
  } catch (const json::exception& e) {  // a type the reader did not check: still one clear line
    json_input::rethrow(e, source, "");
  }
  return out;
}

TimelineImport import_horovod_timeline(const std::filesystem::path& path, const TimelineImportOptions& options) {
  return import_horovod_timeline_text(read_file(path), path.string(), options);
}

}  // namespace colltune::sim
