// Inputs chosen so that any reduction order is exact, and their closed-form reference.
// sum/avg/min/max: x(r, i) = a(i) + b(r) with a(i) = i mod 13 - 6 and b(r) = r mod 5 - 2, so
//   |x| <= 8 and every partial sum is an integer below 8p: exact in every dtype (bf16 up to
//   p = 32); sum = p a(i) + sum_r b(r), min/max = a(i) + min/max_r b(r).
// prod: x(r, i) = s(i) t(r) with s(i) in {1, -1, 2} and t(r) in {1, -1}: products are signed
//   powers of two, exact; s(i) = 2 only where 2^p stays finite in the reduced type.
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
double t_of(int r) { return r % 3 == 1 ? -1.0 : 1.0; }

// True when 2^p must be avoided: results or the wire are fp16 (largest finite 65504).
bool f16_limited(const BenchConfig& config, int nranks) {
  const bool f16 = config.dtype == coll::DType::f16 || config.compression != coll::Compression::none;
  return f16 && nranks > 15;
}
double s_of(std::size_t i, bool limited) {
  if (i % 7 == 3 && !limited) return 2.0;
  return i % 2 == 1 ? -1.0 : 1.0;
}

// What the reference needs from the rank terms, computed once per fill.
struct RankTerms {
  double bsum = 0, bmin = 0, bmax = 0, tprod = 1;
  explicit RankTerms(int nranks) : bmin(b_of(0)), bmax(b_of(0)) {
    for (int r = 0; r < nranks; ++r) {
      bsum += b_of(r);
      bmin = std::min(bmin, b_of(r));
      bmax = std::max(bmax, b_of(r));
      tprod *= t_of(r);
    }
  }
};

double reference_value(coll::ReduceOp op, int nranks, const RankTerms& terms, bool limited, std::size_t i) {
  switch (op) {
    case coll::ReduceOp::sum:
    case coll::ReduceOp::avg: return static_cast<double>(nranks) * a_of(i) + terms.bsum;
    case coll::ReduceOp::min: return a_of(i) + terms.bmin;
    case coll::ReduceOp::max: return a_of(i) + terms.bmax;
    case coll::ReduceOp::prod: return std::pow(s_of(i, limited), nranks) * terms.tprod;
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

void fill_input(const BenchConfig& config, int rank, int nranks, void* buffer, std::size_t count) {
  const bool prod = config.op == coll::ReduceOp::prod;
  const bool limited = f16_limited(config, nranks);
  for (std::size_t i = 0; i < count; ++i) {
    coll::store_element(config.dtype, buffer, i, prod ? s_of(i, limited) * t_of(rank) : a_of(i) + b_of(rank));
  }
}

void fill_reference(const BenchConfig& config, int nranks, void* reference, std::size_t count) {
  const RankTerms terms(nranks);
  const bool limited = f16_limited(config, nranks);
  for (std::size_t i = 0; i < count; ++i) {
    coll::store_element(config.dtype, reference, i, reference_value(config.op, nranks, terms, limited, i));
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
