// Text summary, slowest route and DOT output of a topology (see report.hpp).
#include "colltune/topology/report.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "colltune/common/finite.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo {
namespace {

using detail::fmt_num;

// "0-7", "0-3,8-11": ascending ranks as ranges.
std::string ranges(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) out.append("-").append(std::to_string(ranks[j]));
    i = j + 1;
  }
  return out;
}

// True when route `a` is slower than `b`: narrower, or as wide and later, or as late and longer.
bool slower(const Path& a, const Path& b) {
  return std::make_tuple(-a.bottleneck_gbps, a.latency_us, a.links.size()) >
         std::make_tuple(-b.bottleneck_gbps, b.latency_us, b.links.size());
}

void devices_section(std::ostringstream& out, const Topology& t) {
  std::map<DeviceKind, int> by_kind;
  for (VertexId v = 0; v < t.num_devices(); ++v) ++by_kind[t.device(v).kind];
  out << "devices: " << t.num_devices() << " (";
  bool first = true;
  for (const auto& [kind, count] : by_kind) out << (first ? "" : ", ") << to_string(kind) << " " << count, first = false;
  out << ")\n";
  std::map<NcclCpu, int> classes;  // the CPUs that name the class NCCL's model gives them
  for (VertexId v = 0; v < t.num_devices(); ++v)
    if (const Device& d = t.device(v); d.nccl_cpu) ++classes[*d.nccl_cpu];
  if (classes.empty()) return;
  out << "  CPUs as NCCL classes them:";
  for (const auto& [cls, count] : classes) out << " " << to_string(cls) << " x " << count;
  out << "\n";
}

void links_section(std::ostringstream& out, const Topology& t) {
  std::map<std::tuple<LinkKind, double, double>, int> classes;  // (kind, -GB/s, us) -> count
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const Link& l = t.link(i);
    ++classes[{l.kind, -l.bandwidth_gbps, l.latency_us}];
  }
  out << "links: " << t.num_links() << " (one per direction), by class:\n";
  for (const auto& [key, count] : classes) {
    const auto& [kind, neg_gbps, us] = key;
    char line[128];
    std::snprintf(line, sizeof line, "  %-7s %10s GB/s %8s us  x %d\n", std::string(to_string(kind)).c_str(),
                  fmt_num(-neg_gbps).c_str(), fmt_num(us).c_str(), count);
    out << line;
  }
}

void ranks_section(std::ostringstream& out, const Topology& t) {
  const RankLayout layout = t.rank_layout();
  out << "ranks: " << t.num_ranks() << " on " << layout.nhosts() << " host(s)";
  if (layout.is_uniform()) out << ", " << layout.max_ranks_per_host() << " per host";
  out << "\n";
  constexpr int kShown = 8;
  for (int h = 0; h < layout.nhosts(); ++h) {
    if (h == kShown && layout.nhosts() > kShown + 1) {
      out << "  ... " << layout.nhosts() - kShown - 1 << " more host(s)\n";
      h = layout.nhosts() - 1;
    }
    const std::vector<int>& ranks = layout.ranks_on_host(h);
    const int host = t.host_of_rank(ranks.front());
    out << "  " << (host >= 0 ? t.host_name(host) : t.device(t.device_of_rank(ranks.front())).id) << ": ranks "
        << ranges(ranks) << "\n";
  }
}

// Keeps the slower of `worst` and the routes from `src` to every other rank.
void take_slowest(RankPairRoute& worst, int src, std::vector<Path>& routes) {
  for (std::size_t dst = 0; dst < routes.size(); ++dst) {
    if (static_cast<int>(dst) == src || !slower(routes[dst], worst.path)) continue;
    worst.src = src;
    worst.dst = static_cast<int>(dst);
    worst.path = std::move(routes[dst]);
  }
}

// What one source costs: its search of the whole graph plus the links of its routes (on a torus
// a route is hundreds of hops, on a fat-tree a handful, so the hops are measured, not assumed).
std::size_t source_cost(const Topology& t, const std::vector<Path>& routes) {
  std::size_t cost = t.num_devices() + t.num_links();
  for (const Path& p : routes) cost += p.links.size() + 1;
  return cost;
}

}  // namespace

RankPairRoute slowest_route(const Topology& t, int max_sources, std::size_t budget) {
  const int n = t.num_ranks();
  RankPairRoute worst;
  worst.path.bottleneck_gbps = std::numeric_limits<double>::infinity();
  // Source 0 is the first of every even spacing; what it cost sets how many more fit the budget.
  std::vector<Path> first = t.routes_from(0);
  const std::size_t affordable = std::max<std::size_t>(1, budget / source_cost(t, first));
  const int sources = std::max(1, std::min({n, max_sources, static_cast<int>(std::min<std::size_t>(affordable, 1u << 30))}));
  worst.sources_searched = sources;
  take_slowest(worst, 0, first);
  for (int k = 1; k < sources; ++k) {
    const int src = static_cast<int>(static_cast<long>(k) * n / sources);  // evenly spaced
    std::vector<Path> routes = t.routes_from(src);
    take_slowest(worst, src, routes);
  }
  return worst;
}

