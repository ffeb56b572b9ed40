// What limits a prediction (bottleneck.hpp).
//
// Steps: price the prediction; price it again with each resource twice as fast (each link
// class's bandwidth, all latencies halved, all reduction rates doubled, and the caller's extra
// what-ifs); the resource with the largest gain is the bottleneck. A gain under 1 % of the
// prediction is no gain: then a runtime's own model (NCCL's) or fixed costs set it.
#include "colltune/sim/bottleneck.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "colltune/common/parallel.hpp"
#include "colltune/common/units.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::sim {
namespace {

constexpr double kFaster = 2;         // "twice as fast"
constexpr double kNoGain = 0.01;      // a what-if that gains less than this fraction moves nothing
constexpr std::array<topo::LinkKind, 5> kLinkKinds{topo::LinkKind::nvlink, topo::LinkKind::pcie, topo::LinkKind::net,
                                                   topo::LinkKind::sys, topo::LinkKind::shm};

std::string gbps(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GB/s", v);
  return buf;
}

std::string device_name(topo::DeviceKind kind) {
  switch (kind) {
    case topo::DeviceKind::gpu: return "GPU";
    case topo::DeviceKind::cpu: return "CPU";
    case topo::DeviceKind::nic: return "NIC";
    case topo::DeviceKind::nvswitch: return "NVSwitch";
    case topo::DeviceKind::pcie_switch: return "PCIe switch";
    case topo::DeviceKind::net_switch: return "network switch";
  }
  return "device";
}

// "PCIe Gen4 x16" where the rate is a generation's x16 link, else "PCIe"; the other classes by name.
std::string class_name(const topo::Topology& t, topo::LinkKind kind, double rate) {
  switch (kind) {
    case topo::LinkKind::pcie:
      for (int gen = 1; gen <= 6; ++gen)
        if (std::abs(topo::pcie_gbps(gen, 16) / rate - 1) < 0.01) return "PCIe Gen" + std::to_string(gen) + " x16";
      return "PCIe";
    case topo::LinkKind::nvlink: return "NVLink";
    case topo::LinkKind::net: return std::string("the network (") + std::string(topo::to_string(t.transport)) + ")";
    case topo::LinkKind::sys: return "the CPU socket link";
    case topo::LinkKind::shm: return "shared memory";
  }
  return "links";
}

// The route the machine's predictions lean on: rank 0 to the first rank of another host, or to
// rank 1 on one host; nullptr with a single rank.
const topo::Path* leaning_route(const topo::Topology& t) {
  if (t.num_ranks() < 2) return nullptr;
  int other = 1;
  for (int r = 1; r < t.num_ranks(); ++r)
    if (t.host_of_rank(r) != t.host_of_rank(0)) {
      other = r;
      break;
    }
  return &t.route(0, other);
}

// The devices at the two ends of the run of PCIe links around position `at` of the route (GPU
// to NIC through a switch); for the other classes the narrowest link's own ends.
std::pair<topo::VertexId, topo::VertexId> run_ends(const topo::Topology& t, const topo::Path& p, std::size_t at,
                                                   topo::LinkKind kind) {
  std::size_t lo = at, hi = at;
  if (kind == topo::LinkKind::pcie) {
    while (lo > 0 && t.link(p.links[lo - 1]).kind == kind) --lo;
    while (hi + 1 < p.links.size() && t.link(p.links[hi + 1]).kind == kind) ++hi;
  }
  return {t.link_source(p.links[lo]), t.link_target(p.links[hi])};
}

double route_rate(const topo::Topology& t, const topo::Path& p, topo::LinkKind kind, bool narrowest) {
  double rate = narrowest ? std::numeric_limits<double>::infinity() : 0;
  for (std::size_t l : p.links)
    if (t.link(l).kind == kind)
      rate = narrowest ? std::min(rate, t.link(l).bandwidth_gbps) : std::max(rate, t.link(l).bandwidth_gbps);
  return rate;
}

// The narrowest link of `kind` anywhere on the machine (0 when it has none).
double narrowest_of_kind(const topo::Topology& t, topo::LinkKind kind) {
  double rate = std::numeric_limits<double>::infinity();
  for (std::size_t l = 0; l < t.num_links(); ++l)
    if (t.link(l).kind == kind) rate = std::min(rate, t.link(l).bandwidth_gbps);
  return std::isfinite(rate) ? rate : 0;
}

// A link class off the route the predictions lean on (NVLink on a machine of several hosts) is
// named with its narrowest link's rate, so that the text and the JSON say what would be doubled.
WhatIf link_whatif(const topo::Topology& t, topo::LinkKind kind) {
  WhatIf w{std::string(topo::to_string(kind)), "", 0, 0};
  w.label = describe_link(t, kind, &w.rate_gbps);
  if (w.label.empty()) {
    w.rate_gbps = narrowest_of_kind(t, kind);
    w.label = class_name(t, kind, w.rate_gbps) + ", " + gbps(w.rate_gbps) + ", off the route between hosts";
  }
  return w;
}

std::string gain_text(double from_us, double to_us) {
  return " (twice as fast: " + format_time_us(from_us) + " -> " + format_time_us(to_us) + ")";
}

bool has_links(const topo::Topology& t, topo::LinkKind kind) { return narrowest_of_kind(t, kind) > 0; }

std::string reduction_label(const topo::Topology& t) {
  const double rate = t.num_ranks() > 0 ? t.reduce_gbps_of(t.device_of_rank(0)) : 0;
  return "the reduction rate (" + gbps(rate) + " on rank 0's " + device_name(t.device(t.device_of_rank(0)).kind) + ")";
}

}  // namespace

