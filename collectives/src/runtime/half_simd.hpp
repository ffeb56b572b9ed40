#pragma once
// fp16 kernels using the x86 F16C conversion instructions (vcvtph2ps / vcvtps2ph, round to
// nearest even), selected at run time when the CPU has them. The portable bit-manipulation
// path in half.hpp gives identical results (tests compare the two on every fp16 pattern);
// F16C is several times faster because each conversion is one instruction for 8 elements.
// On other architectures has_f16c() is false and these functions run the portable loops.
#include <cstddef>
#include <cstdint>

#include "colltune/collectives/dtype.hpp"

namespace colltune::coll::simd {

bool has_f16c();

void f16c_f32_to_f16(const float* src, std::uint16_t* dst, std::size_t count);
void f16c_f16_to_f32(const std::uint16_t* src, float* dst, std::size_t count);
// out[i] = a[i] op b[i] in fp32, rounded to fp16; out may equal a or b.
void f16c_reduce_f16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                     std::size_t count);
// inout[i] = inout[i] op fp32(in[i]).
void f16c_reduce_f16_into_f32(ReduceOp op, float* inout, const std::uint16_t* in, std::size_t count);

}  // namespace colltune::coll::simd
