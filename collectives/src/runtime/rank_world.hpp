#pragma once
// What the in-process transports share: the threads transport (threads.cpp) and the cuda
// transport's virtual ranks (cuda/src/cuda_virtual.cpp). Ranks are host threads of one
// process. Each rank has one mutex, one condition variable, an inbox of published messages tagged
// with their source rank, and a count of its own published messages not yet consumed. A receiver
// takes the oldest message from the peer it expects (messages between a pair match in order),
// lands it, then decrements the sender's count; a sender's step ends when its count reaches zero.
// The inbox holds only messages in flight (a step's worth), so memory grows with the rank count,
// not with its square (a queue per source rank cost 2.7 GB at 2,000 ranks). A failing
// rank aborts the world: every wait checks the abort flag, so nobody waits for a rank that has
// given up. Every wait has a timeout.
//
// Message is the transport's: {data, bytes} for threads, plus CUDA events for virtual ranks.
// The step itself is written once here too: stage_sends and for_each_send publish a step's
// sends, RankWorld::run_step lands its receives and waits for its sends to be consumed; a
// transport supplies only how bytes land (the codec, plus the CUDA transport's events).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "colltune/collectives/executor.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::coll::detail {

using WorldClock = std::chrono::steady_clock;

inline WorldClock::time_point deadline_after(double seconds) {
  return WorldClock::now() +
         std::chrono::duration_cast<WorldClock::duration>(std::chrono::duration<double>(seconds));
}

inline std::string seconds_text(double s) {
  std::string t = std::to_string(s);
  while (t.size() > 1 && t.back() == '0') t.pop_back();
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t + " s";
}

template <class Message>
class RankWorld {
 public:
  struct Tagged {
    int src;
    Message msg;
  };
  struct RankState {
    std::mutex m;
    std::condition_variable cv;
    std::deque<Tagged> inbox;       // messages from every peer, in arrival order
    std::size_t pending_sends = 0;  // this rank's published messages not yet consumed

    // The oldest message from `src` (messages from one peer stay in send order), or end().
    typename std::deque<Tagged>::iterator first_from(int src) {
      return std::find_if(inbox.begin(), inbox.end(), [src](const Tagged& t) { return t.src == src; });
    }
  };

  explicit RankWorld(const RankLayout& layout) : layout_(layout) {
    for (int r = 0; r < layout.nranks(); ++r) ranks_.push_back(std::make_unique<RankState>());
  }
  const RankLayout& layout() const { return layout_; }
  int size() const { return layout_.nranks(); }
  RankState& state(int r) { return *ranks_[static_cast<std::size_t>(r)]; }

  // Wakes every waiter; their waits then throw. Locking each mutex before notifying makes
  // sure no waiter is between its flag check and its wait.
  void abort(int failed_rank) {
    int expected = -1;
    failed_rank_.compare_exchange_strong(expected, failed_rank);
    aborted_.store(true);
    for (auto& s : ranks_) {
      std::lock_guard<std::mutex> lk(s->m);
      s->cv.notify_all();
    }
    std::lock_guard<std::mutex> lk(barrier_m_);
    barrier_cv_.notify_all();
  }

  void throw_if_aborted(int rank) const {
    if (aborted_.load()) {
      throw Error("rank " + std::to_string(rank) + ": stopped because rank " + std::to_string(failed_rank_.load()) +
                  " failed");
    }
  }

  // All ranks arrive before any leaves; TimeoutError after timeout_s.
  void barrier(int rank, double timeout_s) {
    std::unique_lock<std::mutex> lk(barrier_m_);
    const std::size_t gen = generation_;
    if (++arrived_ == size()) {
      arrived_ = 0;
      ++generation_;
      barrier_cv_.notify_all();
      return;
    }
    const auto deadline = deadline_after(timeout_s);
    while (generation_ == gen) {
      throw_if_aborted(rank);
      if (barrier_cv_.wait_until(lk, deadline) == std::cv_status::timeout && generation_ == gen) {
        throw TimeoutError("rank " + std::to_string(rank) + ": barrier timed out after " + seconds_text(timeout_s) +
                           " (" + std::to_string(arrived_) + " of " + std::to_string(size()) + " ranks arrived)");
      }
    }
  }

  // Counts `n` messages of `rank` as pending before they are published, so that a fast
  // receiver never decrements below zero.
  void add_pending(int rank, std::size_t n) {
    RankState& me = state(rank);
    std::lock_guard<std::mutex> lk(me.m);
    me.pending_sends += n;
  }

