// The `cuda` transport: virtual ranks on one GPU (see cuda_transport.hpp for the design).
//
// One step of rank r, all on r's stream, the host never waiting for the device:
// 1. If a receive of the step overlaps one of its sends (or the codec encodes), the sent blocks
//    are first copied to r's staging memory, so the peers read them as the step began.
// 2. `ready` is recorded; each send is published as {device pointer, bytes, ready, consumed[k]}
//    where consumed[k] is one of r's events.
// 3. Each receive takes the next message from its peer (host rendezvous, with the timeout),
//    makes r's stream wait for the message's `ready`, lands it with the codec (a reduce or copy
//    kernel reading the peer's memory), and records the message's `consumed` on r's stream. The
//    sender is told the message was consumed also when landing throws, so its count always
//    balances (its `consumed` event then stays unrecorded, which a wait treats as done).
// 4. When every message r published was taken (host), r's stream waits for their `consumed`
//    events: r's next step, which may overwrite what it sent, runs only after the peers' reads.
// Events are reused from step to step: a peer waits on `ready` before it reports the message
// consumed, and r re-records `ready` only after all its messages were consumed; consumed[k] is
// recorded by one peer and waited on by r before r's next step records anything. Staging,
// publishing and the receive loop are the threads transport's (rank_world.hpp).
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "colltune/collectives/cuda_transport.hpp"
#include "colltune/collectives/executor.hpp"
#include "colltune/common/error.hpp"
#include "rank_world.hpp"

namespace colltune::coll::cuda {
namespace {

struct DeviceMessage {
  const std::byte* data = nullptr;
  std::size_t bytes = 0;
  cudaEvent_t ready = nullptr;     // the sender's step began: the data is readable
  cudaEvent_t consumed = nullptr;  // recorded by the receiver once its read is queued
};

using World = detail::RankWorld<DeviceMessage>;

cudaStream_t as_cuda(Stream s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_cuda_event(const DeviceEvent& e) { return static_cast<cudaEvent_t>(e.handle()); }

class VirtualCommunicator final : public DeviceCommunicator {
 public:
  VirtualCommunicator(World& world, int rank, int device) : world_(world), rank_(rank), device_(device) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }
  const RankLayout& layout() const override { return world_.layout(); }
  std::string_view transport() const override { return "cuda"; }
  Stream stream() const override { return stream_.get(); }
  int device() const override { return device_; }

  void barrier(double timeout_s) override {
    synchronize(stream(), timeout_s, "rank " + std::to_string(rank_));
    world_.barrier(rank_, timeout_s);
  }

  void run_step(const Step& step, const StepContext& ctx) override {
    device_codec(ctx.codec, *this);  // a host codec cannot land device bytes
    const std::size_t nsends = post_sends(step, ctx);
    world_.finish_step(rank_, step, ctx, [&](const Op& op, std::byte* dst, const std::byte* init, const DeviceMessage& msg) {
      check(cudaStreamWaitEvent(as_cuda(stream()), msg.ready, 0), "cudaStreamWaitEvent");
      ctx.codec->apply(op.kind, dst, msg.data, op.block.count, init);
      check(cudaEventRecord(msg.consumed, as_cuda(stream())), "cudaEventRecord");
    });
    for (std::size_t k = 0; k < nsends; ++k) consumed_[k].wait_on(stream());
  }

 private:
  std::size_t post_sends(const Step& step, const StepContext& ctx);

  World& world_;
  int rank_;
  int device_;
  DeviceStream stream_;
  DeviceEvent ready_;
  std::vector<DeviceEvent> consumed_;  // one per send of the current step
  DeviceMemory staging_;               // scratch copies of the current step's sends
};

// Steps 1 and 2. Returns the number of sends.
std::size_t VirtualCommunicator::post_sends(const Step& step, const StepContext& ctx) {
  const std::byte* staged = detail::stage_sends(step, ctx, [this](std::size_t bytes) {
    staging_.reserve(bytes, stream());
    return staging_.bytes();
  });
  ready_.record(stream());
  const std::size_t nsends = detail::count_sends(step);
  while (consumed_.size() < nsends) consumed_.emplace_back();
  world_.add_pending(rank_, nsends);
  std::size_t k = 0;
  detail::for_each_send(step, ctx, staged, [&](const Op& op, const std::byte* data, std::size_t bytes) {
    world_.publish(rank_, op.peer, DeviceMessage{data, bytes, as_cuda_event(ready_), as_cuda_event(consumed_[k++])});
  });
  return nsends;
}

}  // namespace

void run_virtual_ranks(const RankLayout& layout, const std::function<void(DeviceCommunicator&)>& fn, int device) {
  if (layout.nranks() <= 0) throw Error("cuda transport: the rank count must be at least 1, got 0");
  require_device("cuda transport");
  if (device < 0 || device >= device_count()) {
    throw Error("cuda transport: device " + std::to_string(device) + " does not exist (" +
                std::to_string(device_count()) + " visible)");
  }
  World world(layout);
  detail::run_rank_threads(world, [&](int r) {
    set_device(device);
    VirtualCommunicator comm(world, r, device);
    fn(comm);
    // Nothing may still read this rank's buffers or events when fn's buffers go away.
    synchronize(comm.stream());
  });
}

}  // namespace colltune::coll::cuda
