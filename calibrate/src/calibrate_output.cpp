// Calibration's outputs (calibrate.hpp): the calibrated topology, its JSON, and the report.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "colltune/common/finite.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/calibration.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/calibrate/calibrate.hpp"
#include "row_json.hpp"

namespace colltune::tuner {
namespace {

using ojson = nlohmann::ordered_json;

// 2: "measured_links", the machine as measured (NCCL's model reads it: sim/calibration.hpp).
constexpr int kCalibrationFormatVersion = 2;
constexpr int kFigureIterations = 8;  // fixed-point rounds of apply_calibration
constexpr double kWrittenExactly = 1e-6;  // a mismatch this small: the figures are written as fitted

bool inside_a_host(const topo::Topology& t, std::size_t link) {
  const int from = t.device(t.link_source(link)).host;
  return from >= 0 && from == t.device(t.link_target(link)).host;
}

// Rank pairs whose routes the cost model measures each level on: rank 0 and a host-mate, rank 0
// and the first rank of the next host (either may be absent).
struct LevelPairs {
  std::optional<std::pair<int, int>> intra, inter;
};
LevelPairs level_pairs(const topo::Topology& t, int nranks) {
  LevelPairs p;
  for (int r = 1; r < nranks; ++r) {
    const bool same = t.host_of_rank(r) == t.host_of_rank(0);
    if (same && !p.intra) p.intra = std::make_pair(0, r);
    if (!same && !p.inter) p.inter = std::make_pair(0, r);
  }
  return p;
}

// Multiplies the figures of the links `pick` selects.
template <class Pick>
void scale_links(topo::Topology& t, Pick pick, double bw_factor, double latency_factor) {
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    if (!pick(i)) continue;
    const topo::Link l = t.link(i);
    t.set_link_figures(i, l.bandwidth_gbps * bw_factor, l.latency_us * latency_factor);
  }
}

// Latency of the links of a route that `pick` selects, and how many there are.
template <class Pick>
std::pair<double, int> route_latency(const topo::Topology& t, const topo::Path& path, Pick pick) {
  double sum = 0;
  int count = 0;
  for (std::size_t i : path.links)
    if (pick(i)) sum += t.link(i).latency_us, ++count;
  return {sum, count};
}

// Sets the latency of the picked links on the level's route so that the route's total becomes
// `target`: scaled where they have latency, spread evenly where they have none.
template <class Pick>
void fit_latency(topo::Topology& t, std::pair<int, int> pair, double target, Pick pick) {
  const topo::Path path = t.route(pair.first, pair.second);
  const auto [own, count] = route_latency(t, path, pick);
  if (count == 0) return;
  const double others = path.latency_us - own;
  const double want = std::max(target - others, 0.0);
  if (own > 0) {
    scale_links(t, pick, 1.0, want / own);
  } else {
    for (std::size_t i = 0; i < t.num_links(); ++i)
      if (pick(i)) t.set_link_figures(i, t.link(i).bandwidth_gbps, want / count);
  }
}

double rel_diff(double a, double b) { return b == 0 ? std::abs(a) : std::abs(a / b - 1); }

ojson values_json(const CalibValues& v) {
  ojson j;
  const auto& names = calibration_parameter_names();
  for (int i = 0; i < CalibValues::kCount; ++i) j[names[static_cast<std::size_t>(i)]] = v.at(i);
  return j;
}

ojson result_json(const CalibrationResult& r) {
  ojson rows = ojson::array();
  for (const RowFit& f : r.rows) {
    rows.push_back(row_json(f));
    rows.back()["flag"] = f.flag;
  }
  ojson j;
  j["format"] = "colltune-calibration";
  j["version"] = kCalibrationFormatVersion;
  j["nranks"] = r.nranks;
  j["fitted"] = r.fitted;
  j["held"] = r.held;
  j["before"] = values_json(r.before);
  j["values"] = values_json(r.after);
  ojson spread = ojson::object();
  for (const std::string& name : r.fitted)
    spread[name] = r.uncertainty[static_cast<std::size_t>(calibration_parameter_index(name))];
  j["rel_uncertainty"] = spread;
  j["iterations"] = r.iterations;
  j["median_abs_error"] = r.median_abs_error;
  j["max_abs_error"] = r.max_abs_error;
  if (r.holdout_median_abs_error >= 0) {
    j["holdout_median_abs_error"] = r.holdout_median_abs_error;
    j["holdout_max_abs_error"] = r.holdout_max_abs_error;
  }
  if (r.fusion_copy_gbps > 0) j["step_costs"] = ojson{{"fusion_copy_gbps", r.fusion_copy_gbps}};
  j["rows"] = rows;
  j["not_modelled"] = r.not_modelled;
  j["nccl_model"] = r.nccl_model;
  j["bounded"] = r.bounded;
  j["skipped"] = r.skipped;
  j["unread_nccl_env"] = r.unread_nccl_env;
  return j;
}

std::string percent(double x) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << (x >= 0 ? "+" : "") << 100 * x << "%";
  return o.str();
}

