#include "executor_init.hpp"

#include <algorithm>
#include <iterator>

namespace colltune::coll::detail {

bool InitTracker::untouched(const Block& b) const {
  if (b.count == 0) return true;
  auto it = done_.upper_bound(b.offset);  // first range starting after b.offset
  if (it != done_.begin() && std::prev(it)->second > b.offset) return false;
  return it == done_.end() || it->first >= b.end();
}

void InitTracker::fill(const Block& b) {
  if (b.count == 0) return;
  std::size_t pos = b.offset;
  auto it = done_.upper_bound(b.offset);
  if (it != done_.begin()) --it;
  for (; pos < b.end(); ++it) {
    // Gap [pos, next range start or b.end()) needs copying.
    const std::size_t gap_end = it == done_.end() ? b.end() : std::min(b.end(), std::max(pos, it->first));
    if (gap_end > pos) codec_.copy(buffer_ + pos * elem_size_, initial_ + pos * elem_size_, (gap_end - pos) * elem_size_);
    if (it == done_.end()) break;
    pos = std::max(pos, it->second);
  }
  mark(b);
}

void InitTracker::mark(const Block& b) {
  if (b.count == 0) return;
  std::size_t begin = b.offset, end = b.end();
  auto it = done_.lower_bound(begin);
  if (it != done_.begin() && std::prev(it)->second >= begin) --it;  // touches or overlaps on the left
  while (it != done_.end() && it->first <= end) {
    begin = std::min(begin, it->first);
    end = std::max(end, it->second);
    it = done_.erase(it);
  }
  done_.emplace(begin, end);
}

}  // namespace colltune::coll::detail
