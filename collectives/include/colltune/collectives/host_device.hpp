#pragma once
// COLLTUNE_HD marks the element math that the CPU reducers and the CUDA kernels share (half.hpp,
// element_math.hpp): `__host__ __device__` when nvcc compiles the file, nothing otherwise. The
// functions it marks are constexpr and inline, and use only what both compilers accept in
// device code (no library calls, no std::bit_cast: the builtin below instead).
#include <cstdint>

#if defined(__CUDACC__)
#define COLLTUNE_HD __host__ __device__
#else
#define COLLTUNE_HD
#endif

namespace colltune::coll {

// std::bit_cast for the shared element math: the same builtin under g++, clang and nvcc, usable
// in constant expressions and in device code.
template <class To, class From>
COLLTUNE_HD constexpr To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  return __builtin_bit_cast(To, from);
}

}  // namespace colltune::coll
