// Calibration (calibrate.hpp): the robust fit (the row predictor is predictor.cpp).
#include "colltune/calibrate/calibrate.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "colltune/common/error.hpp"
#include "colltune/common/parallel.hpp"
#include "colltune/sim/calibration.hpp"

namespace colltune::tuner {
namespace {

constexpr double kHuberK = 1.345;        // Huber's constant: 95% efficiency on normal residuals
constexpr double kOutlierSigmas = 3.0;   // residuals beyond this many robust sigmas are reported
constexpr double kWarmupRatio = 1.5;     // a row this much slower than the next larger size
constexpr double kSpikeRatio = 1.5;      // a row's two samples (out of place, in place) this far apart
constexpr double kMinLatencyUs = 1e-4;   // log-space floor: latencies are never exactly 0
constexpr double kSeparableRatio = 1e-3; // smallest/largest singular value below this: degenerate
constexpr double kMaxRelativeError = 1.0;  // a fitted value known only to +-100% is no fit
constexpr double kTradeCorrelation = 0.9;  // two estimates this correlated: the rows fix their combination
constexpr double kStartBelowBound = 0.95;  // a bounded parameter starts at most this fraction of its bound

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  return 0.5 * (upper + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid)));
}

// 1.4826 x the median absolute deviation from 0: a robust standard deviation of residuals that
// should centre on zero.
double robust_sigma(const std::vector<double>& r) {
  std::vector<double> a(r.size());
  std::transform(r.begin(), r.end(), a.begin(), [](double x) { return std::abs(x); });
  return 1.4826 * median(std::move(a));
}

}  // namespace

ErrorSummary summarize_errors(const std::vector<double>& abs_errors) {
  ErrorSummary s;
  s.rows = abs_errors.size();
  if (abs_errors.empty()) return s;
  s.median_abs = median(abs_errors);
  s.max_abs = *std::max_element(abs_errors.begin(), abs_errors.end());
  return s;
}

bool is_spike(const Measurement& m) {
  if (!m.in_place_time_us) return false;
  const double ratio = m.time_us / *m.in_place_time_us;
  return ratio > kSpikeRatio || ratio * kSpikeRatio < 1;
}

void check_rank_count(const topo::Topology& topology, const MeasurementSet& measurements) {
  const auto ranks = static_cast<std::size_t>(topology.num_ranks());
  for (const Measurement& m : measurements.rows) {
    if (m.nranks != 0 && m.nranks != topology.num_ranks())
      throw Error(m.source + ": measured on " + std::to_string(m.nranks) + " ranks, the topology '" + topology.name +
                  "' has " + std::to_string(topology.num_ranks()));
    // nccl-tests' size of a reduce-scatter or allgather is the whole buffer: every rank's share.
    const std::size_t share = ranks * (m.elem_size == 0 ? 1 : m.elem_size);
    if (m.collective != coll::Collective::allreduce && share > 0 && m.bytes % share != 0)
      throw Error(m.source + ": a " + std::string(coll::to_string(m.collective)) + " of " + std::to_string(m.bytes) +
                  " bytes is not a whole number of " + std::to_string(m.elem_size) + "-byte elements on each of the " +
                  std::to_string(ranks) + " ranks of '" + topology.name + "': measured on another machine?");
  }
}

// ---- the fit --------------------------------------------------------------------------------

namespace {

struct FitRow {
  const Measurement* m;
  std::string model;
  bool in_fit = true;
  std::string flag;
};

// Series: rows of one file, algorithm and protocol setting, by size. A row slower than the
// next larger size of its series by kWarmupRatio is a warm-up row or a hiccup.
void flag_warmup_rows(std::vector<FitRow>& rows) {
  std::map<std::string, std::vector<std::size_t>> series;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Measurement& m = *rows[i].m;
    const std::string file = m.source.substr(0, m.source.rfind(':'));
    series[file + "|" + rows[i].model].push_back(i);
  }
  for (auto& [key, idx] : series) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return rows[a].m->bytes < rows[b].m->bytes; });
    for (std::size_t k = 0; k + 1 < idx.size(); ++k) {
      FitRow& row = rows[idx[k]];
      const FitRow& next = rows[idx[k + 1]];
      if (row.m->bytes < next.m->bytes && row.m->time_us > kWarmupRatio * next.m->time_us) {
        row.in_fit = false;
        row.flag = "warm-up";
      }
    }
  }
}

