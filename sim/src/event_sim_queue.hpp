#pragma once
// The event simulator's queue: a min-heap of distinct instants, each holding the events due
// then in a bucket. Collectives are symmetric, so thousands of events (every rank's step start,
// every flow of a ring step) often fall on the very same instant: they cost one heap entry and
// an append each, instead of a heap push and pop each.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace colltune::sim::detail {

struct Event {
  double t = 0;
  std::uint32_t id = 0;       // kind bits | index
  std::uint32_t version = 0;  // flows only
};

class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  double next_time() const { return heap_.front().t; }

  void push(const Event& ev) {
    for (const Open& o : open_)
      if (o.bucket != kNone && o.t == ev.t) {
        buckets_[o.bucket].push_back(ev);
        return;
      }
    const std::uint32_t b = new_bucket();
    buckets_[b].push_back(ev);
    heap_.push_back({ev.t, b});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    open_[next_open_] = {ev.t, b};
    next_open_ = (next_open_ + 1) % open_.size();
  }

  // Moves the events of the earliest instant into `out` (cleared first). Events pushed for the
  // same instant while `out` is handled land in a fresh bucket, taken by the next call.
  void pop_instant(std::vector<Event>& out) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const std::uint32_t b = heap_.back().bucket;
    heap_.pop_back();
    for (Open& o : open_)
      if (o.bucket == b) o.bucket = kNone;
    out.clear();
    std::swap(out, buckets_[b]);
    free_.push_back(b);
  }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  struct Slot {
    double t;
    std::uint32_t bucket;
    bool operator>(const Slot& o) const { return t != o.t ? t > o.t : bucket > o.bucket; }
  };
  struct Open {
    double t = 0;
    std::uint32_t bucket = kNone;
  };

  std::uint32_t new_bucket() {
    if (!free_.empty()) {
      const std::uint32_t b = free_.back();
      free_.pop_back();
      return b;
    }
    buckets_.emplace_back();
    return static_cast<std::uint32_t>(buckets_.size() - 1);
  }

  std::vector<Slot> heap_;
  std::vector<std::vector<Event>> buckets_;
  std::vector<std::uint32_t> free_;
  std::array<Open, 8> open_{};  // recently opened instants still in the heap
  std::size_t next_open_ = 0;
};

}  // namespace colltune::sim::detail
