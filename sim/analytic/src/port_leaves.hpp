#pragma once
// The reference pricer's queue of port leaves (pricer_engine.hpp): at most one entry per port,
// its next leave, replaced in place whenever the port's set of messages in service changes.
//
// Why not events in the one event queue: a port's next leave moves every time a message joins or
// leaves it, and pushing a fresh event each time (skipping the stale ones when they surface) left
// the queue mostly stale on large machines; its pops, a binary heap of 32-byte events, were about
// half of a 512-rank pricing. Here the heap holds one entry per busy port, in place, with four
// children a node, so a pop reads few cache lines.
//
// Ordering is the caller's: `Later(x, y)` says x comes after y (as std::priority_queue's
// comparator); entries whose order ties under it come out in no particular order.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace colltune::sim::detail {

template <class Entry, class Later>
class PortLeaves {
 public:
  explicit PortLeaves(std::size_t ports) { grow(ports); }

  // Makes room for ports numbered below `ports`.
  void grow(std::size_t ports) {
    if (ports > slot_.size()) slot_.resize(ports, kAbsent);
  }

  bool empty() const { return heap_.empty(); }
  // The earliest entry (not empty).
  const Entry& top() const { return heap_.front().entry; }

  // Sets port p's entry, adding it or moving it to its new place.
  void set(std::uint32_t p, const Entry& e) {
    if (slot_[p] == kAbsent) {
      heap_.push_back({e, p});
      up(heap_.size() - 1);
      return;
    }
    const std::size_t i = slot_[p];
    const bool earlier = Later{}(heap_[i].entry, e);
    heap_[i].entry = e;
    if (earlier) {
      up(i);
    } else {
      down(i);
    }
  }

  // Removes port p's entry, if it has one.
  void erase(std::uint32_t p) {
    const std::size_t i = slot_[p];
    if (i == kAbsent) return;
    slot_[p] = kAbsent;
    Node last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;  // p was the last slot
    heap_[i] = last;
    slot_[last.port] = i;
    down(up(i));
  }

 private:
  static constexpr std::size_t kAbsent = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t kArity = 4;

  struct Node {
    Entry entry;
    std::uint32_t port;
  };

  static std::size_t parent(std::size_t i) { return (i - 1) / kArity; }
  static std::size_t first_child(std::size_t i) { return kArity * i + 1; }
  static bool before(const Node& a, const Node& b) { return Later{}(b.entry, a.entry); }

  // Moves the node at slot i towards the root while it comes before its parent; its final slot.
  std::size_t up(std::size_t i) {
    const Node n = heap_[i];
    while (i > 0 && before(n, heap_[parent(i)])) {
      heap_[i] = heap_[parent(i)];
      slot_[heap_[i].port] = i;
      i = parent(i);
    }
    heap_[i] = n;
    slot_[n.port] = i;
    return i;
  }

  // Moves the node at slot i towards the leaves while a child comes before it.
  void down(std::size_t i) {
    const Node n = heap_[i];
    const std::size_t size = heap_.size();
    for (;;) {
      const std::size_t c0 = first_child(i);
      if (c0 >= size) break;
      std::size_t best = c0;
      const std::size_t end = c0 + kArity < size ? c0 + kArity : size;
      for (std::size_t c = c0 + 1; c < end; ++c)
        if (before(heap_[c], heap_[best])) best = c;
      if (!before(heap_[best], n)) break;
      heap_[i] = heap_[best];
      slot_[heap_[i].port] = i;
      i = best;
    }
    heap_[i] = n;
    slot_[n.port] = i;
  }

  std::vector<std::size_t> slot_;  // by port: its slot in heap_, or kAbsent
  std::vector<Node> heap_;
};

}  // namespace colltune::sim::detail
