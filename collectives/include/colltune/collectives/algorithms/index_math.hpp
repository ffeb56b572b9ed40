#pragma once
// Index arithmetic shared by the algorithms: which block a rank works on, who its peers are,
// how a block is cut into pipeline chunks. Small, pure and tested on their own
// (tests/collectives/schedules/test_index_math.cpp), so each algorithm file reads like its sketch.
#include <algorithm>
#include <cstddef>

#include "colltune/collectives/schedule.hpp"

namespace colltune::coll::algo {

// Segment `index` of `parts` balanced segments of [0, count): the first count % parts
// segments have one element more, so sizes differ by at most one and segment 0 is largest.
inline Block segment_of(std::size_t index, std::size_t parts, std::size_t count) {
  const std::size_t q = count / parts;
  const std::size_t rem = count % parts;
  return Block{index * q + std::min(index, rem), q + (index < rem ? 1 : 0)};
}

// Segments [first, last) of `parts` as one contiguous block.
inline Block segments_span(std::size_t first, std::size_t last, std::size_t parts, std::size_t count) {
  const Block a = segment_of(first, parts, count);
  const std::size_t end = last >= parts ? count : segment_of(last, parts, count).offset;
  return Block{a.offset, end - a.offset};
}

// The rank `distance` places after `rank` on a ring of p (distance may be negative).
inline int ring_peer(int rank, int distance, int p) {
  const int x = rank + distance;  // one wrap covers |distance| <= p, the common case, without dividing
  if (x >= 0 && x < p) return x;
  if (x < 0 && x >= -p) return x + p;
  if (x >= p && x < 2 * p) return x - p;
  return (x % p + p) % p;
}

// Pipeline chunks of a block of `n` elements: chunks of `chunk_elems` (0 = one chunk). Written
// without n + chunk_elems - 1, which wraps for a chunk near 2^64 and gave 0 chunks.
inline std::size_t chunk_count(std::size_t n, std::size_t chunk_elems) {
  if (n == 0) return 0;
  if (chunk_elems == 0) return 1;
  return n / chunk_elems + (n % chunk_elems != 0 ? 1 : 0);
}

// Chunk j of `block`; empty when j is past the block's last chunk (j * chunk_elems is not
// formed when it would wrap).
inline Block chunk_of(const Block& block, std::size_t j, std::size_t chunk_elems) {
  if (chunk_elems == 0) return j == 0 ? block : Block{block.end(), 0};
  const std::size_t start = j > block.count / chunk_elems ? block.count : std::min(block.count, j * chunk_elems);
  return Block{block.offset + start, std::min(chunk_elems, block.count - start)};
}

inline bool is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

// Largest power of two <= x (x >= 1).
inline int floor_pow2(int x) {
  int p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

// Smallest L with 2^L >= x (x >= 1).
inline int ceil_log2(int x) {
  int l = 0;
  while ((1 << l) < x) ++l;
  return l;
}

// Index of the lowest set bit of x > 0.
inline int lowest_bit(int x) {
  int b = 0;
  while (((x >> b) & 1) == 0) ++b;
  return b;
}

}  // namespace colltune::coll::algo
