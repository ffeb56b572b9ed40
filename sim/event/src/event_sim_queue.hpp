#pragma once
// The event simulator's queue (the event engine and the contention-free sweep share it).
//
// Event times never go below the last instant taken out, so the queue is a radix heap over the
// bit patterns of the (non-negative) times, which order like the times themselves: a push lands
// in the bucket of the highest bit where its time differs from that instant (O(1)), and taking
// the next instant refills the lowest buckets from the first non-empty one, relative to its least
// time; an event moves down at most 64 times. Events due at one instant share bucket 0, so the
// thousands that a symmetric collective puts on the very same instant (every rank's step start,
// every flow of a ring step) cost an append each and come out in one pass.
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace colltune::sim::detail {

struct Event {
  double t = 0;
  std::uint32_t id = 0;       // kind bits | index
  std::uint32_t version = 0;  // flows only
};

class EventQueue {
 public:
  bool empty() const { return size_ == 0; }
  // `ev.t` must not be below the instant last taken (0 at first).
  void push(const Event& ev) {
    buckets_[bucket_of(key_of(ev.t))].push_back(ev);
    ++size_;
  }
  // Moves the events of the earliest instant into `out` (cleared first) and returns the
  // instant. Events pushed for that same instant while `out` is handled are taken by the next
  // call (due_now() says whether there are any). Call only when not empty.
  double pop_instant(std::vector<Event>& out) {
    if (buckets_[0].empty()) refill();
    out.clear();
    std::swap(out, buckets_[0]);
    size_ -= out.size();
    return std::bit_cast<double>(last_);
  }
  // Events are waiting for the instant last taken.
  bool due_now() const { return !buckets_[0].empty(); }

 private:
  static std::uint64_t key_of(double t) { return std::bit_cast<std::uint64_t>(t + 0.0); }  // -0 -> +0
  std::size_t bucket_of(std::uint64_t key) const {
    return key == last_ ? 0 : 64 - static_cast<std::size_t>(std::countl_zero(key ^ last_));
  }
  // Moves the first non-empty bucket's events down, relative to its least time.
  void refill() {
    std::size_t i = 1;
    while (buckets_[i].empty()) ++i;
    std::uint64_t least = key_of(buckets_[i].front().t);
    for (const Event& ev : buckets_[i]) least = std::min(least, key_of(ev.t));
    last_ = least;
    moving_.clear();
    std::swap(moving_, buckets_[i]);
    for (const Event& ev : moving_) buckets_[bucket_of(key_of(ev.t))].push_back(ev);
  }

  std::array<std::vector<Event>, 65> buckets_;
  std::vector<Event> moving_;  // refill's scratch (keeps its capacity)
  std::uint64_t last_ = 0;     // the bit pattern of the instant last taken
  std::size_t size_ = 0;
};

}  // namespace colltune::sim::detail
