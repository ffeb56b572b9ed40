// fp16 error estimate (model in fp16_error.hpp).
#include "colltune/tuner/fp16_error.hpp"

#include <algorithm>
#include <cmath>

#include "colltune/collectives/registry.hpp"

namespace colltune::tuner {

int summation_depth(const std::vector<AlgoChoice>& algorithms, const RankLayout& layout) {
  if (layout.nranks() <= 1) return 0;
  int depth = 0;
  for (const AlgoChoice& a : algorithms) {
    coll::AlgoOptions options;
    if (!a.inner.empty()) options.inner = a.inner;
    const coll::Algorithm& algo = coll::find_algorithm(a.algorithm);
    if (algo.not_applicable(layout, 0, options)) continue;  // it never runs here
    depth = std::max(depth, algo.summation_depth(layout, options));
  }
  return depth;
}

Fp16Estimate estimate_fp16_error(int summation_depth, double max_allowed) {
  Fp16Estimate e;
  e.summation_depth = summation_depth;
  const double u = std::ldexp(1.0, -11);
  e.relative_error = u / std::sqrt(3.0) * std::sqrt(1.0 + e.summation_depth);
  e.max_allowed = max_allowed;
  e.accepted = e.relative_error <= max_allowed;
  e.method = "rms relative error = 2^-11/sqrt(3) * sqrt(1 + summation depth), depth " +
             std::to_string(e.summation_depth);
  return e;
}

}  // namespace colltune::tuner