std::string figure(double x) {
  std::ostringstream o;
  o.precision(4);
  o << x;
  return o.str();
}

// The title over MeasurementSet::unread_nccl_env, in calibrate's text and compare's.
constexpr const char* kUnreadNcclEnvTitle =
    "NCCL settings in the logs that colltune's NCCL model does not read (it reads NCCL_ALGO, NCCL_PROTO and the "
    "channel counts; the fit absorbs what these change)";

void list_some(std::ostringstream& o, const std::string& title, const std::vector<std::string>& items) {
  if (items.empty()) return;
  o << title << " (" << items.size() << "):\n";
  constexpr std::size_t kShown = 5;
  for (std::size_t i = 0; i < std::min(items.size(), kShown); ++i) o << "  " << items[i] << "\n";
  if (items.size() > kShown) o << "  ... and " << items.size() - kShown << " more (--json lists all)\n";
}

}  // namespace

nlohmann::ordered_json row_json(const RowFit& f) {
  ojson j{{"source", f.source}, {"model", f.model}, {"bytes", f.bytes}};
  if (f.nccl) {
    j["selected_by"] = "nccl";
    j["nccl_algorithm"] = f.nccl->algorithm;
    j["nccl_protocol"] = f.nccl->protocol;
    j["nccl_channels"] = f.nccl->channels;
    j["nccl_time_us"] = f.nccl->nccl_time_us;
    if (!f.nccl->env.empty()) j["nccl_env"] = f.nccl->env;
  }
  j["measured_us"] = f.measured_us;
  j["predicted_us"] = f.predicted_us;
  j["rel_error"] = f.rel_error;
  return j;
}

std::vector<WrittenFigure> written_figures(const topo::Topology& written, int nranks, const CalibValues& v) {
  const LevelPairs pairs = level_pairs(written, nranks);
  const CalibValues d = values_of(written, nranks);
  const auto latency = [&](int p) {
    return WrittenFigure{p, d.at(p), std::abs(d.at(p) - v.at(p)) / std::max(v.at(p), 1e-3)};
  };
  const auto rate = [&](int p) { return WrittenFigure{p, d.at(p), rel_diff(d.at(p), v.at(p))}; };
  std::vector<WrittenFigure> out;
  if (pairs.intra) out.insert(out.end(), {latency(0), rate(1)});
  if (pairs.inter) out.insert(out.end(), {latency(2), rate(3)});
  out.push_back(rate(4));
  return out;
}

