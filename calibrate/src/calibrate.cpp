// Calibration (calibrate.hpp): the row predictor, the robust fit, and the calibrated topology.
#include "colltune/calibrate/calibrate.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <tuple>

#include "colltune/common/error.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/nccl_model.hpp"

namespace colltune::tuner {
namespace {

constexpr double kHuberK = 1.345;        // Huber's constant: 95% efficiency on normal residuals
constexpr double kOutlierSigmas = 3.0;   // residuals beyond this many robust sigmas are reported
constexpr double kWarmupRatio = 1.5;     // a row this much slower than the next larger size
constexpr double kMinLatencyUs = 1e-4;   // log-space floor: latencies are never exactly 0
constexpr double kSeparableRatio = 1e-3; // smallest/largest singular value below this: degenerate
constexpr double kMaxRelativeError = 1.0;  // a fitted value known only to +-100% is no fit

double gbps_of(double us_per_byte) { return us_per_byte > 0 ? 1e-3 / us_per_byte : 0.0; }
double us_per_byte_of(double gbps) { return gbps > 0 ? 1e-3 / gbps : 0.0; }

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

void check_rank_count(const topo::Topology& topology, const MeasurementSet& measurements) {
  for (const Measurement& m : measurements.rows)
    if (m.nranks != 0 && m.nranks != topology.num_ranks())
      throw Error(m.source + ": measured on " + std::to_string(m.nranks) + " ranks, the topology '" + topology.name +
                  "' has " + std::to_string(topology.num_ranks()));
}

// ---- parameters -----------------------------------------------------------------------------

double& CalibValues::at(int i) {
  switch (i) {
    case 0: return alpha_intra_us;
    case 1: return intra_gbps;
    case 2: return alpha_inter_us;
    case 3: return inter_gbps;
    case 4: return reduce_gbps;
    case 5: return ll_efficiency;
    case 6: return ll128_efficiency;
  }
  throw Error("calibration parameter index " + std::to_string(i) + " out of range");
}
double CalibValues::at(int i) const { return const_cast<CalibValues&>(*this).at(i); }

const std::vector<std::string>& calibration_parameter_names() {
  static const std::vector<std::string> names{"alpha_intra_us", "intra_gbps",    "alpha_inter_us",  "inter_gbps",
                                              "reduce_gbps",    "ll_efficiency", "ll128_efficiency"};
  return names;
}

int calibration_parameter_index(const std::string& name) {
  const auto& names = calibration_parameter_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    throw Error("unknown calibration parameter '" + name + "' (valid: " + all + ")");
  }
  return static_cast<int>(it - names.begin());
}

namespace {

CalibValues values_of_levels(const coll::LevelCosts& levels) {
  CalibValues v;
  v.alpha_intra_us = levels.alpha_intra_us;
  v.intra_gbps = gbps_of(levels.beta_intra_us_per_byte);
  v.alpha_inter_us = levels.alpha_inter_us;
  v.inter_gbps = gbps_of(levels.beta_inter_us_per_byte);
  v.reduce_gbps = gbps_of(levels.gamma_us_per_byte);
  return v;
}

// The base levels with `values` in place: the host-NIC sharing term keeps its ratio to the
// inter-host bandwidth, and a protocol's efficiency divides every bandwidth the wire carries.
coll::LevelCosts levels_with(const coll::LevelCosts& base, const CalibValues& v, double efficiency) {
  coll::LevelCosts l = base;
  l.alpha_intra_us = v.alpha_intra_us;
  l.beta_intra_us_per_byte = us_per_byte_of(v.intra_gbps) / efficiency;
  l.alpha_inter_us = v.alpha_inter_us;
  l.beta_inter_us_per_byte = us_per_byte_of(v.inter_gbps) / efficiency;
  if (base.beta_inter_us_per_byte > 0)
    l.beta_host_us_per_byte = base.beta_host_us_per_byte * (l.beta_inter_us_per_byte / base.beta_inter_us_per_byte);
  l.gamma_us_per_byte = us_per_byte_of(v.reduce_gbps);
  return l;
}

}  // namespace

CalibValues values_of(const topo::Topology& topology, int nranks) {
  CalibValues v = values_of_levels(sim::derive_level_costs(topology, nranks));
  // The protocol efficiencies a calibration fitted live in its "calibration" object only.
  if (topology.calibration.empty()) return v;
  const auto j = nlohmann::json::parse(topology.calibration, nullptr, false);
  const auto values = j.is_object() ? j.find("values") : j.end();
  if (!j.is_object() || values == j.end() || !values->is_object()) return v;
  for (const char* key : {"ll_efficiency", "ll128_efficiency"}) {
    const auto it = values->find(key);
    if (it == values->end()) continue;
    if (!it->is_number() || !(it->get<double>() > 0 && it->get<double>() <= 1))
      throw Error(topology.name + ": calibration.values." + key + ": expected a number in (0, 1], got " + it->dump());
    v.at(calibration_parameter_index(key)) = it->get<double>();
  }
  return v;
}

// ---- the predictor --------------------------------------------------------------------------

namespace {

// The colltune schedule of one of NCCL's algorithms for a collective; empty where there is none.
std::string schedule_of_nccl(coll::Collective collective, sim::NcclAlgo algo) {
  if (algo == sim::NcclAlgo::ring) {
    switch (collective) {
      case coll::Collective::allreduce: return "nccl_ring";
      case coll::Collective::reduce_scatter: return "reduce_scatter_ring";
      case coll::Collective::allgather: return "allgather_ring";
    }
  }
  if (algo == sim::NcclAlgo::tree && collective == coll::Collective::allreduce) return "dbtree";
  return "";
}

sim::NcclColl nccl_coll_of(coll::Collective c) {
  switch (c) {
    case coll::Collective::allreduce: return sim::NcclColl::allreduce;
    case coll::Collective::reduce_scatter: return sim::NcclColl::reduce_scatter;
    case coll::Collective::allgather: return sim::NcclColl::allgather;
  }
  return sim::NcclColl::allreduce;
}

// A single algorithm or protocol name (not a list, an exclusion or a per-collective setting).
bool is_single_name(const std::string& s) { return !s.empty() && s.find_first_of(",^:;") == std::string::npos; }

}  // namespace

struct Predictor::Impl {
  // The schedule and protocol that ran a row: NCCL_ALGO/NCCL_PROTO where they name one,
  // otherwise NCCL's choice for the size.
  struct Resolved {
    std::string algorithm;                // registry id
    std::optional<sim::NcclProto> proto;  // NCCL rows
  };
  const topo::Topology& topology;
  int nranks;
  sim::CostModel model;
  // NCCL's model per (NCCL_ALGO, NCCL_PROTO) setting, built on first use; a null entry records
  // that NCCL's model does not describe this machine (its message in nccl_error).
  mutable std::map<std::pair<std::string, std::string>, std::unique_ptr<sim::NcclModel>> nccl;
  mutable std::map<std::pair<std::string, std::string>, std::string> nccl_error;

