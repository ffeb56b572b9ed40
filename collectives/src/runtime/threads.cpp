// The threads transport (see threads.hpp) over the in-process rank world (rank_world.hpp): a
// message is a pointer to the sender's bytes, which the receiver lands straight from the
// sender's memory.
#include "colltune/collectives/threads.hpp"

#include <string>
#include <vector>

#include "colltune/collectives/executor.hpp"
#include "colltune/common/error.hpp"
#include "rank_world.hpp"

namespace colltune::coll {
namespace {

struct Message {
  const std::byte* data = nullptr;
  std::size_t bytes = 0;
};

using World = detail::RankWorld<Message>;

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
      world_.wait_consumed(rank_, step, ctx.timeout_s, ctx.step_index);
    } catch (...) {
      world_.retract(rank_, step);
      throw;
    }
  }

 private:
  const std::byte* stage_sends(const Step& step, const StepContext& ctx);
  void post_sends(const Step& step, const StepContext& ctx);
  void receive(const Op& op, const std::byte* init, const StepContext& ctx);

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
  world_.add_pending(rank_, nsends);
  std::size_t pos = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::send) continue;
    const std::size_t bytes = op.block.count * wire;
    world_.publish(rank_, op.peer, Message{staged ? staged + pos : ctx.send_data(i, op), bytes});
    pos += bytes;
  }
}

// Takes the next message from op.peer, lands it, and tells the sender it was consumed (also
// when landing throws, so the sender's count always balances).
void ThreadsCommunicator::receive(const Op& op, const std::byte* init, const StepContext& ctx) {
  const Message msg = world_.take(rank_, op.peer, ctx.timeout_s, ctx.step_index);
  struct Consumed {
    World& world;
    int sender;
    ~Consumed() { world.consumed(sender); }
  } consumed{world_, op.peer};
  const std::size_t expected = op.block.count * ctx.codec->wire_elem_size();
  if (msg.bytes != expected) {
    throw Error(step_where(rank_, ctx.step_index) + ": message from peer " + std::to_string(op.peer) + " has " +
                std::to_string(msg.bytes) + " bytes, the receive expects " + std::to_string(expected));
  }
  ctx.codec->apply(op.kind, ctx.buffer + op.block.offset * ctx.elem_size, msg.data, op.block.count, init);
}

}  // namespace

void run_threads(const RankLayout& layout, const std::function<void(Communicator&)>& fn) {
  if (layout.nranks() <= 0) throw Error("threads transport: the rank count must be at least 1, got 0");
  World world(layout);
  detail::run_rank_threads(world, [&](int r) {
    ThreadsCommunicator comm(world, r);
    fn(comm);
  });
}

void run_threads(int nranks, const std::function<void(Communicator&)>& fn) {
  if (nranks <= 0) {
    throw Error("threads transport: the rank count must be at least 1, got " + std::to_string(nranks));
  }
  run_threads(RankLayout::single_host(nranks), fn);
}

}  // namespace colltune::coll
