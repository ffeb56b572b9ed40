#pragma once
// Elementwise reduction kernels for every dtype x op: inout[i] = inout[i] op in[i].
// avg reduces as sum; dividing by the rank count is the caller's post-scale.
//
// Semantics per dtype:
// - fp32/fp64: IEEE arithmetic in the type; min/max are defined for NaN-free inputs only
//   (they compile to the SIMD min/max instructions, whose NaN behaviour is operand-order
//   dependent).
// - fp16/bf16: each element is widened to fp32, combined, and rounded back to nearest even.
//   Because fp32 has at least 2p+2 significand bits for both (p = 11 and 8), this is the
//   correctly rounded fp16/bf16 result of sum and prod (no double-rounding error). min/max
//   return one of the two original bit patterns.
// - int32/int64: sum and prod wrap modulo 2^32 / 2^64 (two's complement), never UB.
//
// The per-element definitions are element_math.hpp, shared with the CUDA kernels.
//
// Buffers are arrays of `count` elements of the dtype (fp16/bf16 as raw 16-bit patterns);
// `inout` and `in` must not overlap.
#include <cstddef>
#include <cstdint>

#include "colltune/collectives/dtype.hpp"

namespace colltune::coll {

void reduce(DType dtype, ReduceOp op, void* inout, const void* in, std::size_t count);

// Out of place: out[i] = a[i] op b[i], so an executor's first hop needs no copy.
// out may be equal to a or b (then it is the in-place reduce); otherwise no overlap.
void reduce_into(DType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count);

// inout[i] *= factor (integers: truncating division when factor = 1/p for avg).
// fp32 and fp16/bf16 multiply by factor rounded to fp32 (fp16/bf16: exact product, one
// rounding to the type); fp64 multiplies by factor. For integers, a factor whose inverse is
// within 1e-9 of an integer d divides by d (truncating toward zero), any other factor
// multiplies in double and truncates toward zero.
void scale(DType dtype, void* inout, std::size_t count, double factor);

// The integer d when `factor` is 1/d (avg over d ranks): integer scaling by such a factor is an
// exact division by d (every back end, CPU or CUDA, follows this rule); 0 for other factors.
std::int64_t inverse_divisor(double factor);

// The post-scale factor of `op` over `nranks` contributions: 1/nranks for avg, 1 otherwise.
double post_scale_factor(ReduceOp op, int nranks);

}  // namespace colltune::coll
