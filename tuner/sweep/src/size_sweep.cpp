// colltune sweep --bytes (size_sweep.hpp): busbw against size on each varied topology.
#include "colltune/tuner/size_sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/finite.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/svg.hpp"
#include "colltune/common/units.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/nccl_price.hpp"
#include "colltune/sim/priced_machine.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::tuner {
namespace {

constexpr std::size_t kElem = 4;  // fp32, as nccl-tests' default

std::string describe_values(const std::vector<SweepAxis>& axes, const std::vector<std::string>& values) {
  std::string out;
  for (std::size_t a = 0; a < axes.size(); ++a) out += (a ? ", " : "") + axes[a].key + "=" + values[a];
  return out;
}

// nccl-tests' allreduce bus bandwidth; 0 for 0 bytes (no time: nothing moved), as simulate says.
double busbw(std::size_t bytes, double time_us, int ranks) {
  const double factor = ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0;
  return gbps(bytes, time_us) * factor;
}

void check_spec(const SizeSweepSpec& spec) {
  if (spec.axes.empty() || spec.axes.size() > 2)
    throw Error("--vary: give one or two (got " + std::to_string(spec.axes.size()) + ")");
  if (spec.axes.size() == 2 && spec.axes[0].key == spec.axes[1].key)
    throw Error("--vary " + spec.axes[0].key + " given twice");
  for (const SweepAxis& a : spec.axes)
    if (a.key == "model" || a.key == "batch")
      throw Error("--vary " + a.key + ": a message-size sweep (--bytes) varies topology parameters only");
  if (spec.sizes.empty()) throw Error("--bytes: no sizes to sweep");
  if (spec.algorithm != "nccl" && coll::find_algorithm(spec.algorithm).collective != coll::Collective::allreduce)
    throw Error("--algo " + spec.algorithm + ": not an allreduce (a message-size sweep prices allreduce)");
}

// The machine an algorithm runs on, as simulate builds it: an in-switch algorithm's switches
// are ranks too (with_nvls_switch, with_sharp_switch). `why_not` says why there is none.
topo::Topology machine_for(const coll::Algorithm& algo, const topo::Topology& topology, std::string& why_not) {
  if (!algo.in_switch) return topology;
  try {
    return algo.in_network_switch ? topo::with_sharp_switch(topology) : topo::with_nvls_switch(topology);
  } catch (const Error& e) {
    why_not = e.what();
    return topology;
  }
}

// Every size on one topology, priced as `colltune simulate --algo A` prices it; a size where the
// algorithm does not run is a cell that says why.
std::vector<SizeSweepCell> price_sizes(const SizeSweepSpec& spec, const topo::Topology& topology) {
  std::vector<SizeSweepCell> cells;
  const int ranks = topology.num_ranks();
  if (spec.algorithm == "nccl") {
    // NCCL's pick by NCCL's model, priced by its colltune schedule on the (calibrated) machine:
    // the one NCCL price path simulate, step and tune take (sim::make_nccl_pricer).
    const std::unique_ptr<sim::NcclPricer> pricer = sim::make_nccl_pricer(topology, spec.nccl);
    for (std::size_t bytes : spec.sizes) {
      const sim::NcclPrice p = pricer->price(sim::NcclColl::allreduce, bytes, kElem);
      cells.push_back({bytes, p.time_us, busbw(bytes, p.time_us, ranks),
                       std::string(sim::to_string(p.nccl.algo)) + "/" + std::string(sim::to_string(p.nccl.proto))});
    }
    return cells;
  }
  const coll::Algorithm& algo = coll::find_algorithm(spec.algorithm);
  std::string no_switch;
  const topo::Topology machine = machine_for(algo, topology, no_switch);
  if (!no_switch.empty()) {
    for (std::size_t bytes : spec.sizes) cells.push_back({bytes, 0, 0, algo.id, no_switch});
    return cells;
  }
  const sim::CostModel model(machine);
  for (std::size_t bytes : spec.sizes) {
    sim::CollectiveRequest request;
    request.algorithm = algo.id;
    request.bytes = bytes;
    request.elem_size = kElem;
    const double t = model.time_us(algo, request);
    if (std::isfinite(t)) {
      cells.push_back({bytes, t, busbw(bytes, t, ranks), algo.id, ""});
      continue;
    }
    const auto reason = algo.not_applicable ? algo.not_applicable(model.layout, bytes / kElem, {}) : std::nullopt;
    cells.push_back({bytes, 0, 0, algo.id, reason ? *reason : "not applicable to " + std::to_string(ranks) + " ranks"});
  }
  return cells;
}

std::string fmt(const char* format, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string title(const SizeSweepResult& r) {
  std::string varied;
  for (const SweepAxis& a : r.spec.axes) varied += (varied.empty() ? "" : " and ") + a.key;
  std::string algorithm = r.spec.algorithm;
  for (const std::string& s : nccl_setting_lines(r.spec.nccl)) algorithm += ", " + s;  // the user's NCCL settings
  return "allreduce (" + algorithm + ") on " + r.spec.topology + ", varying " + varied;
}

std::string size_label(double x) { return format_bytes(static_cast<std::size_t>(x)); }

}  // namespace

SizeSweepResult run_size_sweep(const SizeSweepSpec& spec) {
  check_spec(spec);
  const auto combos = sweep_points(spec.axes);
  if (combos.size() > limits::kMaxSweepPoints)
    limits::exceeded("--vary: " + std::to_string(combos.size()) + " points",
                     std::to_string(limits::kMaxSweepPoints) + " points", limits::kMaxSweepPointsReason);
  std::vector<topo::Topology> topologies;
  for (const auto& values : combos) {
    try {
      topologies.push_back(topo::load_topology(sweep_topology_spec(spec.topology, spec.axes, values)));
    } catch (const Error& e) {
      throw Error("--vary " + describe_values(spec.axes, values) + ": " + e.what());
    }
  }
  SizeSweepResult r;
  r.spec = spec;
  for (std::size_t i = 0; i < combos.size(); ++i) {
    SizeSweepPoint p{combos[i], sweep_topology_spec(spec.topology, spec.axes, combos[i]), topologies[i].num_ranks(), {}};
    try {
      p.cells = price_sizes(spec, topologies[i]);
    } catch (const Error& e) {
      throw Error("--vary " + describe_values(spec.axes, combos[i]) + ": " + e.what());
    }
    r.points.push_back(std::move(p));
  }
  return r;
}

std::string size_sweep_text(const SizeSweepResult& r) {
  std::ostringstream o;
  o << "# colltune sweep: " << title(r) << "\n# busbw (GB/s) per size and topology (ranks:";
  std::vector<int> widths;
  for (const SizeSweepPoint& p : r.points) o << " " << p.ranks;
  o << ")\n#     size(B)";
  for (const SizeSweepPoint& p : r.points) {
    const std::string head = describe_values(r.spec.axes, p.values);
    widths.push_back(std::max<int>(12, static_cast<int>(head.size())));
    char cell[96];
    std::snprintf(cell, sizeof cell, "  %*s", widths.back(), head.c_str());
    o << cell;
  }
  o << "\n";
  for (std::size_t s = 0; s < r.spec.sizes.size(); ++s) {
    o << fmt("%14.0f", static_cast<double>(r.spec.sizes[s]));
    for (std::size_t i = 0; i < r.points.size(); ++i) {
      const SizeSweepCell& c = r.points[i].cells[s];
      char cell[64];
      if (c.not_applicable.empty()) std::snprintf(cell, sizeof cell, "  %*.2f", widths[i], c.busbw_gbps);
      else std::snprintf(cell, sizeof cell, "  %*s", widths[i], "n/a");
      o << cell;
    }
    o << "\n";
  }
  for (const SizeSweepPoint& p : r.points)  // each reason once per topology
    for (const SizeSweepCell& c : p.cells)
      if (!c.not_applicable.empty()) {
        o << "# n/a on " << describe_values(r.spec.axes, p.values) << ": " << c.not_applicable << "\n";
        break;
      }
  return o.str();
}

std::string size_sweep_csv(const SizeSweepResult& r) {
  std::ostringstream o;
  for (const SweepAxis& a : r.spec.axes) o << a.key << ",";
  o << "topology,ranks,bytes,time_us,busbw_gbps,algorithm\n";
  for (const SizeSweepPoint& p : r.points)
    for (const SizeSweepCell& c : p.cells) {
      for (const std::string& v : p.values) o << v << ",";
      o << "\"" << p.topology << "\"," << p.ranks << "," << c.bytes << ",";
      if (c.not_applicable.empty()) o << fmt("%.6g", c.time_us) << "," << fmt("%.6g", c.busbw_gbps) << "," << c.choice << "\n";
      else o << ",,not applicable\n";  // empty cells, as a spreadsheet reads them
    }
  return o.str();
}

std::string size_sweep_json(const SizeSweepResult& r) {
  nlohmann::ordered_json axes = nlohmann::ordered_json::array(), points = nlohmann::ordered_json::array();
  for (const SweepAxis& a : r.spec.axes) axes.push_back({{"key", a.key}, {"values", a.values}});
  for (const SizeSweepPoint& p : r.points) {
    nlohmann::ordered_json cells = nlohmann::ordered_json::array();
    for (const SizeSweepCell& c : p.cells)
      if (c.not_applicable.empty())
        cells.push_back({{"bytes", c.bytes}, {"time_us", c.time_us}, {"busbw_gbps", c.busbw_gbps}, {"algorithm", c.choice}});
      else
        cells.push_back({{"bytes", c.bytes}, {"algorithm", c.choice}, {"not_applicable", c.not_applicable}});
    points.push_back({{"values", p.values}, {"topology", p.topology}, {"ranks", p.ranks}, {"sizes", cells}});
  }
  const nlohmann::ordered_json out = {{"format", "colltune-size-sweep"}, {"version", 1},
                                      {"topology", r.spec.topology},     {"algorithm", r.spec.algorithm},
                                      {"axes", axes},                    {"points", points}};
  return finite::json_text(out, 2, "the size-sweep JSON");
}

std::string size_sweep_html(const SizeSweepResult& r) {
  std::vector<svg::Series> series;
  std::vector<double> ticks;
  for (std::size_t s = 0; s < r.spec.sizes.size(); s += 4) ticks.push_back(static_cast<double>(r.spec.sizes[s]));
  for (const SizeSweepPoint& p : r.points) {
    svg::Series line{describe_values(r.spec.axes, p.values), {}, {}};
    for (const SizeSweepCell& c : p.cells) {
      if (!c.not_applicable.empty()) continue;  // no point where it does not run
      line.x.push_back(static_cast<double>(c.bytes));
      line.y.push_back(c.busbw_gbps);
    }
    series.push_back(std::move(line));
  }
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>colltune sweep: "
    << svg::escape(title(r)) << "</title>\n<style>body{font-family:sans-serif;margin:2em}</style></head><body>\n"
    << "<h1>colltune sweep: " << svg::escape(title(r)) << "</h1>\n<h2>Bus bandwidth against size</h2>\n"
    << "<p>nccl-tests' allreduce bus bandwidth, one line per topology.</p>\n"
    << svg::line_chart(series, "message size per rank", "busbw (GB/s)", size_label, ticks) << "</body></html>\n";
  return o.str();
}

}  // namespace colltune::tuner
