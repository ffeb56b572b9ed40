// Chrome trace output: valid JSON, one process track per rank, slices inside each thread nest.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/sim/trace.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {
namespace {

EventSimResult traced_ring(int p) {
  const topo::Topology t = topo::load_topology("flat:ranks=" + std::to_string(p));
  EventSimOptions opts;
  opts.record_trace = true;
  return simulate_schedule(*coll::open_schedule("ring", t.rank_layout(), 1000), t, opts);
}

TEST(ChromeTrace, OneTrackPerRankAndNestedSlices) {
  const EventSimResult r = traced_ring(5);
  const auto doc = nlohmann::json::parse(chrome_trace_json(r, 5, "ring"));
  std::set<int> named;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> by_thread;
  std::size_t slices = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") named.insert(e.at("pid").get<int>());
    if (e.at("ph") != "X") continue;
    ++slices;
    const double ts = e.at("ts").get<double>();
    by_thread[{e.at("pid").get<int>(), e.at("tid").get<int>()}].push_back({ts, ts + e.at("dur").get<double>()});
  }
  EXPECT_EQ(named, (std::set<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(slices, r.trace.size());
  for (auto& [thread, spans] : by_thread)
    for (std::size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first + 1e-9) << "pid " << thread.first << " tid " << thread.second;
}

TEST(ChromeTrace, WritesTheFileAndRejectsForeignRanks) {
  const EventSimResult r = traced_ring(3);
  const auto dir = std::filesystem::temp_directory_path() / "colltune_trace_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / "ring.json";
  write_chrome_trace(path, r, 3);
  EXPECT_TRUE(nlohmann::json::parse(read_file(path)).contains("traceEvents"));
  std::filesystem::remove_all(dir);
  EXPECT_THROW(chrome_trace_json(r, 2), Error);
}

}  // namespace
}  // namespace colltune::sim
