// Graphviz DOT output: hosts as clusters, GPUs labelled with their ranks, switches outside.
#include <map>
#include <sstream>

#include "colltune/topology/report.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

std::string shape_of(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::gpu: return "box";
    case DeviceKind::cpu: return "box3d";
    case DeviceKind::nic: return "cds";
    case DeviceKind::nvswitch: return "hexagon";
    case DeviceKind::pcie_switch: return "diamond";
    case DeviceKind::net_switch: return "ellipse";
  }
  return "box";
}

std::string node_line(const Topology& t, VertexId v, const std::multimap<VertexId, int>& ranks) {
  const Device& d = t.device(v);
  std::string label = d.id;
  auto [lo, hi] = ranks.equal_range(v);
  for (auto it = lo; it != hi; ++it) label += (it == lo ? "\\nrank " : ",") + std::to_string(it->second);
  return quoted(d.id) + " [shape=" + shape_of(d.kind) + ", label=\"" + label + "\"];\n";
}

}  // namespace

std::string to_dot(const Topology& t) {
  std::multimap<VertexId, int> ranks;
  for (int r = 0; r < t.num_ranks(); ++r) ranks.emplace(t.device_of_rank(r), r);
  std::ostringstream out;
  out << "digraph " << quoted(t.name) << " {\n  rankdir=LR;\n  node [fontsize=10];\n  edge [fontsize=8];\n";
  for (int h = 0; h < t.num_hosts(); ++h) {
    out << "  subgraph " << quoted("cluster_" + std::to_string(h)) << " {\n    label=" << quoted(t.host_name(h)) << ";\n";
    for (VertexId v = 0; v < t.num_devices(); ++v)
      if (t.device(v).host == h) out << "    " << node_line(t, v, ranks);
    out << "  }\n";
  }
  for (VertexId v = 0; v < t.num_devices(); ++v)
    if (t.device(v).host < 0) out << "  " << node_line(t, v, ranks);
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const Link& l = t.link(i);
    out << "  " << quoted(t.device(t.link_source(i)).id) << " -> " << quoted(t.device(t.link_target(i)).id)
        << " [label=\"" << to_string(l.kind) << " " << detail::fmt_num(l.bandwidth_gbps) << " GB/s\"";
    if (detail::is_duplex_pair(t, i)) {
      out << ", dir=both";
      ++i;
    }
    out << "];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace colltune::topo
