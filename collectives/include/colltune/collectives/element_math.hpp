#pragma once
// The per-element reduction, written once for the CPU reducers (reducer.cpp) and the CUDA
// kernels (cuda_reduce.cu): result = store(op(load(a), load(b))).
//
// - A codec says how an element is stored and in which type it is combined: natively for
//   fp32, fp64, int32, int64; fp16 and bf16 are widened to fp32, combined, and rounded back to
//   nearest even (half.hpp). fp32 holds at least 2p+2 significand bits for both (p = 11, 8),
//   so sum and prod are the correctly rounded fp16/bf16 results (no double-rounding error).
// - Integer sum and prod wrap modulo 2^32 / 2^64: computed in the unsigned type (defined
//   overflow), converted back (modular since C++20).
// - min/max return one of the two operands: min(a, b) = b < a ? b : a, max(a, b) = a < b ? b : a
//   (for NaN-free floating-point inputs; with a NaN the result depends on operand order).
// - avg reduces as sum; dividing by the rank count is the caller's post-scale.
//
// Everything here is constexpr, inline and COLLTUNE_HD, so the CPU tests of these functions
// cover the arithmetic the GPU runs.
#include <cstdint>
#include <type_traits>

#include "colltune/collectives/dtype.hpp"
#include "colltune/collectives/half.hpp"
#include "colltune/collectives/host_device.hpp"

namespace colltune::coll::element {

// ---- storage codecs --------------------------------------------------------------------------

template <class T>
struct Native {
  using Stored = T;
  using Compute = T;
  COLLTUNE_HD static constexpr Compute load(Stored x) { return x; }
  COLLTUNE_HD static constexpr Stored store(Compute x) { return x; }
};
struct F16 {
  using Stored = std::uint16_t;
  using Compute = float;
  COLLTUNE_HD static constexpr Compute load(Stored x) { return f16_to_f32(x); }
  COLLTUNE_HD static constexpr Stored store(Compute x) { return f32_to_f16(x); }
};
struct BF16 {
  using Stored = std::uint16_t;
  using Compute = float;
  COLLTUNE_HD static constexpr Compute load(Stored x) { return bf16_to_f32(x); }
  COLLTUNE_HD static constexpr Stored store(Compute x) { return f32_to_bf16(x); }
};

// ---- operators -------------------------------------------------------------------------------

template <class T>
COLLTUNE_HD constexpr T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class T>
COLLTUNE_HD constexpr T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

struct Sum {
  template <class T>
  COLLTUNE_HD constexpr T operator()(T a, T b) const { return wrap_add(a, b); }
};
struct Prod {
  template <class T>
  COLLTUNE_HD constexpr T operator()(T a, T b) const { return wrap_mul(a, b); }
};
struct Min {
  template <class T>
  COLLTUNE_HD constexpr T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
  template <class T>
  COLLTUNE_HD constexpr T operator()(T a, T b) const { return a < b ? b : a; }
};

// One element: a op b in the codec's compute type, stored back.
template <class C, class O>
COLLTUNE_HD constexpr typename C::Stored combine(typename C::Stored a, typename C::Stored b) {
  return C::store(O{}(C::load(a), C::load(b)));
}

// ---- dispatch (host) -------------------------------------------------------------------------

// Calls f.template operator()<Codec>() for `dtype`; false for a value outside the enum.
template <class F>
constexpr bool with_codec(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f.template operator()<Native<float>>(); return true;
    case DType::f64: f.template operator()<Native<double>>(); return true;
    case DType::f16: f.template operator()<F16>(); return true;
    case DType::bf16: f.template operator()<BF16>(); return true;
    case DType::i32: f.template operator()<Native<std::int32_t>>(); return true;
    case DType::i64: f.template operator()<Native<std::int64_t>>(); return true;
  }
  return false;
}

// Calls f.template operator()<Op>() for `op` (avg as Sum); false for a value outside the enum.
template <class F>
constexpr bool with_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: f.template operator()<Sum>(); return true;
    case ReduceOp::prod: f.template operator()<Prod>(); return true;
    case ReduceOp::min: f.template operator()<Min>(); return true;
    case ReduceOp::max: f.template operator()<Max>(); return true;
  }
  return false;
}

}  // namespace colltune::coll::element
