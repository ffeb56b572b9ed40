// Gaussian process regression with a Matern 5/2 kernel (see gp.hpp for the formulas).
#include "colltune/tuner/gp.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <numbers>

#include "colltune/common/error.hpp"

namespace colltune::tuner {
namespace {

double matern52(double r, double lengthscale) {
  const double s = std::sqrt(5.0) * r / lengthscale;
  return (1.0 + s + s * s / 3.0) * std::exp(-s);
}

double distance(const Eigen::RowVectorXd& a, const Eigen::RowVectorXd& b) { return (a - b).norm(); }

}  // namespace

struct GaussianProcess::Impl {
  Eigen::MatrixXd x;          // n x d
  Eigen::VectorXd alpha;      // K^-1 (y - mean) / scale
  Eigen::LLT<Eigen::MatrixXd> llt;
  double y_mean = 0;
  double y_scale = 1;
  double lengthscale = 0.3;
  double noise = 1e-6;
  double lml = -std::numeric_limits<double>::infinity();

  Eigen::MatrixXd kernel_matrix(double l, double nz) const {
    const auto n = x.rows();
    Eigen::MatrixXd k(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j <= i; ++j) k(i, j) = k(j, i) = matern52(distance(x.row(i), x.row(j)), l);
    k.diagonal().array() += nz;
    return k;
  }

  // Log marginal likelihood of standardised targets z under (l, nz); -inf if K is not SPD.
  double evaluate(const Eigen::VectorXd& z, double l, double nz, Eigen::LLT<Eigen::MatrixXd>& out) const {
    out.compute(kernel_matrix(l, nz));
    if (out.info() != Eigen::Success) return -std::numeric_limits<double>::infinity();
    const Eigen::VectorXd a = out.solve(z);
    const Eigen::MatrixXd& lower = out.matrixLLT();
    double log_det_half = lower.diagonal().array().log().sum();
    return -0.5 * z.dot(a) - log_det_half - 0.5 * static_cast<double>(z.size()) * std::log(2.0 * std::numbers::pi);
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
  impl_->x.resize(n, d);
  for (Eigen::Index i = 0; i < n; ++i) {
    if (static_cast<Eigen::Index>(x[static_cast<std::size_t>(i)].size()) != d)
      throw Error("GaussianProcess::fit: point " + std::to_string(i) + " has a different dimension");
    for (Eigen::Index j = 0; j < d; ++j) impl_->x(i, j) = x[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
  }
  Eigen::VectorXd yv = Eigen::Map<const Eigen::VectorXd>(y.data(), n);
  impl_->y_mean = yv.mean();
  const double var = (yv.array() - impl_->y_mean).square().mean();
  impl_->y_scale = var > 1e-300 ? std::sqrt(var) : 1.0;
  const Eigen::VectorXd z = (yv.array() - impl_->y_mean) / impl_->y_scale;

  // Hyperparameters: the grid point with the largest marginal likelihood.
  static constexpr double kLengths[] = {0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.5};
  static constexpr double kNoises[] = {1e-6, 1e-4, 1e-2, 1e-1};
  Eigen::LLT<Eigen::MatrixXd> trial;
  impl_->lml = -std::numeric_limits<double>::infinity();
  for (double l : kLengths)
    for (double nz : kNoises) {
      double lml = impl_->evaluate(z, l, nz, trial);
      if (lml > impl_->lml) {
        impl_->lml = lml;
        impl_->lengthscale = l;
        impl_->noise = nz;
      }
    }
  impl_->evaluate(z, impl_->lengthscale, impl_->noise, impl_->llt);
  if (impl_->llt.info() != Eigen::Success) throw Error("GaussianProcess::fit: kernel matrix is not positive definite");
  impl_->alpha = impl_->llt.solve(z);
}

GaussianProcess::Prediction GaussianProcess::predict(const std::vector<double>& x) const {
  const auto n = impl_->x.rows();
  if (n == 0) throw Error("GaussianProcess::predict: fit() first");
  if (static_cast<Eigen::Index>(x.size()) != impl_->x.cols()) throw Error("GaussianProcess::predict: wrong dimension");
  Eigen::RowVectorXd p = Eigen::Map<const Eigen::RowVectorXd>(x.data(), impl_->x.cols());
  Eigen::VectorXd k(n);
  for (Eigen::Index i = 0; i < n; ++i) k(i) = matern52(distance(p, impl_->x.row(i)), impl_->lengthscale);
  const double mean_z = k.dot(impl_->alpha);
  const Eigen::VectorXd v = impl_->llt.matrixL().solve(k);
  const double var_z = std::max(1.0 - v.squaredNorm(), 1e-12);
  return {impl_->y_mean + impl_->y_scale * mean_z, impl_->y_scale * std::sqrt(var_z)};
}

double GaussianProcess::lengthscale() const { return impl_->lengthscale; }
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