  void publish(int from, int to, Message msg) {
    RankState& peer = state(to);
    {
      std::lock_guard<std::mutex> lk(peer.m);
      peer.inbox.push_back(Tagged{from, std::move(msg)});
    }
    peer.cv.notify_all();  // after unlocking, so the woken rank does not block on the mutex
  }

  // The next message from `peer` to `rank`; TimeoutError naming the rank, step and peer.
  Message take(int rank, int peer, double timeout_s, int step_index) {
    RankState& me = state(rank);
    std::unique_lock<std::mutex> lk(me.m);
    const auto deadline = deadline_after(timeout_s);
    auto it = me.first_from(peer);
    while (it == me.inbox.end()) {
      throw_if_aborted(rank);
      const bool timed_out = me.cv.wait_until(lk, deadline) == std::cv_status::timeout;
      it = me.first_from(peer);
      if (timed_out && it == me.inbox.end()) {
        throw TimeoutError(step_where(rank, step_index) + ": timed out after " + seconds_text(timeout_s) +
                           " waiting for a message from peer " + std::to_string(peer));
      }
    }
    Message msg = std::move(it->msg);
    me.inbox.erase(it);
    return msg;
  }

  // One message of `sender` was consumed.
  void consumed(int sender) {
    RankState& s = state(sender);
    {
      std::lock_guard<std::mutex> lk(s.m);
      --s.pending_sends;
    }
    s.cv.notify_all();  // RankState lives in the world, which outlives every rank
  }

  // Waits until every message `rank` published has been consumed.
  void wait_consumed(int rank, const Step& step, double timeout_s, int step_index) {
    RankState& me = state(rank);
    std::unique_lock<std::mutex> lk(me.m);
    const auto deadline = deadline_after(timeout_s);
    while (me.pending_sends > 0) {
      throw_if_aborted(rank);
      if (me.cv.wait_until(lk, deadline) == std::cv_status::timeout && me.pending_sends > 0) {
        lk.unlock();
        throw TimeoutError(step_where(rank, step_index) + ": timed out after " + seconds_text(timeout_s) +
                           " waiting for peer " + unreceived_peers(rank, step) + " to receive");
      }
    }
  }

  // On failure: withdraws the messages nobody has taken yet, then waits for the ones being
  // landed right now (bounded work), so no peer reads this rank's memory after it unwinds.
  void retract(int rank, const Step& step) {
    std::size_t withdrawn = 0;
    std::vector<bool> done(static_cast<std::size_t>(size()), false);
    for (const Op& op : step.ops) {
      if (op.kind != OpKind::send || done[static_cast<std::size_t>(op.peer)]) continue;
      done[static_cast<std::size_t>(op.peer)] = true;
      RankState& peer = state(op.peer);
      std::lock_guard<std::mutex> lk(peer.m);
      const auto mine = [rank](const Tagged& t) { return t.src == rank; };
      withdrawn += static_cast<std::size_t>(std::count_if(peer.inbox.begin(), peer.inbox.end(), mine));
      peer.inbox.erase(std::remove_if(peer.inbox.begin(), peer.inbox.end(), mine), peer.inbox.end());
    }
    RankState& me = state(rank);
    std::unique_lock<std::mutex> lk(me.m);
    me.pending_sends -= std::min(withdrawn, me.pending_sends);
    me.cv.wait(lk, [&] { return me.pending_sends == 0; });
  }

  // Takes the next message from op.peer, checks its size against the receive, lands it with
  // land(msg), and tells the sender it was consumed, also when landing throws, so the sender's
  // count always balances.
  template <class Land>
  void receive(int rank, const Op& op, const StepContext& ctx, Land&& land) {
    const Message msg = take(rank, op.peer, ctx.timeout_s, ctx.step_index);
    struct Consumed {
      RankWorld& world;
      int sender;
      ~Consumed() { world.consumed(sender); }
    } consumed{*this, op.peer};
    const std::size_t expected = op.block.count * ctx.codec->wire_elem_size();
    if (msg.bytes != expected) {
      throw Error(step_where(rank, ctx.step_index) + ": message from peer " + std::to_string(op.peer) + " has " +
                  std::to_string(msg.bytes) + " bytes, the receive expects " + std::to_string(expected));
    }
    land(op, ctx.buffer + op.block.offset * ctx.elem_size, msg);
  }