  Impl(const topo::Topology& t, int n) : topology(t), nranks(n), model(t, n) {}

  // What runs a row depends on the row only (NCCL's choice on the uncalibrated machine), not on
  // the parameters: resolved once per row, since the fit prices every row thousands of times.
  // Keyed by what decides it: runtime, collective, algorithm and protocol settings, size, element.
  struct Cached {
    std::optional<Resolved> resolved;
    std::string why;
    const coll::Algorithm* algorithm = nullptr;
    coll::AlgoOptions options;
  };
  using Key = std::tuple<int, int, std::string, std::string, std::size_t, std::size_t, std::size_t>;
  mutable std::map<Key, Cached> cache;
  const Cached& cached(const Measurement& row) const {
    const Key key{static_cast<int>(row.runtime), static_cast<int>(row.collective), row.algorithm, row.protocol,
                  row.bytes, row.elem_size, row.chunk_elems};
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    Cached c;
    c.resolved = resolve(row, &c.why);
    if (c.resolved) {
      c.algorithm = &coll::find_algorithm(c.resolved->algorithm);
      coll::AlgoOptions options;
      if (row.chunk_elems > 0) options.chunk_elems = row.chunk_elems;
      c.options = model.options_for(*c.algorithm, options);
    }
    return cache.emplace(key, std::move(c)).first->second;
  }

  const sim::NcclModel* nccl_model(const Measurement& row, std::string* why) const {
    const auto key = std::make_pair(row.algorithm, row.protocol);
    auto it = nccl.find(key);
    if (it == nccl.end()) {
      sim::NcclOptions options;
      options.nranks = nranks;
      options.algo_env = row.algorithm;
      options.proto_env = row.protocol;
      try {
        it = nccl.emplace(key, std::make_unique<sim::NcclModel>(topology, options)).first;
      } catch (const Error& e) {
        nccl_error[key] = e.what();
        it = nccl.emplace(key, nullptr).first;
      }
    }
    if (!it->second && why) *why = "NCCL's model does not describe this machine (" + nccl_error[key] + ")";
    return it->second.get();
  }

