// Chrome trace writer: ranks become processes, overlapping slices of a rank go to separate
// threads (lanes) chosen greedily in start order, so every thread's slices nest.
#include "colltune/sim/trace.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "colltune/common/finite.hpp"
#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"

namespace colltune::sim {
namespace {

using nlohmann::json;

json metadata(const char* what, int pid, int tid, const json& args) {
  return json{{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", args}};
}

std::string lane_name(int rank, std::size_t lane) {
  return "rank " + std::to_string(rank) + (lane == 0 ? "" : " #" + std::to_string(lane));
}

// Slice indices grouped by rank, each group sorted by start (longer first on ties, so that an
// enclosing slice precedes what it encloses).
std::vector<std::vector<std::size_t>> slices_by_rank(const EventSimResult& result, int nranks) {
  std::vector<std::vector<std::size_t>> by_rank(static_cast<std::size_t>(nranks));
  for (std::size_t i = 0; i < result.trace.size(); ++i) {
    const int r = result.trace[i].rank;
    if (r < 0 || r >= nranks)
      throw Error("trace: slice '" + result.trace[i].name + "' names rank " + std::to_string(r) + " outside 0.." +
                  std::to_string(nranks - 1));
    by_rank[static_cast<std::size_t>(r)].push_back(i);
  }
  for (auto& group : by_rank)
    std::stable_sort(group.begin(), group.end(), [&](std::size_t a, std::size_t b) {
      const TraceSlice& x = result.trace[a];
      const TraceSlice& y = result.trace[b];
      return x.start_us != y.start_us ? x.start_us < y.start_us : x.end_us > y.end_us;
    });
  return by_rank;
}

// Emits one rank's slices, each on the first lane that is free at its start.
void emit_rank(const EventSimResult& result, int rank, const std::vector<std::size_t>& slices, json& events) {
  std::vector<double> lane_end;
  for (std::size_t i : slices) {
    const TraceSlice& s = result.trace[i];
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > s.start_us) ++lane;
    if (lane == lane_end.size()) {
      lane_end.push_back(0);
      if (lane > 0) events.push_back(metadata("thread_name", rank, static_cast<int>(lane), {{"name", lane_name(rank, lane)}}));
    }
    lane_end[lane] = s.end_us;
    events.push_back(json{{"ph", "X"}, {"name", s.name}, {"cat", s.name.substr(0, s.name.find(' '))},
                          {"pid", rank}, {"tid", static_cast<int>(lane)}, {"ts", s.start_us},
                          {"dur", std::max(0.0, s.end_us - s.start_us)}, {"args", {{"bytes", s.bytes}}}});
  }
}

}  // namespace

std::string chrome_trace_json(const EventSimResult& result, int nranks, const std::string& title) {
  if (nranks < 0) throw Error("trace: negative rank count " + std::to_string(nranks));
  json events = json::array();
  const auto by_rank = slices_by_rank(result, nranks);
  for (int r = 0; r < nranks; ++r) {
    events.push_back(metadata("process_name", r, 0, {{"name", "rank " + std::to_string(r)}}));
    events.push_back(metadata("process_sort_index", r, 0, {{"sort_index", r}}));
    events.push_back(metadata("thread_name", r, 0, {{"name", lane_name(r, 0)}}));
    emit_rank(result, r, by_rank[static_cast<std::size_t>(r)], events);
  }
  json doc{{"traceEvents", std::move(events)},
           {"displayTimeUnit", "ns"},
           {"otherData", {{"title", title}, {"time_us", result.time_us}, {"ranks", nranks}}}};
  return finite::json_text(doc, -1, "the Chrome trace");
}

void write_chrome_trace(const std::filesystem::path& path, const EventSimResult& result, int nranks,
                        const std::string& title) {
  write_file_atomic(path, chrome_trace_json(result, nranks, title));
}

}  // namespace colltune::sim