  // The rest of one step of `rank` once its sends are published: every receive in op order,
  // landed by land(op, dst, init, msg) (init: WireCodec::apply's), then the wait until every
  // message it published was consumed. On failure the messages nobody took are withdrawn.
  template <class Land>
  void finish_step(int rank, const Step& step, const StepContext& ctx, Land&& land) {
    try {
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        const Op& op = step.ops[i];
        if (op.kind == OpKind::send) continue;
        const std::byte* init = ctx.reduce_init(i, op);
        receive(rank, op, ctx, [&](const Op& o, std::byte* dst, const Message& msg) { land(o, dst, init, msg); });
      }
      wait_consumed(rank, step, ctx.timeout_s, ctx.step_index);
    } catch (...) {
      retract(rank, step);
      throw;
    }
  }

 private:
  std::string unreceived_peers(int rank, const Step& step) {
    std::string peers;
    for (const Op& op : step.ops) {
      if (op.kind != OpKind::send) continue;
      RankState& peer = state(op.peer);
      std::lock_guard<std::mutex> lk(peer.m);
      if (peer.first_from(rank) != peer.inbox.end() &&
          peers.find(std::to_string(op.peer)) == std::string::npos) {
        peers += (peers.empty() ? "" : ",") + std::to_string(op.peer);
      }
    }
    return peers.empty() ? "?" : peers;
  }

  RankLayout layout_;
  std::vector<std::unique_ptr<RankState>> ranks_;
  std::atomic<bool> aborted_{false};
  std::atomic<int> failed_rank_{-1};
  std::mutex barrier_m_;
  std::condition_variable barrier_cv_;
  int arrived_ = 0;
  std::size_t generation_ = 0;
};

// The sends of a step, counted.
inline std::size_t count_sends(const Step& step) {
  std::size_t n = 0;
  for (const Op& op : step.ops) n += op.kind == OpKind::send ? 1 : 0;
  return n;
}

// Copies (or encodes) every send of `step`, in op order, into the staging area that
// reserve(total bytes) returns, when the buffer's own bytes cannot be published: the codec
// encodes, or a receive of this step overwrites a sent range before the peer has read it.
// Returns nullptr when sends go straight from the buffer.
template <class Reserve>
const std::byte* stage_sends(const Step& step, const StepContext& ctx, Reserve&& reserve) {
  if (!ctx.codec->encodes() && !receive_overlaps_send(step)) return nullptr;
  const std::size_t wire = ctx.codec->wire_elem_size();
  std::size_t total = 0;
  for (const Op& op : step.ops) total += op.kind == OpKind::send ? op.block.count * wire : 0;
  std::byte* staging = reserve(total);
  std::size_t pos = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::send) continue;
    ctx.codec->encode(ctx.send_data(i, op), op.block.count, staging + pos);
    pos += op.block.count * wire;
  }
  return staging;
}

// Calls publish(op, data, bytes) for every send of `step` in op order, its wire bytes read
// from `staged` (stage_sends) or, when that is null, from the buffer.
template <class Publish>
void for_each_send(const Step& step, const StepContext& ctx, const std::byte* staged, Publish&& publish) {
  const std::size_t wire = ctx.codec->wire_elem_size();
  std::size_t pos = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::send) continue;
    const std::size_t bytes = op.block.count * wire;
    publish(op, staged ? staged + pos : ctx.send_data(i, op), bytes);
    pos += bytes;
  }
}

}  // namespace colltune::coll::detail

namespace colltune::coll::detail {

// Runs body(r) on world.size() threads, rank r on thread r. If a rank throws, the world is
// aborted (every other rank's waits end promptly), all threads are joined, and the first
// exception thrown by any rank is rethrown here. A thread that cannot start (the machine's
// thread or memory limits) aborts the world at once: the ranks already running would otherwise
// wait for it until their timeout, and the error would name the timeout, not the cause.
template <class World, class Body>
void run_rank_threads(World& world, Body&& body) {
  std::mutex first_m;
  std::exception_ptr first;
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(world.size()));
    const auto record = [&](std::exception_ptr e) {
      std::lock_guard<std::mutex> lk(first_m);
      if (!first) first = std::move(e);
    };
    for (int r = 0; r < world.size(); ++r) {
      try {
        threads.emplace_back([&, r] {
          try {
            body(r);
          } catch (...) {
            record(std::current_exception());
            world.abort(r);
          }
        });
      } catch (const std::system_error& e) {
        record(std::make_exception_ptr(Error("in-process transport: cannot start the thread of rank " +
                                             std::to_string(r) + " of " + std::to_string(world.size()) + " (" +
                                             e.code().message() + "); use fewer ranks")));
        world.abort(r);
        break;
      }
    }
  }  // jthreads join here
  if (first) std::rethrow_exception(first);
}

}  // namespace colltune::coll::detail