// A row whose two samples of one call disagree (is_spike) was disturbed in one of them
// (nccl-tests times each size out of place and in place with the same algorithm and protocol): it
// is left out as a spike, whichever sample is off. nccl-tests#309's 4-node log: 1 MiB at 317 us
// out of place, 93 us in place.
void flag_spike_rows(std::vector<FitRow>& rows) {
  for (FitRow& row : rows) {
    if (!row.in_fit || !is_spike(*row.m)) continue;
    row.in_fit = false;
    row.flag = "spike";
  }
}

// Every other size of each series held out (the odd positions by size).
void hold_out_half(std::vector<FitRow>& rows) {
  std::map<std::string, std::vector<std::size_t>> series;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].in_fit) series[rows[i].model + "|" + rows[i].m->source.substr(0, rows[i].m->source.rfind(':'))].push_back(i);
  for (auto& [key, idx] : series) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return rows[a].m->bytes < rows[b].m->bytes; });
    for (std::size_t k = 1; k < idx.size(); k += 2) {
      rows[idx[k]].in_fit = false;
      rows[idx[k]].flag = "held out";
    }
  }
}

class Fit {
 public:
  // `upper`: per parameter the bound it is fitted under (0: none).
  Fit(const Predictor& predictor, std::vector<const FitRow*> rows, const CalibValues& start, std::vector<int> free,
      const CalibValues& upper)
      : predictor_(predictor), rows_(std::move(rows)), start_(start), free_(std::move(free)), upper_(upper) {}

  // Latencies and rates are fitted as logarithms (positive, relative steps); bounded parameters
  // (protocol efficiencies, a fraction of the bytes sent; link bandwidths, a fraction of the
  // line rate) as logits of their fraction of the bound.
  bool is_fraction(int parameter) const { return upper_.at(parameter) > 0; }
  CalibValues values(const Eigen::VectorXd& x) const {
    CalibValues v = start_;
    for (std::size_t j = 0; j < free_.size(); ++j) {
      // Bounded far outside any machine (1e-9..1e9 us, GB/s), so a wild trial step of the
      // fit prices finite numbers.
      const double xj = std::clamp(x[static_cast<long>(j)], -20.7, 20.7);
      const int p = free_[j];
      v.at(p) = is_fraction(p) ? upper_.at(p) / (1 + std::exp(-xj)) : std::exp(xj);
    }
    return v;
  }
  Eigen::VectorXd start_x() const {
    Eigen::VectorXd x(static_cast<long>(free_.size()));
    for (std::size_t j = 0; j < free_.size(); ++j) {
      const double v = start_.at(free_[j]);
      if (is_fraction(free_[j])) {
        // Not at the bound itself, where the logit is flat: the fit could not move it.
        const double f = std::clamp(v / upper_.at(free_[j]), 1e-6, kStartBelowBound);
        x[static_cast<long>(j)] = std::log(f / (1 - f));
      } else {
        x[static_cast<long>(j)] = std::log(std::max(v, kMinLatencyUs));
      }
    }
    return x;
  }
  Eigen::VectorXd residuals(const Eigen::VectorXd& x) const {
    const CalibValues v = values(x);
    // Each row priced on its own (the rows on several threads: the predictor and the pricers'
    // memos are shared safely), so the residuals are a serial loop's.
    const std::vector<double> t =
        parallel_map(rows_.size(), [&](std::size_t i) { return predictor_.time_us(*rows_[i]->m, v); });
    Eigen::VectorXd r(static_cast<long>(rows_.size()));
    for (std::size_t i = 0; i < rows_.size(); ++i) r[static_cast<long>(i)] = std::log(t[i] / rows_[i]->m->time_us);
    return r;
  }
  // Forward differences in log space from the residuals at x (which the fit has already):
  // one pricing of every row per parameter, the cost of an iteration. A step of 1e-6 changes a
  // value by one part in a million, far above the pricer's rounding.
  Eigen::MatrixXd jacobian(const Eigen::VectorXd& x, const Eigen::VectorXd& r_at_x) const {
    constexpr double h = 1e-6;
    Eigen::MatrixXd J(static_cast<long>(rows_.size()), x.size());
    for (long j = 0; j < x.size(); ++j) {
      Eigen::VectorXd up = x;
      up[j] += h;
      J.col(j) = (residuals(up) - r_at_x) / h;
    }
    return J;
  }
  Eigen::MatrixXd jacobian(const Eigen::VectorXd& x) const { return jacobian(x, residuals(x)); }