  std::optional<Resolved> resolve(const Measurement& row, std::string* why) const {
    if (row.runtime == MeasuredRuntime::colltune) {
      const coll::Algorithm* a = registered(row.algorithm);
      if (!a) {
        if (why) *why = row.algorithm == "mpi" ? "MPI_Allreduce: colltune does not model which algorithm MPI runs"
                                               : "'" + row.algorithm + "' is not a colltune algorithm";
        return std::nullopt;
      }
      if (a->collective != row.collective) {
        if (why) *why = row.algorithm + " is a " + std::string(coll::to_string(a->collective)) + ", the row a " +
                        std::string(coll::to_string(row.collective));
        return std::nullopt;
      }
      if (!applies(*a, row, why)) return std::nullopt;
      return Resolved{row.algorithm, std::nullopt};
    }
    std::optional<sim::NcclAlgo> algo;
    std::optional<sim::NcclProto> proto;
    if (is_single_name(row.algorithm)) algo = sim::parse_nccl_algo(row.algorithm);
    if (is_single_name(row.protocol)) proto = sim::parse_nccl_proto(row.protocol);
    if (!algo || !proto) {
      const sim::NcclModel* m = nccl_model(row, why);
      if (!m) return std::nullopt;
      const sim::NcclChoice choice = m->choose(nccl_coll_of(row.collective), row.bytes);
      if (!algo) algo = choice.algo;
      if (!proto) proto = choice.proto;
    }
    const std::string id = schedule_of_nccl(row.collective, *algo);
    if (id.empty()) {
      if (why) *why = "NCCL's " + std::string(sim::to_string(*algo)) + " " +
                      std::string(coll::to_string(row.collective)) + ": no colltune schedule models it yet";
      return std::nullopt;
    }
    if (!applies(*registered(id), row, why)) return std::nullopt;
    return Resolved{id, proto};
  }

