#pragma once
// A Gaussian-process surrogate for Bayesian optimisation.
//
// Kernel: Matern 5/2 with one lengthscale per feature (automatic relevance determination),
//   r^2 = sum_d ((a_d - b_d) / l_d)^2,   k(r) = (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r),
// on standardised targets (so the signal variance is 1), plus noise variance on the diagonal.
// Hyperparameters maximise the log marginal likelihood
//   log p(y|X) = -1/2 y^T K^-1 y - sum log diag(L) - n/2 log(2 pi),  K = L L^T (Eigen LLT):
//   1. one shared lengthscale and the noise over a small grid;
//   2. two sweeps of coordinate ascent: each feature's lengthscale over the same grid (plus
//      "irrelevant", a very long one), the others held.
// Prediction: mean = k*^T K^-1 y, var = 1 - k*^T K^-1 k*.
#include <memory>
#include <vector>

namespace colltune::tuner {

class GaussianProcess {
 public:
  GaussianProcess();
  ~GaussianProcess();
  GaussianProcess(GaussianProcess&&) noexcept;
  GaussianProcess& operator=(GaussianProcess&&) noexcept;

  // Fits to points x[i] (all the same dimension) with targets y[i]; chooses hyperparameters.
  // Throws colltune::Error on empty or ragged input.
  void fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y);

  struct Prediction {
    double mean = 0;
    double sd = 0;
  };
  // In the units of the targets given to fit().
  Prediction predict(const std::vector<double>& x) const;

  // Per feature, after fit().
  std::vector<double> lengthscales() const;
  double noise() const;
  double log_marginal_likelihood() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Expected improvement of a minimisation at a point with predictive mean/sd over the best
// value seen so far: E[max(best - Y, 0)] = (best - mean) Phi(z) + sd phi(z), z = (best - mean)/sd.
double expected_improvement(double mean, double sd, double best);

}  // namespace colltune::tuner
