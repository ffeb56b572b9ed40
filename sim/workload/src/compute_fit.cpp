// The fit of achieved fractions to published throughput (compute_fit.hpp says the model).
#include "colltune/sim/compute_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "bounded_lsq.hpp"
#include "colltune/common/error.hpp"
#include "colltune/topology/hardware.hpp"
#include "csv_table.hpp"

namespace colltune::sim {
namespace {

constexpr std::array<std::string_view, 3> kClasses{"fp32", "tf32", "amp"};
constexpr double kSignificant = 4;  // digits the fractions are written and used with

// Microseconds per sample at fraction 1, by kind: 3 x (forward work / rate), forward +
// backward (= 2 x forward), as make_workload times a layer.
struct KindTimes {
  double conv = 0, matmul = 0, memory = 0;
};

Precision precision_of(const PublishedRow& row) { return parse_precision(row.precision); }

KindTimes kind_times(const PublishedRow& row) {
  const topo::GpuSpec& gpu = topo::find_gpu(row.gpu);
  const ProfileOptions o = parse_profile_options(row.model);
  const KindWork w = work_by_kind(model_architecture(row.model.substr(0, row.model.find(':')), o.seq, o.head));
  const Precision p = precision_of(row);
  const double peak = peak_tflops(gpu, p) * 1e6;  // FLOP per us
  return {3 * w.conv_flops / peak, 3 * w.matmul_flops / peak,
          3 * w.memory_elems * static_cast<double>(activation_bytes(p)) / (gpu.memory_gbps * 1e3)};
}

double round_significant(double v) {
  if (v == 0) return 0;
  const double scale = std::pow(10.0, kSignificant - 1 - std::floor(std::log10(std::abs(v))));
  return std::round(v * scale) / scale;
}

// The unknowns of one stage, by name ("a100/amp/conv", "pooled/memory"), with their bounds.
class Unknowns {
 public:
  int add(const std::string& name, double lower) {
    const auto [it, inserted] = index_.emplace(name, static_cast<int>(lower_.size()));
    if (inserted) lower_.push_back(lower);
    return it->second;
  }
  int at(const std::string& name) const { return index_.at(name); }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  int size() const { return static_cast<int>(lower_.size()); }
  Eigen::VectorXd lower() const { return Eigen::Map<const Eigen::VectorXd>(lower_.data(), size()); }

 private:
  std::map<std::string, int> index_;
  std::vector<double> lower_;
};

std::string key(const std::string& owner, std::string_view cls, std::string_view kind) {
  return owner + "/" + std::string(cls) + "/" + std::string(kind);
}

// Declares the unknowns of `owner` (a GPU or "pooled") for every precision class it has.
void add_owner(Unknowns& u, const std::string& owner, bool has_tf32, const FitOptions& o) {
  for (std::string_view cls : kClasses) {
    if (cls == "tf32" && !has_tf32) continue;
    u.add(key(owner, cls, "conv"), 1 / (cls == "fp32" ? o.fp32_conv_max : 1.0));
    u.add(key(owner, cls, "matmul"), 1.0);
    u.add(key(owner, cls, "memory"), 1.0);
  }
}

// One row's equation: sum(times x unknown) / published time = 1.
void add_equation(std::vector<std::vector<std::pair<int, double>>>& eqs, const Unknowns& u, const std::string& owner,
                  const RowResult& r) {
  const KindTimes t = kind_times(r.row);
  const std::string cls(fraction_class(topo::find_gpu(r.row.gpu), precision_of(r.row)));
  const double published_us = 1e6 / r.row.samples_per_s;
  std::vector<std::pair<int, double>> eq;
  if (t.conv > 0) eq.emplace_back(u.at(key(owner, cls, "conv")), t.conv / published_us);
  if (t.matmul > 0) eq.emplace_back(u.at(key(owner, cls, "matmul")), t.matmul / published_us);
  if (t.memory > 0) eq.emplace_back(u.at(key(owner, cls, "memory")), t.memory / published_us);
  eqs.push_back(std::move(eq));
}

// Solves one stage: the rows' equations (target 1) and penalty rows (coefficient, target).
Eigen::VectorXd solve(const Unknowns& u, const std::vector<std::vector<std::pair<int, double>>>& eqs,
                      const std::vector<std::pair<int, double>>& penalties, double weight) {
  const Eigen::Index m = static_cast<Eigen::Index>(eqs.size() + penalties.size());
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(m, u.size());
  Eigen::VectorXd b = Eigen::VectorXd::Zero(m);
  Eigen::Index r = 0;
  for (const auto& eq : eqs) {
    for (const auto& [j, c] : eq) A(r, j) += c;
    b(r++) = 1;
  }
  for (const auto& [j, c] : penalties) {  // sqrt(weight) x (x_j / pooled_j - 1) = 0
    A(r, j) = std::sqrt(weight) * c;
    b(r++) = std::sqrt(weight);
  }
  return detail::bounded_least_squares(A, b, u.lower());
}

AchievedFractions fractions_of(const Eigen::VectorXd& x, const Unknowns& u, const std::string& owner,
                               std::string_view cls) {
  return {round_significant(1 / x(u.at(key(owner, cls, "conv")))),
          round_significant(1 / x(u.at(key(owner, cls, "matmul")))), round_significant(1 / x(u.at(key(owner, cls, "memory")))),
          0};
}

std::vector<RowResult> assign_roles(const std::vector<PublishedRow>& rows, const FitOptions& o) {
  std::vector<RowResult> out;
  int fitted = 0;
  for (const PublishedRow& row : rows) {
    RowResult r{row};
    const bool predictable = !row.model.empty() && !row.gpu.empty() && row.samples_per_s > 0;
    if (row.use == "fit") {
      r.role = FitRole::fit;
      r.held_out = ++fitted % o.hold_out_every == 0;
    } else if (predictable) {
      r.role = FitRole::compared;
    }
    out.push_back(std::move(r));
  }
  return out;
}

// A row's equation belongs to a stage when it is fitted and, in the validation, not held out.
bool in_fit(const RowResult& r, bool validation) { return r.role == FitRole::fit && !(validation && r.held_out); }

ErrorStats stats_of(const std::vector<RowResult>& rows, FitRole role, bool held_out) {
  std::vector<double> errors;
  for (const RowResult& r : rows)
    if (held_out ? r.held_out : r.role == role) errors.push_back(std::abs(held_out ? r.held_out_error() : r.error()));
  ErrorStats s;
  s.rows = static_cast<int>(errors.size());
  if (errors.empty()) return s;
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  s.median = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  s.max = errors.back();
  s.within_15 = static_cast<int>(std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 0.15 + 1e-12; }));
  return s;
}