  static const coll::Algorithm* registered(const std::string& id) {
    for (const coll::Algorithm& a : coll::algorithms())
      if (a.id == id) return &a;
    return nullptr;
  }
  bool applies(const coll::Algorithm& a, const Measurement& row, std::string* why) const {
    try {
      const std::size_t elem = row.elem_size == 0 ? 1 : row.elem_size;
      coll::applicable_algorithm(a.id, model.layout, row.bytes / elem, model.options_for(a, {}));
      return true;
    } catch (const Error& e) {
      if (why) *why = e.what();
      return false;
    }
  }
};

Predictor::Predictor(const topo::Topology& topology, int nranks) : impl_(std::make_unique<Impl>(topology, nranks)) {}
Predictor::~Predictor() = default;

std::optional<std::string> Predictor::model_of(const Measurement& row, std::string* why) const {
  const auto& c = impl_->cached(row);
  if (!c.resolved) {
    if (why) *why = c.why;
    return std::nullopt;
  }
  const auto& r = *c.resolved;
  return r.proto ? r.algorithm + "+" + std::string(sim::to_string(*r.proto)) : r.algorithm;
}

std::vector<bool> Predictor::touches(const Measurement& row) const {
  std::vector<bool> t(CalibValues::kCount, true);
  const auto& r = impl_->cached(row).resolved;
  t[5] = r && r->proto == sim::NcclProto::ll;
  t[6] = r && r->proto == sim::NcclProto::ll128;
  return t;
}

double Predictor::time_us(const Measurement& row, const CalibValues& values) const {
  const auto& c = impl_->cached(row);
  if (!c.resolved) throw Error(row.source + ": no model: " + c.why);
  double efficiency = 1.0;
  if (c.resolved->proto == sim::NcclProto::ll) efficiency = values.ll_efficiency;
  if (c.resolved->proto == sim::NcclProto::ll128) efficiency = values.ll128_efficiency;
  const std::size_t elem = row.elem_size == 0 ? 1 : row.elem_size;
  const std::size_t bytes = row.bytes / elem * elem;
  return sim::hint_or_price(*c.algorithm, impl_->model.layout, bytes, elem, c.options,
                            levels_with(impl_->model.levels, values, efficiency));
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
  Fit(const Predictor& predictor, std::vector<const FitRow*> rows, const CalibValues& start, std::vector<int> free)
      : predictor_(predictor), rows_(std::move(rows)), start_(start), free_(std::move(free)) {}

  // Latencies, bandwidths and rates are fitted as logarithms (positive, relative steps);
  // protocol efficiencies as logits (a fraction of the bytes sent, in (0, 1)).
  static bool is_fraction(int parameter) { return parameter >= 5; }
  CalibValues values(const Eigen::VectorXd& x) const {
    CalibValues v = start_;
    for (std::size_t j = 0; j < free_.size(); ++j) {
      // Bounded far outside any machine (1e-9..1e9 us, GB/s), so a wild trial step of the
      // fit prices finite numbers.
      const double xj = std::clamp(x[static_cast<long>(j)], -20.7, 20.7);
      v.at(free_[j]) = is_fraction(free_[j]) ? 1 / (1 + std::exp(-xj)) : std::exp(xj);
    }
    return v;
  }
  Eigen::VectorXd start_x() const {
    Eigen::VectorXd x(static_cast<long>(free_.size()));
    for (std::size_t j = 0; j < free_.size(); ++j) {
      const double v = start_.at(free_[j]);
      if (is_fraction(free_[j])) {
        const double f = std::clamp(v, 1e-6, 1 - 1e-6);
        x[static_cast<long>(j)] = std::log(f / (1 - f));
      } else {
        x[static_cast<long>(j)] = std::log(std::max(v, kMinLatencyUs));
      }
    }
    return x;
  }
  Eigen::VectorXd residuals(const Eigen::VectorXd& x) const {
    const CalibValues v = values(x);
    Eigen::VectorXd r(static_cast<long>(rows_.size()));
    for (std::size_t i = 0; i < rows_.size(); ++i)
      r[static_cast<long>(i)] = std::log(predictor_.time_us(*rows_[i]->m, v) / rows_[i]->m->time_us);
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
// moves the rows less first: {index into free of the one to hold, index of the other}.
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

// Standard errors of the fitted coordinates (log or logit), from the Huber-weighted
// Gauss-Newton covariance sigma^2 (J' W J)^-1.
Eigen::VectorXd log_standard_errors(const FitState& st) {
  const Eigen::VectorXd w = huber_weights(st.r, st.sigma);
  const Eigen::MatrixXd cov = (st.J.transpose() * w.asDiagonal() * st.J).inverse() * st.sigma * st.sigma;
  return cov.diagonal().cwiseMax(0.0).cwiseSqrt();
}

}  // namespace

CalibrationResult calibrate(const topo::Topology& topology, const MeasurementSet& measurements,
                            const CalibrateOptions& options) {
  for (const auto& name : options.hold) calibration_parameter_index(name);  // unknown names first
  CalibrationResult result;
  result.nranks = topology.num_ranks();
  result.skipped = measurements.skipped;
  check_rank_count(topology, measurements);
  const Predictor predictor(topology, topology.num_ranks());
  result.before = values_of(topology, topology.num_ranks());
  // Where the topology states no reduction rate (0: reductions cost nothing), the fit starts
  // from the intra-host bandwidth; `before` keeps reporting what the topology says.
  CalibValues start = result.before;
  if (!(start.reduce_gbps > 0)) start.reduce_gbps = start.intra_gbps;

  std::vector<FitRow> rows;
  for (const Measurement& m : measurements.rows) {
    std::string why;
    if (auto model = predictor.model_of(m, &why)) rows.push_back({&m, *model, true, ""});
    else result.not_modelled.push_back(m.source + ": " + why);
  }
  if (rows.empty()) throw Error("calibrate: no measured row has a colltune model (" + result.not_modelled.front() + ")");
  flag_warmup_rows(rows);
  if (options.holdout_half) hold_out_half(rows);
  std::vector<const FitRow*> fit_rows;
  for (const FitRow& r : rows)
    if (r.in_fit) fit_rows.push_back(&r);
  if (fit_rows.empty()) throw Error("calibrate: every modelled row was left out (warm-up rows)");

  // Free parameters: those some fitted row depends on, minus --hold.
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
    const std::string& name = calibration_parameter_names()[static_cast<std::size_t>(j)];
    if (!touched[static_cast<std::size_t>(j)]) {
      if (j >= 5) result.held.push_back(name + ": no row ran that protocol");
      else result.held.push_back(name + ": no measured row depends on it");
    } else if (j >= 5 && !full_efficiency_rows) {
      result.held.push_back(name + ": no Simple-protocol rows to measure it against");
    } else {
      candidates.push_back(j);
    }
  }
  // A parameter the rows do not change with (inter-host figures on one host, the reduction
  // rate for allgather) is held and said so.
  const Fit probe(predictor, fit_rows, start, candidates);
  const Eigen::MatrixXd J0 = probe.jacobian(probe.start_x());
  std::vector<int> free;
  for (std::size_t j = 0; j < candidates.size(); ++j) {
    if (J0.col(static_cast<long>(j)).cwiseAbs().maxCoeff() > 1e-6) free.push_back(candidates[j]);
    else result.held.push_back(calibration_parameter_names()[static_cast<std::size_t>(candidates[j])] +
                               ": no measured row depends on it");
  }
  if (free.empty()) throw Error("calibrate: no parameter left to fit (every one held or untouched by the rows)");
  check_sizes(fit_rows, free);

  // Fit; where the rows cannot separate two parameters, hold the one they move less at the
  // topology's value, say so, and fit the rest again.
  const auto& names = calibration_parameter_names();
  // Each refit starts where the previous one ended (a held parameter back at the topology's
  // value): the pricing of every row is the cost of an iteration.
  FitState state;
  for (;;) {
    const Fit fit(predictor, fit_rows, start, free);
    state = run_fit(fit);
    start = fit.values(state.x);
    const auto hold = [&](std::size_t k) {
      start.at(free[k]) = result.before.at(free[k]);
      free.erase(free.begin() + static_cast<long>(k));
    };
    if (const auto pair = inseparable_pair(state.J)) {
      const std::string held_name = names[static_cast<std::size_t>(free[pair->first])];
      const std::string other = names[static_cast<std::size_t>(free[pair->second])];
      result.held.push_back(held_name + ": these rows (" + describe_sizes(fit_rows) + ") " +
                            (pair->first == pair->second ? std::string("do not depend on it at the fitted values")
                                                         : "cannot tell it from " + other) +
                            ", so it stays at the topology's value");
      hold(pair->first);
      continue;
    }
    // Separable, but so weakly that the value is a guess: held as well.
    const Eigen::VectorXd se = log_standard_errors(state);
    long worst = 0;
    se.maxCoeff(&worst);
    if (free.size() < 2 || !(se[worst] > kMaxRelativeError)) break;
    char spread[32];
    std::snprintf(spread, sizeof spread, "%.0f%%", 100 * se[worst]);
    result.held.push_back(names[static_cast<std::size_t>(free[static_cast<std::size_t>(worst)])] + ": these rows (" +
                          describe_sizes(fit_rows) + ") determine it only to +-" + spread +
                          ", so it stays at the topology's value");
    hold(static_cast<std::size_t>(worst));
  }
  // Rows beyond kOutlierSigmas robust standard deviations weighed little already; they are
  // reported as outliers and left out, and the rest fitted once more.
  std::vector<const FitRow*> kept;
  for (std::size_t i = 0; i < fit_rows.size(); ++i) {
    if (std::abs(state.r[static_cast<long>(i)]) <= kOutlierSigmas * state.sigma) {
      kept.push_back(fit_rows[i]);
      continue;
    }
    FitRow& row = rows[static_cast<std::size_t>(fit_rows[i] - rows.data())];
    row.in_fit = false;
    row.flag = "outlier";
  }
  if (kept.size() < fit_rows.size()) {
    fit_rows = kept;
    const Fit refit(predictor, fit_rows, start, free);
    state = run_fit(refit);
    start = refit.values(state.x);
  }
  result.iterations = state.iterations;
  const Fit fit(predictor, fit_rows, start, free);
  result.after = fit.values(state.x);
  // The relative uncertainty of each fitted value: d(value)/value = d(log value); for a
  // logit, d(value)/value = (1 - value) d(logit).
  const Eigen::VectorXd se = log_standard_errors(state);
  result.uncertainty.assign(CalibValues::kCount, 0.0);
  for (std::size_t j = 0; j < free.size(); ++j) {
    const int p = free[j];
    const double e = se[static_cast<long>(j)];
    result.uncertainty[static_cast<std::size_t>(p)] = Fit::is_fraction(p) ? e * (1 - result.after.at(p)) : e;
  }
  for (int j : free) result.fitted.push_back(calibration_parameter_names()[static_cast<std::size_t>(j)]);

  // Every modelled row, with its residual at the fitted values.
  std::vector<double> fit_abs, held_abs;
  for (const FitRow& row : rows) {
    RowFit out;
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
  if (measurements.fusion_copy_us > 0)
    result.fusion_copy_gbps = measurements.fusion_copy_bytes / measurements.fusion_copy_us / 1e3;
  const ErrorSummary fitted = summarize_errors(fit_abs);
  result.median_abs_error = fitted.median_abs;
  result.max_abs_error = fitted.max_abs;
  if (!held_abs.empty()) {
    const ErrorSummary held_out = summarize_errors(held_abs);
    result.holdout_median_abs_error = held_out.median_abs;
    result.holdout_max_abs_error = held_out.max_abs;
  }
  return result;
}

}  // namespace colltune::tuner