namespace {

// Which links the written file scales with the intra-host figures (the others with the
// inter-host ones).
// Bandwidth: the links the routes between host-mates take (a machine whose ranks meet in a
// switch outside any host, like the flat preset, included), and every link inside a host of a
// kind those routes use (NVLink on a DGX). A link inside a host of another kind lies on the way
// to the NICs (a DGX's PCIe between GPU and NIC), on the route between hosts, whose figure the
// predictor prices it in, so its bandwidth moves with the network's. Scaled with NVLink
// instead, an NVLink fitted slower than the NICs put a PCIe hop below the NIC on every route
// between hosts, and the written file priced 8 GiB 25% slower than the fit had.
// Latency: a route is the quickest path, so the written latencies must keep the routes on
// their links. Two ways: the first where it keeps every route and misses no more than the other:
//  - split: the routes between host-mates and the links inside a host that no rank's route to
//    another host takes (a DGX H100's PCIe between its switches and the CPUs) move with the
//    intra figure, the links on the way to the NICs with the inter one, so each level carries
//    its own latency (nccl-tests#309's four nodes: 9.3 us inside a host, 4 between hosts). It
//    fails where a path between host-mates runs only over links on the way to the NICs (two
//    GPUs of a DGX A100 behind one PCIe switch): a larger intra latency moves that route off
//    NVLink;
//  - together: every link inside a host moves with the intra figure, which keeps every route
//    inside a host, and carries the intra scale onto the way to the NICs.
struct LinkPicks {
  std::vector<bool> intra_latency, intra_bandwidth;
};

LinkPicks link_picks(const topo::Topology& t, const LevelPairs& pairs, int nranks, bool split) {
  LinkPicks picks{std::vector<bool>(t.num_links(), false), std::vector<bool>(t.num_links(), false)};
  for (std::size_t i = 0; i < t.num_links(); ++i) picks.intra_latency[i] = inside_a_host(t, i);
  if (split && pairs.inter) {
    // Every rank's routes to and from a rank on another host.
    for (int r = 0; r < nranks; ++r) {
      const int other =
          t.host_of_rank(r) == t.host_of_rank(pairs.inter->second) ? pairs.inter->first : pairs.inter->second;
      for (const auto& [a, b] : {std::make_pair(r, other), std::make_pair(other, r)})
        for (std::size_t i : t.route(a, b).links) picks.intra_latency[i] = false;
    }
  }
  if (!pairs.intra) return picks;
  std::set<topo::LinkKind> kinds;
  for (const auto& [a, b] : {*pairs.intra, std::make_pair(pairs.intra->second, pairs.intra->first)})
    for (std::size_t i : t.route(a, b).links) {
      picks.intra_latency[i] = picks.intra_bandwidth[i] = true;
      kinds.insert(t.link(i).kind);
    }
  for (std::size_t i = 0; i < t.num_links(); ++i)
    picks.intra_bandwidth[i] = picks.intra_bandwidth[i] || (inside_a_host(t, i) && kinds.count(t.link(i).kind) > 0);
  return picks;
}

// The largest difference of written_figures.
double mismatch_of(const topo::Topology& t, int nranks, const CalibValues& v) {
  double worst = 0;
  for (const WrittenFigure& f : written_figures(t, nranks, v)) worst = std::max(worst, f.difference);
  return worst;
}

topo::Topology write_figures(const topo::Topology& topology, int nranks, const LevelPairs& pairs,
                             const LinkPicks& picks, const CalibValues& v) {
  topo::Topology t = topology;
  const auto intra = [&](std::size_t i) { return static_cast<bool>(picks.intra_latency[i]); };
  const auto inter = [&](std::size_t i) { return !picks.intra_latency[i]; };
  const auto intra_bw = [&](std::size_t i) { return static_cast<bool>(picks.intra_bandwidth[i]); };
  const auto inter_bw = [&](std::size_t i) { return !picks.intra_bandwidth[i]; };
  // No link is written faster than its declared rate times the level's fitted/declared ratio
  // (at most its line rate: the fit is bounded there). Where a level's route is limited by the
  // other level's links (intra-host links fitted slower than the NICs, on the way to them),
  // scaling its own links cannot reach the figure: the written figures then miss it
  // (written_figures_mismatch) instead of running away to absurd rates.
  const CalibValues declared = values_of(topology, nranks);
  const auto cap = [&](auto pick, double fitted, double was) {
    const double ratio = was > 0 ? std::max(1.0, fitted / was) : 1.0;
    for (std::size_t i = 0; i < t.num_links(); ++i)
      if (pick(i) && t.link(i).bandwidth_gbps > topology.link(i).bandwidth_gbps * ratio)
        t.set_link_figures(i, topology.link(i).bandwidth_gbps * ratio, t.link(i).latency_us);
  };
  for (int round = 0; round < kFigureIterations; ++round) {
    CalibValues d = values_of(t, nranks);
    if (pairs.intra) {
      if (d.intra_gbps > 0) scale_links(t, intra_bw, v.intra_gbps / d.intra_gbps, 1.0);
      cap(intra_bw, v.intra_gbps, declared.intra_gbps);
      fit_latency(t, *pairs.intra, v.alpha_intra_us, intra);
    }
    if (pairs.inter) {
      d = values_of(t, nranks);
      if (d.inter_gbps > 0) scale_links(t, inter_bw, v.inter_gbps / d.inter_gbps, 1.0);
      cap(inter_bw, v.inter_gbps, declared.inter_gbps);
      fit_latency(t, *pairs.inter, v.alpha_inter_us, inter);
    }
    if (!pairs.intra && !pairs.inter) break;  // one rank: no route to fit
  }
  for (int r = 0; r < nranks; ++r) t.set_reduce_gbps(t.device_of_rank(r), v.reduce_gbps);
  return t;
}

// Whether `written` routes the levels' pairs over the links `topology` does.
bool keeps_routes(const topo::Topology& topology, const topo::Topology& written, const LevelPairs& pairs) {
  for (const auto& pair : {pairs.intra, pairs.inter}) {
    if (!pair) continue;
    for (const auto& [a, b] : {*pair, std::make_pair(pair->second, pair->first)})
      if (written.route(a, b).links != topology.route(a, b).links) return false;
  }
  return true;
}

}  // namespace