std::string describe_link(const topo::Topology& t, topo::LinkKind kind, double* rate_gbps) {
  const topo::Path* p = leaning_route(t);
  if (p == nullptr) return "";
  std::size_t at = p->links.size();
  for (std::size_t i = 0; i < p->links.size(); ++i)
    if (t.link(p->links[i]).kind == kind &&
        (at == p->links.size() || t.link(p->links[i]).bandwidth_gbps < t.link(p->links[at]).bandwidth_gbps))
      at = i;
  if (at == p->links.size()) return "";
  const double rate = t.link(p->links[at]).bandwidth_gbps;
  if (rate_gbps != nullptr) *rate_gbps = rate;
  const auto [from, to] = run_ends(t, *p, at, kind);
  std::string out = class_name(t, kind, rate) + " between " + device_name(t.device(from).kind) + " and " +
                    device_name(t.device(to).kind) + ", " + gbps(rate);
  const double nic = route_rate(t, *p, topo::LinkKind::net, true);
  if (kind != topo::LinkKind::net && std::isfinite(nic) && nic > rate) out += ", not the " + gbps(nic) + " NIC";
  return out;
}

StepCosts halved_overheads(const StepCosts& c) {
  StepCosts out = c;
  out.launch_us /= kFaster;
  out.tensor_us /= kFaster;
  out.negotiation_base_us = std::max(0.0, c.negotiation_base_us) / kFaster;
  out.negotiation_us_per_rank /= kFaster;
  out.fusion_copy_gbps *= kFaster;
  out.interference = 1 + (c.interference - 1) / kFaster;
  return out;
}

std::vector<WhatIfMachine> whatif_machines(const topo::Topology& topology) {
  // What each machine is, then the machines themselves: copies that share the machine's graph
  // and read it with their factors (bandwidth per link kind, latency, reduction rate; the
  // latency copy shares the paths found too where its costs scale exactly), made on several
  // threads.
  std::vector<WhatIf> whatifs;
  std::vector<std::function<topo::Topology()>> make;
  std::vector<topo::LinkKind> kinds;
  std::string classes;
  for (topo::LinkKind kind : kLinkKinds) {
    if (!has_links(topology, kind)) continue;
    whatifs.push_back(link_whatif(topology, kind));
    make.emplace_back([&topology, kind] { return topology.with_scaled_bandwidth(kind, kFaster); });
    kinds.push_back(kind);
    if (whatifs.back().rate_gbps > 0) classes += (classes.empty() ? "" : "; ") + whatifs.back().label;
  }
  // Every link class at once: two links that limit together (a NIC behind a PCIe link of about
  // its rate) move nothing alone.
  if (kinds.size() > 1) {
    whatifs.push_back({"links", "every link class at once, none alone (" + classes + ")", 0, 0});
    make.emplace_back([&topology, kinds] { return topology.with_scaled_bandwidth(kinds, kFaster); });
  }
  whatifs.push_back({"latency", "link latency (every hop's alpha)", 0, 0});
  make.emplace_back([&topology] { return topology.with_scaled_latency(1 / kFaster); });
  whatifs.push_back({"reduction", reduction_label(topology), 0, 0});
  make.emplace_back([&topology] { return topology.with_scaled_reduction(kFaster); });
  std::vector<topo::Topology> machines = parallel_map(make.size(), [&](std::size_t i) { return make[i](); });
  std::vector<WhatIfMachine> out;
  for (std::size_t i = 0; i < whatifs.size(); ++i) out.push_back({std::move(whatifs[i]), std::move(machines[i])});
  return out;
}

