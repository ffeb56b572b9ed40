#pragma once
// One element of a typed buffer read or written as a double: for building test inputs and
// checking results in any dtype (not for hot loops; the reducers work on whole arrays).
#include <cstddef>
#include <cstdint>

#include "colltune/collectives/dtype.hpp"
#include "colltune/collectives/half.hpp"

namespace colltune::coll {

inline void store_element(DType dtype, void* buffer, std::size_t i, double v) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(buffer)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(buffer)[i] = v; break;
    case DType::f16: static_cast<std::uint16_t*>(buffer)[i] = f64_to_f16(v); break;
    case DType::bf16: static_cast<std::uint16_t*>(buffer)[i] = f64_to_bf16(v); break;
    case DType::i32: static_cast<std::int32_t*>(buffer)[i] = static_cast<std::int32_t>(v); break;
    case DType::i64: static_cast<std::int64_t*>(buffer)[i] = static_cast<std::int64_t>(v); break;
  }
}

inline double load_element(DType dtype, const void* buffer, std::size_t i) {
  switch (dtype) {
    case DType::f32: return static_cast<const float*>(buffer)[i];
    case DType::f64: return static_cast<const double*>(buffer)[i];
    case DType::f16: return f16_to_f64(static_cast<const std::uint16_t*>(buffer)[i]);
    case DType::bf16: return bf16_to_f64(static_cast<const std::uint16_t*>(buffer)[i]);
    case DType::i32: return static_cast<const std::int32_t*>(buffer)[i];
    case DType::i64: return static_cast<double>(static_cast<const std::int64_t*>(buffer)[i]);
  }
  return 0.0;
}

}  // namespace colltune::coll
