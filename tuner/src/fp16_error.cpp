// fp16 error estimate (model in fp16_error.hpp).
#include "colltune/tuner/fp16_error.hpp"

#include <cmath>

#include "colltune/collectives/algorithms/index_math.hpp"

namespace colltune::tuner {
namespace {

// Depth of a flat algorithm over p ranks: the ring chains p-1 additions, the others are
// logarithmic. "auto" may pick the ring, so it is priced as the ring (conservative).
int flat_depth(std::string_view algorithm, int p) {
  if (p <= 1) return 0;
  if (algorithm == "ring" || algorithm == "auto") return p - 1;
  return coll::algo::ceil_log2(p);
}

}  // namespace

int summation_depth(std::string_view algorithm, bool hierarchical, const RankLayout& layout) {
  if (!hierarchical) return flat_depth(algorithm, layout.nranks());
  return (layout.max_ranks_per_host() - 1) + flat_depth(algorithm, layout.nhosts());
}

Fp16Estimate estimate_fp16_error(std::string_view algorithm, bool hierarchical, const RankLayout& layout,
                                 double max_allowed) {
  Fp16Estimate e;
  e.summation_depth = summation_depth(algorithm, hierarchical, layout);
  const double u = std::ldexp(1.0, -11);
  e.relative_error = u / std::sqrt(3.0) * std::sqrt(1.0 + e.summation_depth);
  e.max_allowed = max_allowed;
  e.accepted = e.relative_error <= max_allowed;
  e.method = "rms relative error = 2^-11/sqrt(3) * sqrt(1 + summation depth), depth " +
             std::to_string(e.summation_depth);
  return e;
}

}  // namespace colltune::tuner