std::string path_text(const Topology& t, const Path& path, const std::string& indent) {
  std::ostringstream out;
  for (std::size_t link : path.links) {
    const Link& l = t.link(link);
    out << indent << t.device(t.link_source(link)).id << " -> " << t.device(t.link_target(link)).id << "  "
        << to_string(l.kind) << "  " << fmt_num(l.bandwidth_gbps) << " GB/s  " << fmt_num(l.latency_us) << " us\n";
  }
  return out.str();
}

std::string summary_text(const Topology& t) {
  std::ostringstream out;
  out << "topology: " << t.name << "\n";
  if (!t.description.empty()) out << "  " << t.description << "\n";
  out << "hosts: " << t.num_hosts() << "\n";
  devices_section(out, t);
  links_section(out, t);
  ranks_section(out, t);
  if (t.num_ranks() < 2) {
    out << "slowest rank-to-rank route: none (one rank)\n";
    return out.str();
  }
  const RankPairRoute slow = slowest_route(t);
  out << "slowest rank-to-rank route: rank " << slow.src << " (" << t.device(t.device_of_rank(slow.src)).id
      << ") -> rank " << slow.dst << " (" << t.device(t.device_of_rank(slow.dst)).id << "): "
      << fmt_num(slow.path.bottleneck_gbps) << " GB/s bottleneck, " << fmt_num(slow.path.latency_us) << " us, "
      << slow.path.links.size() << " hop(s)";
  if (slow.sources_searched < t.num_ranks())
    out << " (searched from " << slow.sources_searched << " of " << t.num_ranks() << " source ranks)";
  out << "\n" << path_text(t, slow.path, "  ");
  return out.str();
}

namespace {

nlohmann::ordered_json hop_json(const Topology& t, std::size_t link) {
  const Link& l = t.link(link);
  return {{"from", t.device(t.link_source(link)).id}, {"to", t.device(t.link_target(link)).id},
          {"kind", std::string(to_string(l.kind))}, {"bandwidth_gbps", l.bandwidth_gbps}, {"latency_us", l.latency_us}};
}

nlohmann::ordered_json slowest_route_json(const Topology& t) {
  if (t.num_ranks() < 2) return nullptr;
  const RankPairRoute slow = slowest_route(t);
  nlohmann::ordered_json hops = nlohmann::ordered_json::array();
  for (std::size_t link : slow.path.links) hops.push_back(hop_json(t, link));
  return {{"src_rank", slow.src},          {"dst_rank", slow.dst},
          {"bottleneck_gbps", slow.path.bottleneck_gbps}, {"latency_us", slow.path.latency_us},
          {"sources_searched", slow.sources_searched},    {"hops", hops}};
}

}  // namespace

std::string summary_json(const Topology& t) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::object();
  std::map<DeviceKind, int> by_kind;
  for (VertexId v = 0; v < t.num_devices(); ++v) ++by_kind[t.device(v).kind];
  for (const auto& [kind, count] : by_kind) devices[std::string(to_string(kind))] = count;
  std::map<std::tuple<LinkKind, double, double>, int> classes;  // (kind, -GB/s, us) -> count
  for (std::size_t i = 0; i < t.num_links(); ++i) ++classes[{t.link(i).kind, -t.link(i).bandwidth_gbps, t.link(i).latency_us}];
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const auto& [key, count] : classes) {
    links.push_back({{"kind", std::string(to_string(std::get<0>(key)))},
                     {"bandwidth_gbps", -std::get<1>(key)},
                     {"latency_us", std::get<2>(key)},
                     {"count", count}});
  }
  const RankLayout layout = t.rank_layout();
  nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
  for (int h = 0; h < layout.nhosts(); ++h) {
    const std::vector<int>& ranks = layout.ranks_on_host(h);
    const int host = t.host_of_rank(ranks.front());
    hosts.push_back({{"host", host >= 0 ? t.host_name(host) : t.device(t.device_of_rank(ranks.front())).id},
                     {"ranks", ranges(ranks)}});
  }
  const nlohmann::ordered_json out = {{"topology", t.name},
                                      {"description", t.description},
                                      {"hosts", t.num_hosts()},
                                      {"devices", devices},
                                      {"links", links},
                                      {"ranks", t.num_ranks()},
                                      {"ranks_by_host", hosts},
                                      {"slowest_route", slowest_route_json(t)}};
  return finite::json_text(out, 2, "topo show --json");
}

}  // namespace colltune::topo