topo::Topology apply_calibration(const topo::Topology& topology, int nranks, const CalibValues& v,
                                 double* max_mismatch) {
  const LevelPairs pairs = level_pairs(topology, nranks);
  topo::Topology written = write_figures(topology, nranks, pairs, link_picks(topology, pairs, nranks, true), v);
  double miss = mismatch_of(written, nranks, v);
  const bool split_keeps_routes = keeps_routes(topology, written, pairs);
  if (miss > kWrittenExactly || !split_keeps_routes) {
    topo::Topology together = write_figures(topology, nranks, pairs, link_picks(topology, pairs, nranks, false), v);
    const double together_miss = mismatch_of(together, nranks, v);
    if (!split_keeps_routes || together_miss < miss) {
      written = std::move(together);
      miss = together_miss;
    }
  }
  if (max_mismatch) *max_mismatch = miss;
  return written;
}

std::string calibrated_topology_json(const topo::Topology& topology, const CalibrationResult& result) {
  double mismatch = 0;
  topo::Topology t = apply_calibration(topology, result.nranks, result.after, &mismatch);
  ojson j = result_json(result);
  // The protocol efficiencies live only here: the topology has no notion of NCCL's protocols.
  j["written_figures_mismatch"] = mismatch;
  // The machine as measured: every link's figures before calibration, in link order.
  const topo::Topology measured = sim::measured_machine(topology);
  ojson links = ojson::array();
  for (std::size_t i = 0; i < measured.num_links(); ++i)
    links.push_back(ojson::array({measured.link(i).bandwidth_gbps, measured.link(i).latency_us}));
  j["measured_links"] = std::move(links);
  if (t.description.find("(calibrated)") == std::string::npos) t.description += " (calibrated)";
  t.calibration = j.dump();
  return topo::to_json(t);
}

