// scale(): the post-scale of avg (factor 1/p) and the pre/post-scale of Horovod's
// prescale_factor/postscale_factor, one vectorisable loop per dtype.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "colltune/collectives/half.hpp"
#include "colltune/collectives/reducer.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {
namespace {

template <class T>
void scale_native(T* __restrict buf, std::size_t count, T factor) {
  for (std::size_t i = 0; i < count; ++i) buf[i] *= factor;
}

// fp16/bf16: the 11- or 8-bit value times the fp32 factor is exact in double (<= 35 bits),
// so rounding the double product once gives the correctly rounded result.
template <std::uint16_t (*Narrow)(double), float (*Widen)(std::uint16_t)>
void scale_half(std::uint16_t* __restrict buf, std::size_t count, float factor) {
  const double f = factor;
  for (std::size_t i = 0; i < count; ++i) buf[i] = Narrow(static_cast<double>(Widen(buf[i])) * f);
}

std::uint16_t narrow_f16(double x) { return f64_to_f16(x); }
std::uint16_t narrow_bf16(double x) { return f64_to_bf16(x); }
float widen_f16(std::uint16_t h) { return f16_to_f32(h); }
float widen_bf16(std::uint16_t h) { return bf16_to_f32(h); }

template <class T>
T saturate(double x) {
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (std::isnan(x)) return 0;
  if (x <= lo) return std::numeric_limits<T>::min();
  if (x >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(x);
}

template <class T>
void scale_int(T* __restrict buf, std::size_t count, double factor) {
  if (const std::int64_t d = inverse_divisor(factor); d != 0) {
    if (d == -1) {  // x / -1 overflows for the minimum value: negate with wrap instead
      for (std::size_t i = 0; i < count; ++i) buf[i] = static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(buf[i]));
      return;
    }
    const T div = static_cast<T>(d);
    if (static_cast<std::int64_t>(div) != d) {  // |d| beyond T: every quotient truncates to 0
      for (std::size_t i = 0; i < count; ++i) buf[i] = 0;
      return;
    }
    for (std::size_t i = 0; i < count; ++i) buf[i] = static_cast<T>(buf[i] / div);
    return;
  }
  for (std::size_t i = 0; i < count; ++i) buf[i] = saturate<T>(std::trunc(static_cast<double>(buf[i]) * factor));
}

}  // namespace

std::int64_t inverse_divisor(double factor) {
  if (factor == 0.0 || std::fabs(factor) > 1.0) return 0;
  const double inv = 1.0 / factor;
  const double d = std::nearbyint(inv);
  if (std::fabs(inv - d) > 1e-9 * std::fabs(d) || std::fabs(d) > 9.0e18) return 0;
  return static_cast<std::int64_t>(d);
}

void scale(DType dtype, void* inout, std::size_t count, double factor) {
  if (count == 0 || factor == 1.0) return;
  if (inout == nullptr) throw Error("scale: null buffer for " + std::to_string(count) + " elements");
  const auto f32 = static_cast<float>(factor);
  switch (dtype) {
    case DType::f32: return scale_native(static_cast<float*>(inout), count, f32);
    case DType::f64: return scale_native(static_cast<double*>(inout), count, factor);
    case DType::f16: return scale_half<narrow_f16, widen_f16>(static_cast<std::uint16_t*>(inout), count, f32);
    case DType::bf16: return scale_half<narrow_bf16, widen_bf16>(static_cast<std::uint16_t*>(inout), count, f32);
    case DType::i32: return scale_int(static_cast<std::int32_t*>(inout), count, factor);
    case DType::i64: return scale_int(static_cast<std::int64_t*>(inout), count, factor);
  }
  throw Error("scale: unknown dtype value " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace colltune::coll
