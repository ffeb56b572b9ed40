#pragma once
// A Gaussian-process surrogate for Bayesian optimisation.
//
// Kernel: Matern 5/2 over Euclidean distance r of feature vectors (features in [0,1]),
//   k(r) = s2 (1 + sqrt5 r/l + 5 r^2 / (3 l^2)) exp(-sqrt5 r/l),
// on standardised targets (so the signal variance s2 is 1), plus noise variance on the diagonal.
// Hyperparameters (lengthscale l, noise) are chosen by maximising the log marginal likelihood
//   log p(y|X) = -1/2 y^T K^-1 y - sum log diag(L) - n/2 log(2 pi),  K = L L^T (Cholesky, Eigen LLT)
// over a small grid. Prediction: mean = k*^T K^-1 y, var = k(0) - k*^T K^-1 k*.
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

  double lengthscale() const;
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
