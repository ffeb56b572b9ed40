// Lawson-Hanson NNLS with lower bounds (bounded_lsq.hpp).
//
// Steps: start with every variable at its bound (z = 0, all "active"). Repeatedly free the
// active variable whose gradient most wants it to grow; solve the unconstrained least squares
// on the free ones; if that leaves a free variable below its bound, step from the previous
// point toward the new one only as far as the first bound and fix the variables that reach it,
// then solve again. Stop when no active variable wants to grow.
#include "bounded_lsq.hpp"

#include <limits>
#include <vector>

namespace colltune::sim::detail {
namespace {

// Least squares on the columns where `free_` is set; zero elsewhere.
Eigen::VectorXd solve_free(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, const std::vector<bool>& free_) {
  std::vector<Eigen::Index> cols;
  for (Eigen::Index j = 0; j < A.cols(); ++j)
    if (free_[static_cast<std::size_t>(j)]) cols.push_back(j);
  Eigen::MatrixXd sub(A.rows(), static_cast<Eigen::Index>(cols.size()));
  for (std::size_t k = 0; k < cols.size(); ++k) sub.col(static_cast<Eigen::Index>(k)) = A.col(cols[k]);
  const Eigen::VectorXd s = sub.colPivHouseholderQr().solve(b);
  Eigen::VectorXd out = Eigen::VectorXd::Zero(A.cols());
  for (std::size_t k = 0; k < cols.size(); ++k) out(cols[k]) = s(static_cast<Eigen::Index>(k));
  return out;
}

}  // namespace

Eigen::VectorXd bounded_least_squares(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, const Eigen::VectorXd& lower) {
  const Eigen::Index n = A.cols();
  const Eigen::VectorXd target = b - A * lower;
  Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
  std::vector<bool> free_(static_cast<std::size_t>(n), false);
  const double tol = 1e-12 * (A.norm() + 1) * (target.norm() + 1);
  for (Eigen::Index iteration = 0; iteration < 3 * n + 10; ++iteration) {
    const Eigen::VectorXd w = A.transpose() * (target - A * z);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!free_[static_cast<std::size_t>(j)] && w(j) > tol && (best < 0 || w(j) > w(best))) best = j;
    if (best < 0) break;
    free_[static_cast<std::size_t>(best)] = true;
    while (true) {
      const Eigen::VectorXd s = solve_free(A, target, free_);
      double alpha = std::numeric_limits<double>::infinity();
      for (Eigen::Index j = 0; j < n; ++j)
        if (free_[static_cast<std::size_t>(j)] && s(j) <= 0) {
          const double gap = z(j) - s(j);
          alpha = std::min(alpha, gap > 0 ? z(j) / gap : 0.0);
        }
      if (alpha == std::numeric_limits<double>::infinity()) {
        z = s;
        break;
      }
      z += alpha * (s - z);
      for (Eigen::Index j = 0; j < n; ++j)
        if (free_[static_cast<std::size_t>(j)] && z(j) <= tol) free_[static_cast<std::size_t>(j)] = false, z(j) = 0;
    }
  }
  return lower + z;
}

}  // namespace colltune::sim::detail
