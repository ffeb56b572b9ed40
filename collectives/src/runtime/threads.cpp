// The threads transport (see threads.hpp). Each rank has one mutex, one condition variable, an
// inbox of published messages tagged with their source rank, and a count of its own published
// messages not yet consumed. A receiver takes the oldest message from the peer it expects
// (messages between a pair match in order), lands it straight from the sender's memory, then
// decrements the sender's count; a sender's step ends when its count reaches zero. The inbox
// holds only messages in flight (a step's worth), so memory grows with the rank count, not
// with its square. A failing rank aborts the world:
// every wait checks the abort flag, so nobody waits for a rank that has given up.
#include "colltune/collectives/threads.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
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

namespace colltune::coll {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string seconds_text(double s) {
  std::string t = std::to_string(s);
  while (t.size() > 1 && t.back() == '0') t.pop_back();
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t + " s";
}

struct Message {
  int src = -1;
  const std::byte* data = nullptr;
  std::size_t bytes = 0;
};

struct RankState {
  std::mutex m;
  std::condition_variable cv;
  std::deque<Message> inbox;      // messages from every peer, in arrival order
  std::size_t pending_sends = 0;  // this rank's published messages not yet consumed

  // The oldest message from `src` (messages from one peer stay in send order), or end().
  std::deque<Message>::iterator first_from(int src) {
    return std::find_if(inbox.begin(), inbox.end(), [src](const Message& msg) { return msg.src == src; });
  }
};

class World {
 public:
  explicit World(const RankLayout& layout) : layout_(layout) {
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
  void barrier(int rank, double timeout_s);

 private:
  RankLayout layout_;
  std::vector<std::unique_ptr<RankState>> ranks_;
  std::atomic<bool> aborted_{false};
  std::atomic<int> failed_rank_{-1};
  std::mutex barrier_m_;
  std::condition_variable barrier_cv_;
  int arrived_ = 0;
  std::size_t generation_ = 0;
};

void World::barrier(int rank, double timeout_s) {
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

class ThreadsCommunicator final : public Communicator {
 public:
  ThreadsCommunicator(World& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  const RankLayout& layout() const override { return world_.layout(); }
  std::string_view transport() const override { return "threads"; }
  void barrier(double timeout_s) override { world_.barrier(rank_, timeout_s); }

  void run_step(const Step& step, const StepContext& ctx) override {
    post_sends(step, ctx);
    try {
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        if (step.ops[i].kind != OpKind::send) receive(step.ops[i], ctx.reduce_init(i, step.ops[i]), ctx);
      }
      wait_sends(step, ctx);
    } catch (...) {
      retract_sends(step);
      throw;
    }
  }

 private:
  const std::byte* stage_sends(const Step& step, const StepContext& ctx);
  void post_sends(const Step& step, const StepContext& ctx);
  void receive(const Op& op, const std::byte* init, const StepContext& ctx);
  void wait_sends(const Step& step, const StepContext& ctx);
  void retract_sends(const Step& step);
  std::string unreceived_peers(const Step& step);

  World& world_;
  int rank_;
  std::vector<std::byte> staging_;  // encoded or scratch-copied sends of the current step
};

// Copies (or encodes) every send of the step into staging_, in op order, when the buffer's own
// bytes cannot be published: the codec encodes, or a receive of this step overwrites a sent
// range before the peer has read it. Returns nullptr when sends go straight from the buffer.
const std::byte* ThreadsCommunicator::stage_sends(const Step& step, const StepContext& ctx) {
  if (!ctx.codec->encodes() && !receive_overlaps_send(step)) return nullptr;
  const std::size_t wire = ctx.codec->wire_elem_size();
  std::size_t total = 0;
  for (const Op& op : step.ops) {
    if (op.kind == OpKind::send) total += op.block.count * wire;
  }
  if (staging_.size() < total) staging_.resize(total);
  std::size_t pos = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::send) continue;
    ctx.codec->encode(ctx.send_data(i, op), op.block.count, staging_.data() + pos);
    pos += op.block.count * wire;
  }
  return staging_.data();
}

void ThreadsCommunicator::post_sends(const Step& step, const StepContext& ctx) {
  const std::byte* staged = stage_sends(step, ctx);
  const std::size_t wire = ctx.codec->wire_elem_size();
  std::size_t nsends = 0;
  for (const Op& op : step.ops) nsends += op.kind == OpKind::send ? 1 : 0;
  {
    // Counted before publishing, so a fast receiver never decrements below zero.
    RankState& me = world_.state(rank_);
    std::lock_guard<std::mutex> lk(me.m);
    me.pending_sends += nsends;
  }
  std::size_t pos = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::send) continue;
    const std::size_t bytes = op.block.count * wire;
    Message msg{rank_, staged ? staged + pos : ctx.send_data(i, op), bytes};
    pos += bytes;
    RankState& peer = world_.state(op.peer);
    {
      std::lock_guard<std::mutex> lk(peer.m);
      peer.inbox.push_back(msg);
    }
    peer.cv.notify_all();  // after unlocking, so the woken rank does not block on the mutex
  }
}

