// Gaussian process regression with an ARD Matern 5/2 kernel (see gp.hpp for the formulas).
#include "colltune/tuner/gp.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <numbers>

#include "colltune/common/error.hpp"

namespace colltune::tuner {
namespace {

constexpr double kLengths[] = {0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.5, 1e3};
constexpr double kNoises[] = {1e-6, 1e-4, 1e-2, 1e-1};
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double matern52(double r) {
  const double s = std::sqrt(5.0) * r;
  return (1.0 + s + s * s / 3.0) * std::exp(-s);
}

}  // namespace

struct GaussianProcess::Impl {
  Eigen::MatrixXd x;       // n x d
  Eigen::VectorXd inv_l;   // 1 / lengthscale per feature
  Eigen::VectorXd alpha;   // K^-1 z
  Eigen::LLT<Eigen::MatrixXd> llt;
  double y_mean = 0;
  double y_scale = 1;
  double noise = 1e-6;
  double lml = kNegInf;

  double k(const Eigen::RowVectorXd& a, const Eigen::RowVectorXd& b, const Eigen::VectorXd& il) const {
    return matern52((a - b).transpose().cwiseProduct(il).norm());
  }

  // Log marginal likelihood of standardised targets z; -inf if K is not positive definite.
  double evaluate(const Eigen::VectorXd& z, const Eigen::VectorXd& il, double nz,
                  Eigen::LLT<Eigen::MatrixXd>& out) const {
    const auto n = x.rows();
    Eigen::MatrixXd km(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j <= i; ++j) km(i, j) = km(j, i) = k(x.row(i), x.row(j), il);
    km.diagonal().array() += nz;
    out.compute(km);
    if (out.info() != Eigen::Success) return kNegInf;
    const Eigen::VectorXd a = out.solve(z);
    const double log_det_half = out.matrixLLT().diagonal().array().log().sum();
    return -0.5 * z.dot(a) - log_det_half - 0.5 * static_cast<double>(n) * std::log(2.0 * std::numbers::pi);
  }

  // Step 1 of gp.hpp: shared lengthscale and noise.
  void fit_isotropic(const Eigen::VectorXd& z, Eigen::LLT<Eigen::MatrixXd>& trial) {
    lml = kNegInf;
    for (double l : kLengths)
      for (double nz : kNoises) {
        const Eigen::VectorXd il = Eigen::VectorXd::Constant(x.cols(), 1.0 / l);
        const double v = evaluate(z, il, nz, trial);
        if (v > lml) lml = v, inv_l = il, noise = nz;
      }
  }

  // Step 2: coordinate ascent on each feature's lengthscale.
  void fit_per_feature(const Eigen::VectorXd& z, Eigen::LLT<Eigen::MatrixXd>& trial) {
    for (int sweep = 0; sweep < 2; ++sweep)
      for (Eigen::Index d = 0; d < x.cols(); ++d) {
        Eigen::VectorXd il = inv_l;
        for (double l : kLengths) {
          il(d) = 1.0 / l;
          const double v = evaluate(z, il, noise, trial);
          if (v > lml) lml = v, inv_l(d) = il(d);
        }
      }
  }
};

GaussianProcess::GaussianProcess() : impl_(std::make_unique<Impl>()) {}
GaussianProcess::~GaussianProcess() = default;
GaussianProcess::GaussianProcess(GaussianProcess&&) noexcept = default;
GaussianProcess& GaussianProcess::operator=(GaussianProcess&&) noexcept = default;

void GaussianProcess::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
  if (x.empty() || x.size() != y.size()) throw Error("GaussianProcess::fit: need as many targets as points (>0)");
  const auto n = static_cast<Eigen::Index>(x.size());
  const auto d = static_cast<Eigen::Index>(x.front().size());
  Eigen::MatrixXd points(n, d);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& row = x[static_cast<std::size_t>(i)];
    if (static_cast<Eigen::Index>(row.size()) != d)
      throw Error("GaussianProcess::fit: point " + std::to_string(i) + " has a different dimension");
    for (Eigen::Index j = 0; j < d; ++j) points(i, j) = row[static_cast<std::size_t>(j)];
  }
  impl_->x = std::move(points);
  const Eigen::VectorXd yv = Eigen::Map<const Eigen::VectorXd>(y.data(), n);
  impl_->y_mean = yv.mean();
  const double var = (yv.array() - impl_->y_mean).square().mean();
  impl_->y_scale = var > 1e-300 ? std::sqrt(var) : 1.0;
  const Eigen::VectorXd z = (yv.array() - impl_->y_mean) / impl_->y_scale;
  Eigen::LLT<Eigen::MatrixXd> trial;
  impl_->fit_isotropic(z, trial);
  impl_->fit_per_feature(z, trial);
  if (impl_->evaluate(z, impl_->inv_l, impl_->noise, impl_->llt) == kNegInf) {
    impl_->x.resize(0, 0);
    throw Error("GaussianProcess::fit: kernel matrix is not positive definite");
  }
  impl_->alpha = impl_->llt.solve(z);
}

GaussianProcess::Prediction GaussianProcess::predict(const std::vector<double>& x) const {
  const auto n = impl_->x.rows();
  if (n == 0) throw Error("GaussianProcess::predict: fit() first");
  if (static_cast<Eigen::Index>(x.size()) != impl_->x.cols()) throw Error("GaussianProcess::predict: wrong dimension");
  const Eigen::RowVectorXd p = Eigen::Map<const Eigen::RowVectorXd>(x.data(), impl_->x.cols());
  Eigen::VectorXd kv(n);
  for (Eigen::Index i = 0; i < n; ++i) kv(i) = impl_->k(p, impl_->x.row(i), impl_->inv_l);
  const double mean_z = kv.dot(impl_->alpha);
  const Eigen::VectorXd v = impl_->llt.matrixL().solve(kv);
  const double var_z = std::max(1.0 - v.squaredNorm(), 1e-12);
  return {impl_->y_mean + impl_->y_scale * mean_z, impl_->y_scale * std::sqrt(var_z)};
}

std::vector<double> GaussianProcess::lengthscales() const {
  std::vector<double> out;
  for (Eigen::Index d = 0; d < impl_->inv_l.size(); ++d) out.push_back(1.0 / impl_->inv_l(d));
  return out;
}
double GaussianProcess::noise() const { return impl_->noise; }
double GaussianProcess::log_marginal_likelihood() const { return impl_->lml; }

double expected_improvement(double mean, double sd, double best) {
  if (sd <= 0) return std::max(best - mean, 0.0);
  const double z = (best - mean) / sd;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi);
  return (best - mean) * cdf + sd * pdf;
}

}  // namespace colltune::tuner
