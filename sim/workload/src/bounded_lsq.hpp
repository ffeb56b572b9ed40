#pragma once
// Internal: least squares with lower bounds, for the compute fit (compute_fit.cpp).
#include <Eigen/Dense>

namespace colltune::sim::detail {

// The x that minimises |A x - b| with x >= lower (elementwise): Lawson and Hanson's active-set
// NNLS ("Solving Least Squares Problems", 1974, ch. 23) on z = x - lower >= 0. Deterministic:
// the same inputs give the same x on the same build.
Eigen::VectorXd bounded_least_squares(const Eigen::MatrixXd& A, const Eigen::VectorXd& b,
                                      const Eigen::VectorXd& lower);

}  // namespace colltune::sim::detail
