#pragma once
// fp16 gradient compression with Horovod semantics (hvd.Compression.fp16): cast the fp32/fp64
// gradient to fp16, allreduce the fp16 buffer, cast back. Pre- and post-scale factors are
// applied in the source precision (prescale before the cast, so a caller can shrink values that
// would overflow fp16; postscale after the cast back, e.g. 1/p for an average).
//
// Overflow is never silently passed on: every conversion into fp16 returns an OverflowReport
// counting the finite inputs that became +-inf, and the first such index.
//
// "fp16 on the wire, fp32 accumulate": instead of reducing in fp16 at every hop, an executor
// keeps its working buffer in fp32, converts a block to fp16 only to send it
// (encode_f16_wire) and widens each received fp16 block into the fp32 accumulator
// (reduce_f16_into_f32). Only the wire format loses precision, not the running sums.
#include <cstddef>
#include <cstdint>
#include <limits>

#include "colltune/collectives/dtype.hpp"

namespace colltune::coll {

struct OverflowReport {
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  std::size_t overflowed = 0;       // finite inputs (after prescale) that became +-inf in fp16/bf16
  std::size_t first_index = npos;   // index of the first of them, npos if none
  std::size_t nonfinite_inputs = 0; // inputs already inf/NaN (passed through as inf/NaN)
  bool any() const { return overflowed != 0; }
  // Fold in the report of a later chunk whose element 0 is element `offset` of the whole.
  void merge(const OverflowReport& chunk, std::size_t offset);
};

// dst[i] = fp16(src[i] * prescale). prescale == 1 skips the multiply.
OverflowReport compress_f16(const float* src, std::uint16_t* dst, std::size_t count, double prescale = 1.0);
OverflowReport compress_f16(const double* src, std::uint16_t* dst, std::size_t count, double prescale = 1.0);

// dst[i] = widen(src[i]) * postscale. postscale == 1 skips the multiply.
void decompress_f16(const std::uint16_t* src, float* dst, std::size_t count, double postscale = 1.0);
void decompress_f16(const std::uint16_t* src, double* dst, std::size_t count, double postscale = 1.0);

// The same with bf16 (fp32's exponent range: only values beyond bf16's largest finite,
// about 3.39e38, overflow; fp64 sources can overflow and underflow further). The report counts
// finite inputs that became +-inf in bf16.
OverflowReport compress_bf16(const float* src, std::uint16_t* dst, std::size_t count, double prescale = 1.0);
OverflowReport compress_bf16(const double* src, std::uint16_t* dst, std::size_t count, double prescale = 1.0);
void decompress_bf16(const std::uint16_t* src, float* dst, std::size_t count, double postscale = 1.0);
void decompress_bf16(const std::uint16_t* src, double* dst, std::size_t count, double postscale = 1.0);

// Scan an fp16 buffer (e.g. an allreduce result) for +-inf: an overflow that happened inside
// the reduction. nonfinite_inputs counts NaNs.
OverflowReport find_f16_overflow(const std::uint16_t* buf, std::size_t count);

// Send side of the fp32-accumulate mode: dst[i] = fp16(src[i]); reports overflow as above.
OverflowReport encode_f16_wire(const float* src, std::uint16_t* dst, std::size_t count);
// Receive side: inout[i] = inout[i] op widen(in[i]) in fp32 (avg = sum). min/max NaN-free.
void reduce_f16_into_f32(float* inout, const std::uint16_t* in, std::size_t count);
void reduce_f16_into_f32(ReduceOp op, float* inout, const std::uint16_t* in, std::size_t count);
// Receive-and-copy: out[i] = widen(in[i]).
inline void decode_f16_wire(const std::uint16_t* in, float* out, std::size_t count) {
  decompress_f16(in, out, count, 1.0);
}

// Error of a compressed result against the exact one. Relative errors use |exact| as the
// denominator and skip elements whose exact value is 0 (they count in max_abs only).
// Elements where approx is inf/NaN but exact is finite are counted in `nonfinite` and left
// out of the statistics (an overflow is reported, not averaged away).
struct CompressionError {
  double max_abs = 0.0;
  double max_rel = 0.0;
  double rms_rel = 0.0;        // sqrt(mean(rel^2)) over elements with exact != 0
  std::size_t count = 0;       // elements compared
  std::size_t nonfinite = 0;   // approx not finite where exact is finite
  std::size_t worst_index = 0; // index of max_rel (0 when none)
};

CompressionError compression_error(const float* approx, const float* exact, std::size_t count);
CompressionError compression_error(const double* approx, const double* exact, std::size_t count);

// fp16's unit roundoff 2^-11: a single rounding has relative error at most this (normal range).
inline constexpr double kF16UnitRoundoff = 1.0 / 2048.0;

}  // namespace colltune::coll