 private:
  const Predictor& predictor_;
  std::vector<const FitRow*> rows_;
  CalibValues start_;
  std::vector<int> free_;
  CalibValues upper_;
};

Eigen::VectorXd huber_weights(const Eigen::VectorXd& r, double sigma) {
  Eigen::VectorXd w(r.size());
  for (long i = 0; i < r.size(); ++i) {
    const double u = std::abs(r[i]) / sigma;
    w[i] = u <= kHuberK ? 1.0 : kHuberK / u;
  }
  return w;
}

double huber_loss(const Eigen::VectorXd& r, double sigma) {
  double loss = 0;
  for (long i = 0; i < r.size(); ++i) {
    const double u = std::abs(r[i]) / sigma;
    loss += u <= kHuberK ? 0.5 * u * u : kHuberK * u - 0.5 * kHuberK * kHuberK;
  }
  return loss;
}

std::string describe_sizes(const std::vector<const FitRow*>& rows) {
  std::set<std::size_t> sizes;
  for (const FitRow* r : rows) sizes.insert(r->m->bytes);
  return std::to_string(sizes.size()) + " distinct size" + (sizes.size() == 1 ? "" : "s") + " from " +
         std::to_string(*sizes.begin()) + " to " + std::to_string(*sizes.rbegin()) + " bytes";
}

// Where the rows cannot separate the free parameters (the column-scaled Jacobian nearly
// singular), the two that trade against each other along its weakest direction, the one that
// moves the rows less at the fitted values first: {index into free of one, index of the other}
// (to_hold picks the one to hold).
// A column far below the others (a parameter the rows stopped depending on at the fitted
// values, e.g. a bandwidth hidden behind a slower reduction) is returned paired with itself.
std::optional<std::pair<std::size_t, std::size_t>> inseparable_pair(const Eigen::MatrixXd& J) {
  if (J.cols() < 2) return std::nullopt;
  const Eigen::VectorXd norms = J.colwise().norm();
  long weakest = 0;
  if (norms.minCoeff(&weakest) < 1e-6 * norms.maxCoeff())
    return std::make_pair(static_cast<std::size_t>(weakest), static_cast<std::size_t>(weakest));
  Eigen::MatrixXd scaled = J;
  for (long j = 0; j < J.cols(); ++j) {
    const double n = J.col(j).norm();
    if (n > 0) scaled.col(j) /= n;
  }
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(scaled, Eigen::ComputeThinV);
  const auto& s = svd.singularValues();
  if (s[s.size() - 1] >= kSeparableRatio * s[0]) return std::nullopt;
  const Eigen::VectorXd v = svd.matrixV().col(s.size() - 1).cwiseAbs();
  std::vector<std::size_t> order(static_cast<std::size_t>(v.size()));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[static_cast<long>(a)] > v[static_cast<long>(b)]; });
  std::size_t hold = order[0], other = order[1];
  if (J.col(static_cast<long>(hold)).norm() > J.col(static_cast<long>(other)).norm()) std::swap(hold, other);
  return std::make_pair(hold, other);
}

// Each level's latency and bandwidth need two sizes at least: a single size cannot split a time
// into a fixed part and a per-byte part.
void check_sizes(const std::vector<const FitRow*>& rows, const std::vector<int>& free) {
  std::set<std::size_t> sizes;
  for (const FitRow* r : rows) sizes.insert(r->m->bytes);
  if (sizes.size() >= 2 || free.size() <= 1) return;
  throw Error("calibrate: only one size measured (" + std::to_string(*sizes.begin()) + " bytes): a latency (" +
              calibration_parameter_names()[static_cast<std::size_t>(free.front())] +
              ") cannot be told from a bandwidth with one size; measure a range of sizes (-b 8 -e 256M)");
}

struct FitState {
  Eigen::VectorXd x, r;
  Eigen::MatrixXd J;  // at x
  double sigma = 1e-3;
  int iterations = 0;
};

