// Inputs chosen so that any reduction order is exact at any rank count, and their closed-form
// reference.
// sum/avg: x(r, i) = a(i) + b(r) for the K ranks of element i's window, 0 for the others, with
//   a(i) = i mod 13 - 6, b(r) = r mod 5 - 2 (so |x| <= 8). Any partial sum adds at most K
//   terms, so stays below 8K; K is the largest count for which 8K is an exact integer of the
//   type (and of fp16 on the wire when compressing): bf16 32, fp16 256, fp32 2^21, int32 2^28.
//   Element i's window is the K ranks from i mod p on (wrapping), so every rank contributes to
//   some elements. sum = K a(i) + (the window's sum of b).
// min/max: x(r, i) = a(i) + b(r) on every rank (no arithmetic, always exact).
// prod: x(r, i) = s(i) t(r) on element i's window of K' ranks and t(r) elsewhere, with s(i) in
//   {1, -1, 2} and t(r) in {1, -1}: every partial product is a signed power of two below 2^K',
//   K' the largest that stays finite (fp16 15) or in range (int32 30, int64 62).
// With p at most K (K') every rank contributes to every element, as the bench always did.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bench_detail.hpp"
#include "colltune/collectives/compression.hpp"
#include "colltune/collectives/element.hpp"
#include "colltune/collectives/half.hpp"
#include "colltune/collectives/reducer.hpp"

namespace colltune::bench::detail {
namespace {

double a_of(std::size_t i) { return static_cast<double>(i % 13) - 6.0; }
double b_of(int r) { return static_cast<double>(r % 5) - 2.0; }
double s_of(std::size_t i) {
  if (i % 7 == 3) return 2.0;
  return i % 2 == 1 ? -1.0 : 1.0;
}
double t_of(int r) { return r % 3 == 1 ? -1.0 : 1.0; }

bool fp16_on_wire(const BenchConfig& config) {
  return config.dtype == coll::DType::f16 || config.compression != coll::Compression::none;
}

// Position of rank r in element i's window, which starts at rank i mod p.
std::size_t window_position(int rank, std::size_t i, int nranks) {
  const auto p = static_cast<std::size_t>(nranks);
  return (static_cast<std::size_t>(rank) + p - i % p) % p;
}

// The rank-side terms of the reference: per window start, the window's sum of b; and the
// product of every rank's sign t and the min/max of b over all ranks.
struct RankTerms {
  std::vector<double> window_bsum;  // index: window start (i mod p), for the starts in use
  double bmin = 0, bmax = 0, tprod = 1;