std::string calibration_json(const CalibrationResult& result, const WrittenCheck* written) {
  ojson j = result_json(result);
  if (written) {
    j["written"] = {{"misses", written->misses}};
    if (!written->misses.empty())
      j["written"]["fitted_rows_on_file"] = {{"rows", written->fitted_rows.rows},
                                             {"median_abs_error", written->fitted_rows.median_abs},
                                             {"max_abs_error", written->fitted_rows.max_abs}};
  }
  return finite::json_text(j, 2, "calibrate --json") + "\n";
}

std::string calibration_text(const CalibrationResult& r) {
  std::ostringstream o;
  std::size_t fitted = 0, warm = 0, held_out = 0;
  std::vector<std::string> outliers, warmups, spikes;
  for (const RowFit& f : r.rows) {
    const std::string line = f.source + " (" + f.model + ", " + std::to_string(f.bytes) + " B): measured " +
                             figure(f.measured_us) + " us, predicted " + figure(f.predicted_us) + " us (" +
                             percent(f.rel_error) + ")";
    if (f.flag == "warm-up") ++warm, warmups.push_back(line);
    else if (f.flag == "held out") ++held_out;
    else if (f.flag == "outlier") outliers.push_back(line);
    else if (f.flag == "spike") spikes.push_back(line);
    else ++fitted;
  }
  o << "calibrated " << r.nranks << " ranks: " << fitted << " rows fitted";
  if (held_out) o << ", " << held_out << " held out";
  if (warm) o << ", " << warm << " left out (warm-up)";
  if (!spikes.empty()) o << ", " << spikes.size() << " left out (spikes)";
  if (!outliers.empty()) o << ", " << outliers.size() << " left out (outliers)";
  if (!r.not_modelled.empty()) o << ", " << r.not_modelled.size() << " not modelled";
  o << "; " << r.iterations << " iterations\n";
  o << "parameter           topology      fitted  (+- relative standard error)\n";
  const auto& names = calibration_parameter_names();
  for (int i = 0; i < CalibValues::kCount; ++i) {
    const std::string& n = names[static_cast<std::size_t>(i)];
    const bool is_fitted = std::find(r.fitted.begin(), r.fitted.end(), n) != r.fitted.end();
    char line[128];
    const double u = r.uncertainty.empty() ? 0 : r.uncertainty[static_cast<std::size_t>(i)];
    char spread[32] = "  (held)";
    if (is_fitted) std::snprintf(spread, sizeof spread, "  +-%.1f%%", 100 * u);
    std::snprintf(line, sizeof line, "%-18s %10.4g  %10.4g%s\n", n.c_str(), r.before.at(i), r.after.at(i), spread);
    o << line;
  }
  for (const auto& h : r.held) o << "held: " << h << "\n";
  for (const auto& b : r.bounded) o << "bounded: " << b << "\n";
  o << "error |predicted/measured - 1| on fitted rows: median " << percent(r.median_abs_error).substr(1) << ", max "
    << percent(r.max_abs_error).substr(1) << "\n";
  if (r.holdout_median_abs_error >= 0)
    o << "error on held-out rows (predicted, not fitted): median " << percent(r.holdout_median_abs_error).substr(1)
      << ", max " << percent(r.holdout_max_abs_error).substr(1) << "\n";
  if (r.fusion_copy_gbps > 0)
    o << "fusion-buffer copies (Horovod timeline) ran at " << figure(r.fusion_copy_gbps)
      << " GB/s: the calibrated topology's step model uses it\n";
  list_some(o, "outliers (beyond 3 robust sigmas of the first fit, left out)", outliers);
  list_some(o, "warm-up rows (slower than the next larger size by 1.5x, left out)", warmups);
  list_some(o, "spikes (out-of-place and in-place times 1.5x apart, left out)", spikes);
  list_some(o, "not modelled", r.not_modelled);
  list_some(o, "predicted by NCCL's own model (no colltune schedule of NCCL's pick), not fitted", r.nccl_model);
  list_some(o, "skipped lines", r.skipped);
  list_some(o, kUnreadNcclEnvTitle, r.unread_nccl_env);
  return o.str();
}

}  // namespace colltune::tuner