// Levenberg-Marquardt on the Huber loss of the log residuals, the robust scale re-estimated
// each iteration (IRLS).
FitState run_fit(const Fit& fit) {
  FitState st;
  st.x = fit.start_x();
  st.r = fit.residuals(st.x);
  const auto scale = [](const Eigen::VectorXd& r) {
    return std::max(robust_sigma(std::vector<double>(r.data(), r.data() + r.size())), 1e-3);  // >= 0.1%
  };
  st.sigma = scale(st.r);
  double lambda = 1e-3;
  for (st.iterations = 0; st.iterations < 200; ++st.iterations) {
    const Eigen::MatrixXd J = fit.jacobian(st.x, st.r);
    const Eigen::VectorXd w = huber_weights(st.r, st.sigma);
    const Eigen::MatrixXd JtW = J.transpose() * w.asDiagonal();
    const Eigen::MatrixXd H = JtW * J;
    const Eigen::VectorXd g = JtW * st.r;
    const double before = huber_loss(st.r, st.sigma);
    bool improved = false;
    Eigen::VectorXd step;
    for (int tries = 0; tries < 30 && !improved; ++tries) {
      Eigen::MatrixXd A = H;
      A.diagonal() += lambda * H.diagonal().cwiseMax(1e-12);
      step = A.ldlt().solve(-g);
      const Eigen::VectorXd r_new = fit.residuals(st.x + step);
      if (r_new.allFinite() && huber_loss(r_new, st.sigma) < before) {
        st.x += step;
        st.r = r_new;
        lambda = std::max(lambda / 3, 1e-9);
        improved = true;
      } else {
        lambda *= 4;
      }
    }
    // Converged when no step helps, a step moves no value by 1e-6 relative, or the loss (at
    // this iteration's scale) no longer falls by 1e-9 of itself.
    const double after = huber_loss(st.r, st.sigma);
    st.sigma = scale(st.r);
    if (!improved || step.cwiseAbs().maxCoeff() < 1e-6 || before - after <= 1e-9 * before) break;
  }
  st.J = fit.jacobian(st.x, st.r);
  return st;
}

// (J' W J)^-1 at the fit, W the Huber weights: the Gauss-Newton covariance of the fitted
// coordinates (log or logit) over sigma^2.
Eigen::MatrixXd unscaled_covariance(const FitState& st) {
  const Eigen::VectorXd w = huber_weights(st.r, st.sigma);
  return (st.J.transpose() * w.asDiagonal() * st.J).inverse();
}

// Standard errors of the fitted coordinates, from the covariance sigma^2 (J' W J)^-1.
Eigen::VectorXd log_standard_errors(const Eigen::MatrixXd& unscaled, double sigma) {
  return (unscaled.diagonal() * sigma * sigma).cwiseMax(0.0).cwiseSqrt();
}
Eigen::VectorXd log_standard_errors(const FitState& st) {
  return log_standard_errors(unscaled_covariance(st), st.sigma);
}

}  // namespace