// Takes the next message from op.peer, lands it, and tells the sender it was consumed (also
// when landing throws, so the sender's count always balances).
void ThreadsCommunicator::receive(const Op& op, const std::byte* init, const StepContext& ctx) {
  RankState& me = world_.state(rank_);
  Message msg;
  {
    std::unique_lock<std::mutex> lk(me.m);
    const auto deadline = deadline_after(ctx.timeout_s);
    auto it = me.first_from(op.peer);
    while (it == me.inbox.end()) {
      world_.throw_if_aborted(rank_);
      const bool timed_out = me.cv.wait_until(lk, deadline) == std::cv_status::timeout;
      it = me.first_from(op.peer);
      if (timed_out && it == me.inbox.end()) {
        throw TimeoutError(step_where(rank_, ctx.step_index) + ": timed out after " + seconds_text(ctx.timeout_s) +
                           " waiting for a message from peer " + std::to_string(op.peer));
      }
    }
    msg = *it;
    me.inbox.erase(it);
  }
  struct Consumed {
    RankState& sender;
    ~Consumed() {
      {
        std::lock_guard<std::mutex> lk(sender.m);
        --sender.pending_sends;
      }
      sender.cv.notify_all();  // RankState lives in the World, which outlives every rank
    }
  } consumed{world_.state(op.peer)};
  const std::size_t expected = op.block.count * ctx.codec->wire_elem_size();
  if (msg.bytes != expected) {
    throw Error(step_where(rank_, ctx.step_index) + ": message from peer " + std::to_string(op.peer) + " has " +
                std::to_string(msg.bytes) + " bytes, the receive expects " + std::to_string(expected));
  }
  ctx.codec->apply(op.kind, ctx.buffer + op.block.offset * ctx.elem_size, msg.data, op.block.count, init);
}

void ThreadsCommunicator::wait_sends(const Step& step, const StepContext& ctx) {
  RankState& me = world_.state(rank_);
  std::unique_lock<std::mutex> lk(me.m);
  const auto deadline = deadline_after(ctx.timeout_s);
  while (me.pending_sends > 0) {
    world_.throw_if_aborted(rank_);
    if (me.cv.wait_until(lk, deadline) == std::cv_status::timeout && me.pending_sends > 0) {
      lk.unlock();
      throw TimeoutError(step_where(rank_, ctx.step_index) + ": timed out after " + seconds_text(ctx.timeout_s) +
                         " waiting for peer " + unreceived_peers(step) + " to receive");
    }
  }
}

std::string ThreadsCommunicator::unreceived_peers(const Step& step) {
  std::string peers;
  for (const Op& op : step.ops) {
    if (op.kind != OpKind::send) continue;
    RankState& peer = world_.state(op.peer);
    std::lock_guard<std::mutex> lk(peer.m);
    if (peer.first_from(rank_) != peer.inbox.end() && peers.find(std::to_string(op.peer)) == std::string::npos) {
      peers += (peers.empty() ? "" : ",") + std::to_string(op.peer);
    }
  }
  return peers.empty() ? "?" : peers;
}

// On failure: withdraw the messages nobody has taken yet, then wait for the ones being landed
// right now (a bounded memcpy/reduce), so no peer reads this rank's memory after it unwinds.
void ThreadsCommunicator::retract_sends(const Step& step) {
  std::size_t withdrawn = 0;
  std::vector<bool> done(static_cast<std::size_t>(size()), false);
  for (const Op& op : step.ops) {
    if (op.kind != OpKind::send || done[static_cast<std::size_t>(op.peer)]) continue;
    done[static_cast<std::size_t>(op.peer)] = true;
    RankState& peer = world_.state(op.peer);
    std::lock_guard<std::mutex> lk(peer.m);
    const auto mine = [this](const Message& m) { return m.src == rank_; };
    withdrawn += static_cast<std::size_t>(std::count_if(peer.inbox.begin(), peer.inbox.end(), mine));
    peer.inbox.erase(std::remove_if(peer.inbox.begin(), peer.inbox.end(), mine), peer.inbox.end());
  }
  RankState& me = world_.state(rank_);
  std::unique_lock<std::mutex> lk(me.m);
  me.pending_sends -= std::min(withdrawn, me.pending_sends);
  me.cv.wait(lk, [&] { return me.pending_sends == 0; });
}

}  // namespace

void run_threads(const RankLayout& layout, const std::function<void(Communicator&)>& fn) {
  if (layout.nranks() <= 0) throw Error("threads transport: the rank count must be at least 1, got 0");
  World world(layout);
  std::mutex first_m;
  std::exception_ptr first;
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(layout.nranks()));
    for (int r = 0; r < layout.nranks(); ++r) {
      try {
        threads.emplace_back([&, r] {
          ThreadsCommunicator comm(world, r);
          try {
            fn(comm);
          } catch (...) {
            {
              std::lock_guard<std::mutex> lk(first_m);
              if (!first) first = std::current_exception();
            }
            world.abort(r);
          }
        });
      } catch (const std::system_error& e) {
        // The ranks already running would wait for this one until their timeout: stop them
        // now, and report the cause (the machine's thread or memory limits), not a timeout.
        {
          std::lock_guard<std::mutex> lk(first_m);
          if (!first) {
            first = std::make_exception_ptr(Error("threads transport: cannot start the thread of rank " +
                                                  std::to_string(r) + " of " + std::to_string(layout.nranks()) +
                                                  " (" + e.code().message() + "); use fewer ranks"));
          }
        }
        world.abort(r);
        break;
      }
    }
  }  // jthreads join here
  if (first) std::rethrow_exception(first);
}

void run_threads(int nranks, const std::function<void(Communicator&)>& fn) {
  if (nranks <= 0) {
    throw Error("threads transport: the rank count must be at least 1, got " + std::to_string(nranks));
  }
  run_threads(RankLayout::single_host(nranks), fn);
}

}  // namespace colltune::coll