Bottleneck find_bottleneck(const topo::Topology& topology, const TopologyPrice& price, std::vector<WhatIf> extra,
                           bool runtime_model) {
  std::vector<WhatIf> priced;
  for (WhatIfMachine& m : whatif_machines(topology)) {
    m.whatif.time_us = price(m.topology);
    priced.push_back(std::move(m.whatif));
  }
  for (WhatIf& w : extra) priced.push_back(std::move(w));
  return pick_bottleneck(price(topology), std::move(priced), runtime_model);
}

bool one_resource_moves(double time_us, const std::vector<WhatIf>& priced) {
  return std::any_of(priced.begin(), priced.end(),
                     [&](const WhatIf& w) { return w.resource != "links" && time_us - w.time_us > kNoGain * time_us; });
}

Bottleneck pick_bottleneck(double time_us, std::vector<WhatIf> priced, bool runtime_model) {
  Bottleneck b;
  b.time_us = time_us;
  b.whatifs = std::move(priced);
  const auto faster = [](const WhatIf& x, const WhatIf& y) { return x.time_us < y.time_us; };
  // The links together only where no single resource gains: alone they would always win.
  auto best = b.whatifs.end();
  for (auto w = b.whatifs.begin(); w != b.whatifs.end(); ++w)
    if (w->resource != "links" && (best == b.whatifs.end() || faster(*w, *best))) best = w;
  if (!one_resource_moves(b.time_us, b.whatifs)) best = std::min_element(b.whatifs.begin(), b.whatifs.end(), faster);
  if (best != b.whatifs.end() && b.time_us - best->time_us > kNoGain * b.time_us) {
    b.resource = best->resource;
    b.description = best->label;
    b.rate_gbps = best->rate_gbps;
    b.faster_us = best->time_us;
    if (best->resource == "compute" || best->resource == "horovod") {
      const WhatIf* next = nullptr;
      for (const WhatIf& w : b.whatifs)
        if (&w != &*best && w.resource != "links" && (next == nullptr || w.time_us < next->time_us)) next = &w;
      if (next != nullptr && b.time_us - next->time_us > kNoGain * b.time_us)
        b.next = next->label + gain_text(b.time_us, next->time_us);
    }
    return b;
  }
  b.resource = runtime_model ? "runtime-model" : "fixed";
  b.description = runtime_model ? "NCCL's model's own cap: its tuning tables give this time whatever the links, "
                                  "latencies and reduction rates (none twice as fast moves it by 1 %)"
                                : "fixed costs: no resource twice as fast moves it by 1 %";
  b.faster_us = b.time_us;
  return b;
}

Bottleneck step_bottleneck(const topo::Topology& topology, const Workload& workload, const StepCosts& given,
                           const StepCosts& resolved, const StepPrice& price, bool runtime_model) {
  std::vector<WhatIf> extra;
  const std::string label = "compute (forward + backward: " + format_time_us(workload.forward_us + workload.backward_us) + ")";
  extra.push_back({"compute", label, 0, price(topology, with_compute_scaled(workload, 1 / kFaster), given, 1)});
  extra.push_back({"horovod", "Horovod: its cycle time and own costs (launch, negotiation, per-tensor work, fusion copies)",
                   0, price(topology, workload, halved_overheads(resolved), 1 / kFaster)});
  return find_bottleneck(
      topology, [&](const topo::Topology& t) { return price(t, workload, given, 1); }, std::move(extra), runtime_model);
}

std::string Bottleneck::line() const {
  if (faster_us == time_us) return description;
  return description + gain_text(time_us, faster_us) + (next.empty() ? "" : "; then " + next);
}

}  // namespace colltune::sim