namespace {

constexpr int kEfficiencyFirst = 5;     // ll_efficiency, ll128_efficiency: the protocol parameters
constexpr int kIntraGbps = 1, kInterGbps = 3, kReduceGbps = 4;
constexpr double kAtBound = 0.99;       // a bounded value this close to its bound presses against it
constexpr double kMaxLatencyUs = 1e4;   // 10 ms a message: no machine
constexpr double kMinRateGbps = 1e-3;   // 1 MB/s: no machine

const std::string& name_of(int p) { return calibration_parameter_names()[static_cast<std::size_t>(p)]; }
std::string identified_by(int p) {
  return "; to identify it: " + calibration_parameters()[static_cast<std::size_t>(p)].identified_by;
}

// The bounds the parameters are fitted under: efficiencies 1, link bandwidths the line rates
// the topology declares (its links as measured, before any calibration or efficiency), the
// reduction rate the one its devices declare (0: none, unbounded).
CalibValues upper_bounds(const topo::Topology& topology, int nranks) {
  const CalibValues line = values_of(sim::measured_machine(topology), nranks);
  CalibValues upper;
  for (int j = 0; j < CalibValues::kCount; ++j) upper.at(j) = 0;
  upper.intra_gbps = line.intra_gbps;
  upper.inter_gbps = line.inter_gbps;
  upper.reduce_gbps = topology.calibration.empty() ? line.reduce_gbps : 0;
  upper.ll_efficiency = upper.ll128_efficiency = 1;
  return upper;
}

// The rows a calibration fits: every row with a colltune model; rows where NCCL's own time
// stands in are listed, not fitted (no parameter of colltune's moves them).
std::vector<FitRow> modelled_rows(const Predictor& predictor, const MeasurementSet& measurements,
                                  CalibrationResult& result) {
  std::vector<FitRow> rows;
  for (const Measurement& m : measurements.rows) {
    std::string why;
    const auto model = predictor.model_of(m, &why);
    if (!model) result.not_modelled.push_back(m.source + ": " + why);
    else if (const auto nccl = predictor.nccl_model_only(m)) result.nccl_model.push_back(m.source + ": " + *nccl);
    else rows.push_back({&m, *model, true, ""});
  }
  if (rows.empty()) {
    const std::string first = !result.not_modelled.empty() ? result.not_modelled.front()
                              : !result.nccl_model.empty() ? result.nccl_model.front() : "no rows";
    throw Error("calibrate: no measured row has a colltune model (" + first + ")");
  }
  return rows;
}

// The parameters some fitted row depends on, minus --hold; the others held with the reason and
// the measurement that would identify them.
std::vector<int> candidate_parameters(const Predictor& predictor, const std::vector<const FitRow*>& fit_rows,
                                      const CalibrateOptions& options, CalibrationResult& result) {
  std::vector<bool> held(CalibValues::kCount, false);
  for (const auto& name : options.hold) {
    held[static_cast<std::size_t>(calibration_parameter_index(name))] = true;
    result.held.push_back(name + ": held by --hold");
  }
  std::vector<bool> touched(CalibValues::kCount, false);
  // A protocol's efficiency scales bandwidth as the link figures do: it is measurable only
  // against rows that ran at full efficiency (Simple, or colltune's own algorithms).
  bool full_efficiency_rows = false;
  for (const FitRow* r : fit_rows) {
    const auto t = predictor.touches(*r->m);
    for (std::size_t j = 0; j < t.size(); ++j) touched[j] = touched[j] || t[j];
    full_efficiency_rows = full_efficiency_rows || (!t[5] && !t[6]);
  }
  std::vector<int> candidates;
  for (int j = 0; j < CalibValues::kCount; ++j) {
    if (held[static_cast<std::size_t>(j)]) continue;
    if (!touched[static_cast<std::size_t>(j)])
      result.held.push_back(name_of(j) + (j >= kEfficiencyFirst ? ": no row ran that protocol" : ": no measured row depends on it") + identified_by(j));
    else if (j >= kEfficiencyFirst && !full_efficiency_rows)
      result.held.push_back(name_of(j) + ": no Simple-protocol rows to measure it against; to identify it: run "
                                         "all_reduce_perf with NCCL_PROTO=Simple from 64 KiB beside these rows");
    else
      candidates.push_back(j);
  }
  return candidates;
}

// Of the candidates, those the rows change with at the start (inter-host figures on one host,
// the reduction rate for allgather do not): the others held and said so.
std::vector<int> free_parameters(const Fit& probe, const std::vector<int>& candidates, CalibrationResult& result) {
  const Eigen::MatrixXd J0 = probe.jacobian(probe.start_x());
  std::vector<int> free;
  for (std::size_t j = 0; j < candidates.size(); ++j) {
    if (J0.col(static_cast<long>(j)).cwiseAbs().maxCoeff() > 1e-6) free.push_back(candidates[j]);
    else result.held.push_back(name_of(candidates[j]) + ": no measured row depends on it" + identified_by(candidates[j]));
  }
  if (free.empty()) throw Error("calibrate: no parameter left to fit (every one held or untouched by the rows)");
  return free;
}

std::string bounded_reason(int p, double line_gbps) {
  char line[64];
  std::snprintf(line, sizeof line, "%.4g GB/s", line_gbps);
  const char* where = p == kIntraGbps ? "line rate the topology declares inside a host"
                      : p == kInterGbps ? "line rate the topology declares between hosts"
                                        : "reduction rate the topology declares";
  return name_of(p) + ": the rows ask for more than the " + line + " " + where +
         "; bounded there. Check the topology's figures" + identified_by(p);
}

struct Fitting {
  const Predictor& predictor;
  const CalibValues& upper;
  const CalibValues& before;
  std::vector<const FitRow*> rows;
  std::vector<int> free;
  CalibValues start;
  FitState state;
};

// How well the topology knows a rate, for choosing which of two the rows cannot tell apart to
// hold (-1: not a rate). A GPU's or CPU's reduction rate follows from its memory, which the
// hardware table knows; a link inside a host is the board's (NVLink, PCIe lanes); what a link
// between hosts carries depends on NICs, cables, switches, transport and their settings, which is
// what a calibration is for.
int firmness(int p) { return p == kReduceGbps ? 2 : p == kIntraGbps ? 1 : p == kInterGbps ? 0 : -1; }

// Of two free parameters (indices into f.free) the rows cannot tell apart, the one to hold: the
// reduction rate where it is one of them, the intra-host link where the other is the inter-host
// one, else `a` (the one that moves the rows less). Blaming the reduction put 7.3 GB/s for an
// H100 into nccl-tests#290's calibrated file and priced its Ring run 6x too slow; blaming NVLink
// put 211 GB/s into an H100's NVLink on the GCP TCPXO log, whose network runs at 86% of its line
// rate (89% fitted on half its sizes) where the topology's TCP efficiency said 70%.
std::size_t to_hold(const Fitting& f, std::size_t a, std::size_t b) {
  const int fa = firmness(f.free[a]), fb = firmness(f.free[b]);
  if (fa == 2 || fb == 2) return fb == 2 ? b : a;
  if (fa >= 0 && fb >= 0 && fb > fa) return b;
  return a;
}

// The free parameter (index into f.free) whose fitted value trades most closely with `k`'s
// (correlation of the two estimates at least kTradeCorrelation in magnitude), if any: the rows
// determine their combination, not each.
// `cov` is the fit's unscaled_covariance.
std::optional<std::size_t> trading_partner(const Eigen::MatrixXd& cov, std::size_t k) {
  const auto kk = static_cast<long>(k);
  std::optional<std::size_t> partner;
  double closest = kTradeCorrelation;
  for (long j = 0; j < cov.cols(); ++j) {
    if (j == kk || !(cov(kk, kk) > 0 && cov(j, j) > 0)) continue;
    const double corr = std::abs(cov(kk, j)) / std::sqrt(cov(kk, kk) * cov(j, j));
    if (corr >= closest) {
      closest = corr;
      partner = static_cast<std::size_t>(j);
    }
  }
  return partner;
}

// The `held:` line of a parameter the rows do not determine: `why` after "these rows (sizes)".
std::string held_line(const Fitting& f, int p, const std::string& why) {
  return name_of(p) + ": these rows (" + describe_sizes(f.rows) + ") " + why + ", so it stays at the topology's value" +
         identified_by(p);
}

// A link bandwidth the fit pressed against its line rate.
bool at_bound(const Fitting& f, int p) {
  return (p == kIntraGbps || p == kInterGbps || p == kReduceGbps) && f.upper.at(p) > 0 &&
         f.start.at(p) >= kAtBound * f.upper.at(p);
}

// Fits; where the rows cannot separate two parameters, or determine one only to +-100%, holds
// the one they move less at the topology's value, says so, and fits the rest again (each refit
// starts where the previous one ended: pricing every row is the cost of an iteration).
void fit_separable(Fitting& f, CalibrationResult& result) {
  for (;;) {
    const Fit fit(f.predictor, f.rows, f.start, f.free, f.upper);
    f.state = run_fit(fit);
    f.start = fit.values(f.state.x);
    const auto hold = [&](std::size_t k) {
      f.start.at(f.free[k]) = f.before.at(f.free[k]);
      f.free.erase(f.free.begin() + static_cast<long>(k));
    };
    if (const auto pair = inseparable_pair(f.state.J)) {
      const std::size_t held = to_hold(f, pair->first, pair->second);
      const int p = f.free[held], other = f.free[held == pair->first ? pair->second : pair->first];
      if (pair->first == pair->second && at_bound(f, p)) {  // pressed against its line rate: kept there
        result.bounded.push_back(bounded_reason(p, f.upper.at(p)));
        f.free.erase(f.free.begin() + static_cast<long>(pair->first));
        continue;
      }
      const std::string why = pair->first == pair->second ? std::string("do not depend on it at the fitted values")
                                                          : "cannot tell it from " + name_of(other);
      result.held.push_back(held_line(f, p, why));
      hold(held);
      continue;
    }
    const Eigen::MatrixXd cov = unscaled_covariance(f.state);
    const Eigen::VectorXd se = log_standard_errors(cov, f.state.sigma);
    long worst = 0;
    se.maxCoeff(&worst);
    if (f.free.size() < 2 || !(se[worst] > kMaxRelativeError)) return;
    const auto loose = static_cast<std::size_t>(worst);
    // Known loosely because it trades with another: of the two, the one the topology knows better is held.
    if (const auto partner = trading_partner(cov, loose); partner && to_hold(f, loose, *partner) == *partner) {
      result.held.push_back(held_line(f, f.free[*partner], "cannot tell it from " + name_of(f.free[loose])));
      hold(*partner);
      continue;
    }
    char spread[32];
    std::snprintf(spread, sizeof spread, "%.0f%%", 100 * se[worst]);
    result.held.push_back(held_line(f, f.free[loose], std::string("determine it only to +-") + spread));
    hold(loose);
  }
}

// Whether `p` is a link or reduction rate the fit moved while a rate the topology knows less
// well (firmness) that the rows also depend on was not fitted: the fit may have blamed the
// wrong one of two figures the rows tell apart only near the fitted values. On nccl-tests#290's
// two H100 nodes (NVLS-Tree at 150-166 GB/s busbw) the NICs do not limit NVLS-Tree at the
// topology's figures, so the first fit lowered NVLink to 157 GB/s and pressed the network
// against its line rate (19% median error); with NVLink held the network fits at 11 GB/s
// (10%), which the same nodes' Ring run confirms.
std::optional<int> weaker_unfitted_rate(const Fitting& f, int p, const std::vector<int>& first_free) {
  if (firmness(p) < 1) return std::nullopt;
  for (int q : first_free)
    if (firmness(q) >= 0 && firmness(q) < firmness(p) && std::find(f.free.begin(), f.free.end(), q) == f.free.end())
      return q;
  return std::nullopt;
}

// Where the fit moved a firmer rate and left a weaker one unfitted (weaker_unfitted_rate), fits
// again with the firmer one held at the topology's value and the weaker one free, and keeps that
// fit where it fits the rows at least as well (the robust loss at the first fit's scale): of two
// explanations the rows allow, the one that keeps what the topology knows better.
void prefer_the_firmer_held(Fitting& f, const Fitting& first, CalibrationResult& result, std::size_t lines_before_fit) {
  for (const int p : std::vector<int>(f.free)) {
    const std::optional<int> q = weaker_unfitted_rate(f, p, first.free);
    if (!q) continue;
    Fitting alt = first;
    alt.free.erase(std::find(alt.free.begin(), alt.free.end(), p));
    CalibrationResult alt_result;
    fit_separable(alt, alt_result);
    if (std::find(alt.free.begin(), alt.free.end(), *q) == alt.free.end()) continue;
    if (huber_loss(alt.state.r, f.state.sigma) > huber_loss(f.state.r, f.state.sigma)) continue;
    result.held.resize(lines_before_fit);
    result.held.push_back(
        held_line(alt, p, "fit as well with it at the topology's value and " + name_of(*q) + " fitted"));
    for (auto& line : alt_result.held) result.held.push_back(std::move(line));
    result.bounded = std::move(alt_result.bounded);
    f.free = std::move(alt.free);
    f.start = alt.start;
    f.state = std::move(alt.state);
    return;
  }
}

// Rows beyond kOutlierSigmas robust standard deviations weighed little already; they are
// reported as outliers and left out, and the rest fitted once more.
void refit_without_outliers(Fitting& f, std::vector<FitRow>& rows) {
  std::vector<const FitRow*> kept;
  for (std::size_t i = 0; i < f.rows.size(); ++i) {
    if (std::abs(f.state.r[static_cast<long>(i)]) <= kOutlierSigmas * f.state.sigma) {
      kept.push_back(f.rows[i]);
      continue;
    }
    FitRow& row = rows[static_cast<std::size_t>(f.rows[i] - rows.data())];
    row.in_fit = false;
    row.flag = "outlier";
  }
  if (kept.size() == f.rows.size()) return;
  f.rows = kept;
  const Fit refit(f.predictor, f.rows, f.start, f.free, f.upper);
  f.state = run_fit(refit);
  f.start = refit.values(f.state.x);
}

// The fitted values, their uncertainties, and what they say: a bandwidth at its line rate is
// reported; a value outside any machine is refused.
void record_values(const Fitting& f, CalibrationResult& result) {
  const Fit fit(f.predictor, f.rows, f.start, f.free, f.upper);
  result.iterations = f.state.iterations;
  result.after = fit.values(f.state.x);
  // The relative uncertainty of each fitted value: d(value)/value = d(log value); for a logit
  // of value/bound, d(value)/value = (1 - value/bound) d(logit).
  const Eigen::VectorXd se = log_standard_errors(f.state);
  result.uncertainty.assign(CalibValues::kCount, 0.0);
  for (std::size_t j = 0; j < f.free.size(); ++j) {
    const int p = f.free[j];
    const double e = se[static_cast<long>(j)];
    result.uncertainty[static_cast<std::size_t>(p)] = fit.is_fraction(p) ? e * (1 - result.after.at(p) / f.upper.at(p)) : e;
    result.fitted.push_back(name_of(p));
    const double v = result.after.at(p);
    const bool latency = p == 0 || p == 2;
    if ((latency && v > kMaxLatencyUs) || (!latency && p < kEfficiencyFirst && v < kMinRateGbps))
      throw Error("calibrate: the fit puts " + name_of(p) + " at " + std::to_string(v) +
                  ", outside any machine: these rows do not fit the model (nothing written)");
    if (at_bound(f, p)) result.bounded.push_back(bounded_reason(p, f.upper.at(p)));
  }
}

// Every modelled row, with its residual at the fitted values, and the error summaries.
void record_rows(const Predictor& predictor, const std::vector<FitRow>& rows, CalibrationResult& result) {
  std::vector<double> fit_abs, held_abs;
  for (const FitRow& row : rows) {
    RowFit out;
    out.nccl = predictor.nccl_pick(*row.m);
    out.source = row.m->source;
    out.model = row.model;
    out.bytes = row.m->bytes;
    out.measured_us = row.m->time_us;
    out.predicted_us = predictor.time_us(*row.m, result.after);
    out.rel_error = out.predicted_us / out.measured_us - 1;
    out.flag = row.flag;
    if (row.in_fit) fit_abs.push_back(std::abs(out.rel_error));
    if (row.flag == "held out") held_abs.push_back(std::abs(out.rel_error));
    result.rows.push_back(std::move(out));
  }
  const ErrorSummary fitted = summarize_errors(fit_abs);
  result.median_abs_error = fitted.median_abs;
  result.max_abs_error = fitted.max_abs;
  if (!held_abs.empty()) {
    const ErrorSummary held_out = summarize_errors(held_abs);
    result.holdout_median_abs_error = held_out.median_abs;
    result.holdout_max_abs_error = held_out.max_abs;
  }
}

}  // namespace

