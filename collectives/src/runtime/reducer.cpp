// Reduction kernels: one restrict-qualified elementwise loop per (storage codec, op), chosen
// by a switch on dtype and op. Each loop body is branch-free (loads, one op, store), so the
// compiler vectorises it; fp16/bf16 widen to fp32, combine, and round back to nearest even.
// fp16 uses the F16C instructions when the CPU has them (half_simd.hpp), with equal results.
#include "colltune/collectives/reducer.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "colltune/collectives/half.hpp"
#include "colltune/common/error.hpp"
#include "half_simd.hpp"

namespace colltune::coll {
namespace {

// How an element is stored and in which type it is combined.
template <class T>
struct Native {
  using Stored = T;
  using Compute = T;
  static Compute load(Stored x) { return x; }
  static Stored store(Compute x) { return x; }
};
struct F16 {
  using Stored = std::uint16_t;
  using Compute = float;
  static Compute load(Stored x) { return f16_to_f32(x); }
  static Stored store(Compute x) { return f32_to_f16(x); }
};
struct BF16 {
  using Stored = std::uint16_t;
  using Compute = float;
  static Compute load(Stored x) { return bf16_to_f32(x); }
  static Stored store(Compute x) { return f32_to_bf16(x); }
};

// Integer sum and prod wrap: computed in the unsigned type (defined overflow), converted back
// (modular since C++20).
template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

struct Sum {
  template <class T>
  T operator()(T a, T b) const { return wrap_add(a, b); }
};
struct Prod {
  template <class T>
  T operator()(T a, T b) const { return wrap_mul(a, b); }
};
struct Min {
  template <class T>
  T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
  template <class T>
  T operator()(T a, T b) const { return a < b ? b : a; }
};

template <class C, class O>
[[gnu::noinline]]
void reduce_inplace(typename C::Stored* __restrict inout, const typename C::Stored* __restrict in,
                    std::size_t count) {
  const O op;
  for (std::size_t i = 0; i < count; ++i) inout[i] = C::store(op(C::load(inout[i]), C::load(in[i])));
}

template <class C, class O>
[[gnu::noinline]]
void reduce_outofplace(typename C::Stored* __restrict out, const typename C::Stored* __restrict a,
                       const typename C::Stored* __restrict b, std::size_t count) {
  const O op;
  for (std::size_t i = 0; i < count; ++i) out[i] = C::store(op(C::load(a[i]), C::load(b[i])));
}

// Call f.template operator()<Codec>() for the dtype.
template <class F>
void with_codec(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f.template operator()<Native<float>>();
    case DType::f64: return f.template operator()<Native<double>>();
    case DType::f16: return f.template operator()<F16>();
    case DType::bf16: return f.template operator()<BF16>();
    case DType::i32: return f.template operator()<Native<std::int32_t>>();
    case DType::i64: return f.template operator()<Native<std::int64_t>>();
  }
  throw Error("reduce: unknown dtype value " + std::to_string(static_cast<int>(dtype)));
}

template <class F>
void with_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return f.template operator()<Sum>();
    case ReduceOp::prod: return f.template operator()<Prod>();
    case ReduceOp::min: return f.template operator()<Min>();
    case ReduceOp::max: return f.template operator()<Max>();
  }
  throw Error("reduce: unknown reduce op value " + std::to_string(static_cast<int>(op)));
}

void check_op(ReduceOp op, const char* what) {
  if (static_cast<int>(op) < 0 || static_cast<int>(op) > static_cast<int>(ReduceOp::prod)) {
    throw Error(std::string(what) + ": unknown reduce op value " + std::to_string(static_cast<int>(op)));
  }
}

void check_buffers(const void* a, const void* b, std::size_t count, const char* what) {
  if (count != 0 && (a == nullptr || b == nullptr)) {
    throw Error(std::string(what) + ": null buffer for " + std::to_string(count) + " elements");
  }
}

}  // namespace

void reduce(DType dtype, ReduceOp op, void* inout, const void* in, std::size_t count) {
  check_buffers(inout, in, count, "reduce");
  check_op(op, "reduce");
  if (count == 0) return;
  if (dtype == DType::f16 && simd::has_f16c()) {
    auto* io = static_cast<std::uint16_t*>(inout);
    return simd::f16c_reduce_f16(op, io, io, static_cast<const std::uint16_t*>(in), count);
  }
  with_codec(dtype, [&]<class C>() {
    with_op(op, [&]<class O>() {
      using S = typename C::Stored;
      reduce_inplace<C, O>(static_cast<S*>(inout), static_cast<const S*>(in), count);
    });
  });
}

void reduce_into(DType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count) {
  check_buffers(a, b, count, "reduce_into");
  check_buffers(out, a, count, "reduce_into");
  check_op(op, "reduce_into");
  if (count == 0) return;
  // Every op is commutative, so out == b is the in-place reduce with a as the input.
  if (out == a) return reduce(dtype, op, out, b, count);
  if (out == b) return reduce(dtype, op, out, a, count);
  if (dtype == DType::f16 && simd::has_f16c()) {
    return simd::f16c_reduce_f16(op, static_cast<std::uint16_t*>(out), static_cast<const std::uint16_t*>(a),
                                 static_cast<const std::uint16_t*>(b), count);
  }
  with_codec(dtype, [&]<class C>() {
    with_op(op, [&]<class O>() {
      using S = typename C::Stored;
      reduce_outofplace<C, O>(static_cast<S*>(out), static_cast<const S*>(a), static_cast<const S*>(b), count);
    });
  });
}

double post_scale_factor(ReduceOp op, int nranks) {
  if (nranks <= 0) throw Error("post_scale_factor: rank count must be positive, got " + std::to_string(nranks));
  return op == ReduceOp::avg ? 1.0 / nranks : 1.0;
}

}  // namespace colltune::coll