// Stage 1: the pooled fractions.
std::pair<Unknowns, Eigen::VectorXd> fit_pooled(const std::vector<RowResult>& rows, const FitOptions& o,
                                                bool validation) {
  Unknowns u;
  add_owner(u, "pooled", true, o);
  std::vector<std::vector<std::pair<int, double>>> eqs;
  for (const RowResult& r : rows)
    if (in_fit(r, validation)) add_equation(eqs, u, "pooled", r);
  return {u, solve(u, eqs, {}, 0)};
}

}  // namespace

namespace {

// Stage 2: every GPU's fractions, pulled toward the pooled ones.
std::pair<Unknowns, Eigen::VectorXd> fit_per_gpu(const std::vector<RowResult>& rows, const Unknowns& pu,
                                                 const Eigen::VectorXd& pooled, const FitOptions& o, bool validation) {
  Unknowns u;
  for (const topo::GpuSpec& g : topo::gpu_table()) add_owner(u, g.name, g.peak.tf32 > 0, o);
  std::vector<std::vector<std::pair<int, double>>> eqs;
  for (const RowResult& r : rows)
    if (in_fit(r, validation)) add_equation(eqs, u, r.row.gpu, r);
  std::vector<std::pair<int, double>> penalties;
  for (const topo::GpuSpec& g : topo::gpu_table()) {
    for (std::string_view cls : kClasses) {
      for (std::string_view kind : {"conv", "matmul", "memory"})
        if (u.has(key(g.name, cls, kind)))
          penalties.emplace_back(u.at(key(g.name, cls, kind)), 1 / pooled(pu.at(key("pooled", cls, kind))));
    }
  }
  return {u, solve(u, eqs, penalties, o.shrinkage)};
}

int rows_of(const std::vector<RowResult>& rows, const std::string& gpu, std::string_view cls) {
  int n = 0;
  for (const RowResult& r : rows)
    if (in_fit(r, false) && (gpu == "pooled" || r.row.gpu == gpu) &&
        fraction_class(topo::find_gpu(r.row.gpu), precision_of(r.row)) == cls)
      ++n;
  return n;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string stats_line(std::string_view what, const ErrorStats& s) {
  return std::string(what) + ": " + std::to_string(s.rows) + ", median error " + fixed(100 * s.median, 1) +
         " %, max " + fixed(100 * s.max, 1) + " %, " + std::to_string(s.within_15) + " within 15 %\n";
}

}  // namespace

std::string_view to_string(FitRole role) {
  switch (role) {
    case FitRole::fit: return "fit";
    case FitRole::compared: return "compared";
    case FitRole::unused: return "unused";
  }
  return "?";
}

double predicted_samples_per_s(const PublishedRow& row, const AchievedFractions& f) {
  const KindTimes t = kind_times(row);
  return 1e6 / (t.conv / f.conv + t.matmul / f.matmul + t.memory / f.memory);
}

namespace {

// Both stages on the rows of the validation (held-out rows left out) or of the shipped fit.
std::vector<FractionEntry> fit_stages(const std::vector<RowResult>& rows, const FitOptions& o, bool validation) {
  const auto [pu, pooled] = fit_pooled(rows, o, validation);
  const auto [u, x] = fit_per_gpu(rows, pu, pooled, o, validation);
  std::vector<FractionEntry> out;
  for (std::string_view cls : kClasses)
    out.push_back({"pooled", std::string(cls), fractions_of(pooled, pu, "pooled", cls)});
  for (const topo::GpuSpec& g : topo::gpu_table())
    for (std::string_view cls : kClasses)
      if (u.has(key(g.name, cls, "conv"))) out.push_back({g.name, std::string(cls), fractions_of(x, u, g.name, cls)});
  return out;
}

// A row's prediction with the fractions of its GPU and precision class.
double predict(const RowResult& r, const std::vector<FractionEntry>& fractions) {
  const std::string_view cls = fraction_class(topo::find_gpu(r.row.gpu), precision_of(r.row));
  for (const FractionEntry& e : fractions)
    if (e.gpu == r.row.gpu && e.precision == cls) return predicted_samples_per_s(r.row, e.fractions);
  return 0;
}

}  // namespace

FitResult fit_achieved_fractions(const std::vector<PublishedRow>& rows, const FitOptions& o) {
  if (o.hold_out_every < 2 || !(o.shrinkage > 0) || !(o.fp32_conv_max >= 1))
    throw Error("compute fit: hold_out_every >= 2, shrinkage > 0 and fp32_conv_max >= 1");
  FitResult out;
  out.rows = assign_roles(rows, o);
  const std::vector<FractionEntry> validation = fit_stages(out.rows, o, true);
  out.fractions = fit_stages(out.rows, o, false);
  for (FractionEntry& e : out.fractions) e.fractions.rows = rows_of(out.rows, e.gpu, e.precision);
  for (RowResult& r : out.rows) {
    if (r.role == FitRole::unused) continue;
    r.predicted = predict(r, out.fractions);
    if (r.held_out) r.held_out_predicted = predict(r, validation);
  }
  out.fit = stats_of(out.rows, FitRole::fit, false);
  out.held_out = stats_of(out.rows, FitRole::fit, true);
  out.compared = stats_of(out.rows, FitRole::compared, false);
  return out;
}

std::string fractions_csv(const FitResult& fit) {
  std::string out = "gpu,precision,convolution,matmul,memory,rows\n";
  for (const FractionEntry& e : fit.fractions) {
    char line[256];
    std::snprintf(line, sizeof line, "%s,%s,%.4g,%.4g,%.4g,%d\n", e.gpu.c_str(), e.precision.c_str(),
                  e.fractions.conv, e.fractions.matmul, e.fractions.memory, e.fractions.rows);
    out += line;
  }
  return out;
}

std::string residuals_csv(const FitResult& fit) {
  std::string out = "id,model,gpu,precision,role,held_out,published,predicted,error_percent,held_out_predicted,"
                    "held_out_error_percent\n";
  for (const RowResult& r : fit.rows) {
    if (r.role == FitRole::unused) continue;
    out += std::to_string(r.row.id) + "," + detail::csv_field(r.row.model) + "," + r.row.gpu + "," + r.row.precision +
           "," + std::string(to_string(r.role)) + "," + (r.held_out ? "yes" : "no") + "," + fixed(r.row.samples_per_s, 2) +
           "," + fixed(r.predicted, 2) + "," + fixed(100 * r.error(), 1) + "," +
           (r.held_out ? fixed(r.held_out_predicted, 2) + "," + fixed(100 * r.held_out_error(), 1) : ",") + "\n";
  }
  return out;
}

std::string fit_summary(const FitResult& fit) {
  return stats_line("fitted rows (all of them in the fit)", fit.fit) +
         stats_line("held-out rows (predicted by a fit without them)", fit.held_out) +
         stats_line("compared rows (never fitted)", fit.compared);
}

}  // namespace colltune::sim