  RankTerms(int nranks, std::size_t window, std::size_t count) : bmin(b_of(0)), bmax(b_of(0)) {
    for (int r = 0; r < nranks; ++r) {
      bmin = std::min(bmin, b_of(r));
      bmax = std::max(bmax, b_of(r));
      tprod *= t_of(r);
    }
    const auto p = static_cast<std::size_t>(nranks);
    window_bsum.resize(std::min(p, std::max<std::size_t>(count, 1)));
    double sum = 0;
    for (std::size_t k = 0; k < window; ++k) sum += b_of(static_cast<int>(k));
    for (std::size_t start = 0; start < window_bsum.size(); ++start) {  // sliding window
      window_bsum[start] = sum;
      sum += b_of(static_cast<int>((start + window) % p)) - b_of(static_cast<int>(start));
    }
  }
};

double reference_value(coll::ReduceOp op, int nranks, std::size_t window, const RankTerms& terms, std::size_t i) {
  switch (op) {
    case coll::ReduceOp::sum:
    case coll::ReduceOp::avg:
      return static_cast<double>(window) * a_of(i) + terms.window_bsum[i % static_cast<std::size_t>(nranks)];
    case coll::ReduceOp::min: return a_of(i) + terms.bmin;
    case coll::ReduceOp::max: return a_of(i) + terms.bmax;
    case coll::ReduceOp::prod: return std::pow(s_of(i), static_cast<double>(window)) * terms.tprod;
  }
  return 0;
}

// Compression rounds the exact result to fp16 (exact for these integers) and applies the
// post-scale on the way back, exactly as the front end does.
void apply_compression(const BenchConfig& config, double postscale, void* reference, std::size_t count) {
  std::vector<std::uint16_t> half(count);
  if (config.dtype == coll::DType::f32) {
    coll::compress_f16(static_cast<const float*>(reference), half.data(), count);
    coll::decompress_f16(half.data(), static_cast<float*>(reference), count, postscale);
  } else {
    coll::compress_f16(static_cast<const double*>(reference), half.data(), count);
    coll::decompress_f16(half.data(), static_cast<double*>(reference), count, postscale);
  }
}

}  // namespace

std::size_t exact_window(const BenchConfig& config, int nranks) {
  std::size_t limit = 0;
  if (config.op == coll::ReduceOp::min || config.op == coll::ReduceOp::max) {
    limit = static_cast<std::size_t>(nranks);
  } else if (config.op == coll::ReduceOp::prod) {
    // Largest K with 2^K finite (floats) or in the signed range (integers).
    switch (config.dtype) {
      case coll::DType::f16: limit = 15; break;
      case coll::DType::bf16:
      case coll::DType::f32: limit = 126; break;
      case coll::DType::f64: limit = 1022; break;
      case coll::DType::i32: limit = 30; break;
      case coll::DType::i64: limit = 62; break;
    }
    if (fp16_on_wire(config)) limit = std::min<std::size_t>(limit, 15);
  } else {
    // Largest K with 8K an exact integer: 2^(significand bits) / 8, or the signed range / 8.
    switch (config.dtype) {
      case coll::DType::f16: limit = std::size_t{1} << 8; break;
      case coll::DType::bf16: limit = std::size_t{1} << 5; break;
      case coll::DType::f32: limit = std::size_t{1} << 21; break;
      case coll::DType::f64: limit = std::size_t{1} << 50; break;
      case coll::DType::i32: limit = std::size_t{1} << 28; break;
      case coll::DType::i64: limit = std::size_t{1} << 60; break;
    }
    if (fp16_on_wire(config)) limit = std::min<std::size_t>(limit, std::size_t{1} << 8);
  }
  return std::min(limit, static_cast<std::size_t>(nranks));
}

void fill_input(const BenchConfig& config, int rank, int nranks, void* buffer, std::size_t count) {
  const std::size_t window = exact_window(config, nranks);
  for (std::size_t i = 0; i < count; ++i) {
    const bool in_window = window_position(rank, i, nranks) < window;
    double x = 0;
    switch (config.op) {
      case coll::ReduceOp::min:
      case coll::ReduceOp::max: x = a_of(i) + b_of(rank); break;
      case coll::ReduceOp::prod: x = (in_window ? s_of(i) : 1.0) * t_of(rank); break;
      default: x = in_window ? a_of(i) + b_of(rank) : 0.0; break;
    }
    coll::store_element(config.dtype, buffer, i, x);
  }
}

void fill_reference(const BenchConfig& config, int nranks, void* reference, std::size_t count) {
  const std::size_t window = exact_window(config, nranks);
  const RankTerms terms(nranks, window, count);
  for (std::size_t i = 0; i < count; ++i) {
    coll::store_element(config.dtype, reference, i, reference_value(config.op, nranks, window, terms, i));
  }
  const double post = config.op == coll::ReduceOp::avg ? 1.0 / static_cast<double>(nranks) : 1.0;
  if (config.compression != coll::Compression::none) {
    apply_compression(config, post, reference, count);
  } else if (post != 1.0) {
    coll::scale(config.dtype, reference, count, post);
  }
}

std::size_t count_wrong(const void* result, const void* reference, std::size_t count, std::size_t elem_size) {
  const auto* a = static_cast<const unsigned char*>(result);
  const auto* b = static_cast<const unsigned char*>(reference);
  if (count == 0 || std::memcmp(a, b, count * elem_size) == 0) return 0;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += std::memcmp(a + i * elem_size, b + i * elem_size, elem_size) != 0;
  return wrong;
}

}  // namespace colltune::bench::detail