CalibrationResult calibrate(const topo::Topology& topology, const MeasurementSet& measurements,
                            const CalibrateOptions& options) {
  for (const auto& name : options.hold) calibration_parameter_index(name);  // unknown names first
  CalibrationResult result;
  result.nranks = topology.num_ranks();
  result.skipped = measurements.skipped;
  result.unread_nccl_env = measurements.unread_nccl_env;
  check_rank_count(topology, measurements);
  const Predictor predictor(topology, topology.num_ranks());
  result.before = priced_values_of(topology, topology.num_ranks());
  const CalibValues upper = upper_bounds(topology, topology.num_ranks());
  // Where the topology states no reduction rate (0: reductions cost nothing), the fit starts
  // from the intra-host bandwidth; `before` keeps reporting what the topology says.
  CalibValues start = result.before;
  if (!(start.reduce_gbps > 0)) start.reduce_gbps = start.intra_gbps;

  std::vector<FitRow> rows = modelled_rows(predictor, measurements, result);
  flag_warmup_rows(rows);
  flag_spike_rows(rows);
  if (options.holdout_half) hold_out_half(rows);
  std::vector<const FitRow*> fit_rows;
  for (const FitRow& r : rows)
    if (r.in_fit) fit_rows.push_back(&r);
  if (fit_rows.empty()) throw Error("calibrate: every modelled row was left out (warm-up and spike rows)");

  const std::vector<int> candidates = candidate_parameters(predictor, fit_rows, options, result);
  Fitting f{predictor, upper, result.before, fit_rows, {}, start, {}};
  f.free = free_parameters(Fit(predictor, fit_rows, start, candidates, upper), candidates, result);
  check_sizes(fit_rows, f.free);
  const Fitting first = f;
  const std::size_t lines_before_fit = result.held.size();
  fit_separable(f, result);
  prefer_the_firmer_held(f, first, result, lines_before_fit);
  refit_without_outliers(f, rows);
  record_values(f, result);
  record_rows(predictor, rows, result);
  if (measurements.fusion_copy_us > 0)
    result.fusion_copy_gbps = measurements.fusion_copy_bytes / measurements.fusion_copy_us / 1e3;
  return result;
}

}  // namespace colltune::tuner
