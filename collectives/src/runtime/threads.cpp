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

  // Publishes the sends (staged when they cannot go from the buffer), then lands each receive
  // straight from the sender's memory with the codec.
  void run_step(const Step& step, const StepContext& ctx) override {
    const std::byte* staged = detail::stage_sends(step, ctx, [this](std::size_t bytes) {
      if (staging_.size() < bytes) staging_.resize(bytes);
      return staging_.data();
    });
    world_.add_pending(rank_, detail::count_sends(step));
    detail::for_each_send(step, ctx, staged, [&](const Op& op, const std::byte* data, std::size_t bytes) {
      world_.publish(rank_, op.peer, Message{data, bytes});
    });
    world_.finish_step(rank_, step, ctx, [&](const Op& op, std::byte* dst, const std::byte* init, const Message& msg) {
      ctx.codec->apply(op.kind, dst, msg.data, op.block.count, init);
    });
  }

 private:
  World& world_;
  int rank_;
  std::vector<std::byte> staging_;  // encoded or scratch-copied sends of the current step
};

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
