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

namespace colltune::coll::simd {

// bf16 kernels (bf16_simd.cpp), selected at run time by what the CPU has. A bf16 is the top
// half of an fp32, so widening is a shift; narrowing is half.hpp's f32_to_bf16 (round to
// nearest even, NaN kept and made quiet):
// - AVX2: that rounding in 256-bit integer arithmetic, 16 elements per step;
// - AVX-512 BF16: the vcvtne2ps2bf16 instruction, which rounds the same way and keeps NaNs the
//   same way but flushes subnormals to zero; a step whose values include a subnormal is done
//   by the scalar code instead.
// Both give the scalar definition's bits for every input (tests: every bf16 pattern,
// reductions against the portable loop).
bool has_avx2();
bool has_avx512_bf16();

// The fastest kernel this CPU runs (the portable loops without AVX2). out may equal a or b.
void reduce_bf16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b, std::size_t count);
void f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count);
void bf16_to_f32(const std::uint16_t* src, float* dst, std::size_t count);

// One instruction set each, for the tests; call only when the matching has_*() is true.
void avx2_reduce_bf16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                      std::size_t count);
void avx2_f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count);
void avx2_bf16_to_f32(const std::uint16_t* src, float* dst, std::size_t count);
void avx512_reduce_bf16(ReduceOp op, std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                        std::size_t count);
void avx512_f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t count);

}  // namespace colltune::coll::simd
