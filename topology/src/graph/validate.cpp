// Topology::validate(): the checks every loaded or generated topology must pass before use.
#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <cmath>
#include <unordered_map>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/topology/graph.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo {
namespace {

using detail::fmt_num;

// Which vertices a breadth-first search from `src` reaches (on `g` or its reverse).
template <typename G>
std::vector<bool> reached_from(const G& g, VertexId src) {
  std::vector<boost::default_color_type> color(boost::num_vertices(g), boost::white_color);
  boost::breadth_first_search(g, src,
                              boost::color_map(boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g))));
  std::vector<bool> out(color.size());
  for (std::size_t v = 0; v < color.size(); ++v) out[v] = color[v] != boost::white_color;
  return out;
}

// A compute capability belongs to a GPU; a CPU class to a CPU; NVLS to an NVSwitch; SHARP to a
// network switch.
template <class Where>
void check_capabilities(const Device& d, const Where& where) {
  if (d.compute_capability != 0 && d.kind != DeviceKind::gpu)
    throw Error(where() + ".compute_capability: device '" + d.id + "' is a " + std::string(to_string(d.kind)) +
                ", not a gpu");
  if (d.compute_capability < 0 || d.compute_capability > 1000)
    throw Error(where() + ".compute_capability: device '" + d.id + "' has " + std::to_string(d.compute_capability) +
                " (expected 0..1000)");
  if (d.nccl_cpu && d.kind != DeviceKind::cpu)
    throw Error(where() + ".nccl_cpu: device '" + d.id + "' is a " + std::string(to_string(d.kind)) + ", not a cpu");
  const bool fits = d.switch_reduction == SwitchReduction::none ||
                    (d.switch_reduction == SwitchReduction::nvls && d.kind == DeviceKind::nvswitch) ||
                    (d.switch_reduction == SwitchReduction::sharp && d.kind == DeviceKind::net_switch);
  if (!fits)
    throw Error(where() + ".switch_reduction: device '" + d.id + "' is a " + std::string(to_string(d.kind)) +
                " and cannot do " + std::string(to_string(d.switch_reduction)) +
                " (nvls: nvswitch only; sharp: net_switch only)");
}

void check_devices(const Topology& t) {
  std::unordered_map<std::string_view, VertexId> seen;
  for (VertexId v = 0; v < t.num_devices(); ++v) {
    const Device& d = t.device(v);
    // Named only where something is wrong: a 512-host machine has 14,000 devices and 42,000
    // links, and naming every one was most of validate()'s time.
    const auto where = [v] { return "devices[" + std::to_string(v) + "]"; };
    if (d.id.empty()) throw Error(where() + ".id: empty device id");
    if (auto [it, fresh] = seen.emplace(d.id, v); !fresh)
      throw Error(where() + ".id: duplicate device id '" + d.id + "' (also devices[" + std::to_string(it->second) +
                  "])");
    if (d.host < -1 || d.host >= t.num_hosts())
      throw Error(where() + ".host: device '" + d.id + "' names host " + std::to_string(d.host) + " of " +
                  std::to_string(t.num_hosts()));
    const double reduce = t.reduce_gbps_of(v);
    if (!(reduce == 0 || (reduce >= limits::kMinBandwidthGbps && reduce <= limits::kMaxBandwidthGbps)))
      throw Error(where() + ".reduce_gbps: device '" + d.id + "' has reduce rate " + fmt_num(reduce) +
                  " (must be 0 or in [" + fmt_num(limits::kMinBandwidthGbps) + ", " +
                  fmt_num(limits::kMaxBandwidthGbps) + "] GB/s: " + limits::kLinkFigureReason + ")");
    check_capabilities(d, where);
  }
}

void check_hosts(const Topology& t) {
  std::unordered_map<std::string_view, int> seen;
  for (int h = 0; h < t.num_hosts(); ++h) {
    const std::string& name = t.host_name(h);
    if (name.empty()) throw Error("hosts[" + std::to_string(h) + "]: empty host name");
    if (auto [it, fresh] = seen.emplace(name, h); !fresh)
      throw Error("hosts[" + std::to_string(h) + "]: duplicate host name '" + name + "'");
  }
}

void check_links(const Topology& t) {
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const Link l = t.link(i);
    const auto where = [&t, i] {
      return "links[" + std::to_string(i) + "] (" + t.device(t.link_source(i)).id + " -> " +
             t.device(t.link_target(i)).id + ")";
    };
    // The ranges of limits.hpp, so that a topology that validates is one every engine can time:
    // no sum of latencies or bytes / bandwidth along a route overflows to infinity.
    if (!(l.bandwidth_gbps >= limits::kMinBandwidthGbps && l.bandwidth_gbps <= limits::kMaxBandwidthGbps))
      throw Error(where() + ".bandwidth_gbps: must be in [" + fmt_num(limits::kMinBandwidthGbps) + ", " +
                  fmt_num(limits::kMaxBandwidthGbps) + "] GB/s (" + limits::kLinkFigureReason + "), got " +
                  fmt_num(l.bandwidth_gbps));
    if (!(l.latency_us >= 0 && l.latency_us <= limits::kMaxLatencyUs))
      throw Error(where() + ".latency_us: must be in [0, " + fmt_num(limits::kMaxLatencyUs) + "] us (" +
                  limits::kLinkFigureReason + "), got " + fmt_num(l.latency_us));
  }
}

}  // namespace

void Topology::validate() const {
  check_hosts(*this);
  // The devices and links once per graph, hosts and factors (GraphStore::checked).
  {
    const std::lock_guard lock(store_->checked_mutex);
    std::vector<GraphStore::Checked>& seen = store_->checked;
    const GraphStore::Checked mine{num_hosts(), bandwidth_scale_, latency_scale_, reduce_scale_};
    if (std::find(seen.begin(), seen.end(), mine) == seen.end()) {
      check_devices(*this);
      check_links(*this);
      if (seen.size() == GraphStore::kCheckedKept) seen.erase(seen.begin());
      seen.push_back(mine);
    }
  }
  if (num_ranks() == 0) throw Error("ranks: no ranks are mapped");
  for (std::size_t r = 0; r < rank_device_.size(); ++r) {
    const auto where = [r] { return "ranks: rank " + std::to_string(r); };
    if (rank_map_count_[r] == 0)
      throw Error(where() + " is not mapped (ranks must be 0.." + std::to_string(num_ranks() - 1) + ", each once)");
    if (rank_map_count_[r] > 1) throw Error(where() + " is mapped " + std::to_string(rank_map_count_[r]) + " times");
    if (rank_device_[r] >= num_devices()) throw Error(where() + " is mapped to a device that does not exist");
  }
  // Every rank's device must reach rank 0's and be reached from it: then all pairs connect.
  const VertexId root = rank_device_[0];
  const std::vector<bool> forward = reached_from(store_->graph, root);
  const std::vector<bool> backward = reached_from(boost::make_reverse_graph(store_->graph), root);
  for (std::size_t r = 1; r < rank_device_.size(); ++r) {
    const VertexId v = rank_device_[r];
    if (!forward[v] || !backward[v])
      throw Error("graph: disconnected: rank " + std::to_string(r) + " (device '" + store_->graph[v].id + "') " +
                  (forward[v] ? "cannot reach" : "cannot be reached from") + " rank 0 (device '" + store_->graph[root].id +
                  "')");
  }
}

}  // namespace colltune::topo
