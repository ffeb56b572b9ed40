#pragma once
// Elementwise reduction kernels for every dtype x op: inout[i] = inout[i] op in[i].
// avg reduces as sum; dividing by the rank count is the caller's post-scale.
#include <cstddef>

#include "colltune/collectives/dtype.hpp"

namespace colltune::coll {

void reduce(DType dtype, ReduceOp op, void* inout, const void* in, std::size_t count);

// inout[i] *= factor (integers: truncating division when factor = 1/p for avg).
void scale(DType dtype, void* inout, std::size_t count, double factor);

}  // namespace colltune::coll
