#pragma once
// Out-of-place execution without an up-front copy of the input (executor.cpp): which ranges
// of the working buffer already hold their values, and copying the missing ones on demand.
#include <cstddef>
#include <map>

#include "colltune/collectives/communicator.hpp"
#include "colltune/collectives/schedule.hpp"

namespace colltune::coll::detail {

class InitTracker {
 public:
  // Copies go through the codec, so the buffers may be device memory.
  InitTracker(std::byte* buffer, const std::byte* initial, std::size_t elem_size, const WireCodec& codec)
      : buffer_(buffer), initial_(initial), elem_size_(elem_size), codec_(codec) {}
  // No element of `b` holds its value yet.
  bool untouched(const Block& b) const;
  // Copies the elements of `b` that do not hold their value yet from the input.
  void fill(const Block& b);
  // Records that `b` now holds values (a receive landed there).
  void mark(const Block& b);

 private:
  std::byte* buffer_;
  const std::byte* initial_;
  std::size_t elem_size_;
  const WireCodec& codec_;
  std::map<std::size_t, std::size_t> done_;  // disjoint, non-adjacent [begin, end) ranges
};

}  // namespace colltune::coll::detail
