#pragma once
// Internal: small text helpers shared by the topology loaders and writers.
#include <cstdio>
#include <string>
#include <string_view>

#include "colltune/topology/topology.hpp"

namespace colltune::topo::detail {

// A number as people write it: "450", "63.0154", "0.35", "1e-07".
inline std::string fmt_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// "a, b, c": the names of `items` (name_of(item) gives one) for "(valid: ...)" messages.
template <typename Range, typename NameOf>
std::string join_names(const Range& items, NameOf name_of) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += std::string_view(name_of(item));
  }
  return out;
}

// True when link i+1 is link i reversed with the same kind and figures (what
// add_duplex_link() makes): written once, as a duplex link, by the JSON and DOT writers.
inline bool is_duplex_pair(const Topology& t, std::size_t i) {
  if (i + 1 >= t.num_links()) return false;
  const Link& a = t.link(i);
  const Link& b = t.link(i + 1);
  return t.link_source(i) == t.link_target(i + 1) && t.link_target(i) == t.link_source(i + 1) && a.kind == b.kind &&
         a.bandwidth_gbps == b.bandwidth_gbps && a.latency_us == b.latency_us;
}

}  // namespace colltune::topo::detail
