#pragma once
// How much accuracy fp16 compression costs: the predicted relative error of an allreduced
// gradient element when the allreduce runs in fp16 (Horovod's Compression.fp16: cast to fp16,
// allreduce, cast back).
//
// Model: fp16 has unit roundoff u = 2^-11. Rounding to nearest leaves a relative error roughly
// uniform in [-u, u], rms u/sqrt(3). An element passes through one rounding when cast, and one
// per fp16 addition along the longest chain of partial sums (the summation depth d): p-1 for a
// ring (the partial sum travels around all ranks), ceil(lg p) for trees and halving-doubling,
// (ranks per host - 1) + depth of the cross-host algorithm for hierarchical. Independent
// roundings add in quadrature:  rms relative error = (u / sqrt 3) * sqrt(1 + d).
// It is an estimate for gradients of one sign and similar magnitude; cancellation makes the
// relative error of a near-zero sum larger, and values above 65504 overflow (not modelled).
#include <string>
#include <string_view>

#include <vector>

#include "colltune/common/rank_layout.hpp"
#include "colltune/tuner/algo_table.hpp"

namespace colltune::tuner {

inline constexpr double kDefaultMaxFp16Error = 1e-2;

struct Fp16Estimate {
  double relative_error = 0;  // predicted rms relative error per element
  int summation_depth = 0;    // d in the model above
  double max_allowed = kDefaultMaxFp16Error;
  bool accepted = false;      // relative_error <= max_allowed
  std::string method;         // one line naming the model
};

// Summation depth of a configuration on the layout: the deepest of the algorithms its buffers
// may run, from each registry entry's summation_depth (an "auto" choice may pick any of them).
int summation_depth(const std::vector<AlgoChoice>& algorithms, const RankLayout& layout);

Fp16Estimate estimate_fp16_error(int summation_depth, double max_allowed);

}  // namespace colltune::tuner
