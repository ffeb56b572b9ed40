// Reduction kernels: one restrict-qualified elementwise loop per (storage codec, op), chosen
// by a switch on dtype and op. Each loop body is branch-free (loads, one op, store), so the
// compiler vectorises it; fp16/bf16 widen to fp32, combine, and round back to nearest even.
// fp16 uses the F16C instructions and bf16 AVX2 integer arithmetic when the CPU has them
// (half_simd.hpp), with equal results. The element math is element_math.hpp, shared with the
// CUDA kernels.
#include "colltune/collectives/reducer.hpp"

#include <cstdint>
#include <string>

#include "colltune/collectives/element_math.hpp"
#include "colltune/common/error.hpp"
#include "half_simd.hpp"

namespace colltune::coll {
namespace {

template <class C, class O>
[[gnu::noinline]]
void reduce_inplace(typename C::Stored* __restrict inout, const typename C::Stored* __restrict in,
                    std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) inout[i] = element::combine<C, O>(inout[i], in[i]);
}

template <class C, class O>
[[gnu::noinline]]
void reduce_outofplace(typename C::Stored* __restrict out, const typename C::Stored* __restrict a,
                       const typename C::Stored* __restrict b, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = element::combine<C, O>(a[i], b[i]);
}

void check_op(ReduceOp op, const char* what) {
  if (static_cast<int>(op) < 0 || static_cast<int>(op) > static_cast<int>(ReduceOp::prod)) {
    throw Error(std::string(what) + ": unknown reduce op value " + std::to_string(static_cast<int>(op)));
  }
}

// Runs f.template operator()<Codec, Op>() for (dtype, op); colltune::Error for values
// outside the enums.
template <class F>
void dispatch(DType dtype, ReduceOp op, const char* what, F&& f) {
  check_op(op, what);
  const bool known = element::with_codec(dtype, [&]<class C>() {
    element::with_op(op, [&]<class O>() { f.template operator()<C, O>(); });
  });
  if (!known) throw Error(std::string(what) + ": unknown dtype value " + std::to_string(static_cast<int>(dtype)));
}

void check_buffers(const void* a, const void* b, std::size_t count, const char* what) {
  if (count != 0 && (a == nullptr || b == nullptr)) {
    throw Error(std::string(what) + ": null buffer for " + std::to_string(count) + " elements");
  }
}

// fp16 with F16C and bf16 with AVX2 (or AVX-512 BF16) have SIMD kernels equal to the
// element math.
bool half_simd(DType dtype) {
  return (dtype == DType::f16 && simd::has_f16c()) || (dtype == DType::bf16 && simd::has_avx2());
}

void reduce_half_simd(DType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count) {
  auto* o = static_cast<std::uint16_t*>(out);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  if (dtype == DType::f16) return simd::f16c_reduce_f16(op, o, x, y, count);
  simd::reduce_bf16(op, o, x, y, count);
}

}  // namespace

void reduce(DType dtype, ReduceOp op, void* inout, const void* in, std::size_t count) {
  check_buffers(inout, in, count, "reduce");
  check_op(op, "reduce");
  if (count == 0) return;
  if (half_simd(dtype)) return reduce_half_simd(dtype, op, inout, inout, in, count);
  dispatch(dtype, op, "reduce", [&]<class C, class O>() {
    using S = typename C::Stored;
    reduce_inplace<C, O>(static_cast<S*>(inout), static_cast<const S*>(in), count);
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
  if (half_simd(dtype)) return reduce_half_simd(dtype, op, out, a, b, count);
  dispatch(dtype, op, "reduce_into", [&]<class C, class O>() {
    using S = typename C::Stored;
    reduce_outofplace<C, O>(static_cast<S*>(out), static_cast<const S*>(a), static_cast<const S*>(b), count);
  });
}

double post_scale_factor(ReduceOp op, int nranks) {
  if (nranks <= 0) throw Error("post_scale_factor: rank count must be positive, got " + std::to_string(nranks));
  return op == ReduceOp::avg ? 1.0 / nranks : 1.0;
}

}  // namespace colltune::coll
