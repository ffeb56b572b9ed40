// The `cuda` transport: virtual ranks on one GPU (see cuda_transport.hpp for the design).
//
// One step of rank r, all on r's stream, the host never waiting for the device:
// 1. If a receive of the step overlaps one of its sends (or the codec encodes), the sent blocks
//    are first copied to r's staging memory, so the peers read them as the step began.
// 2. `ready` is recorded; each send is published as {device pointer, bytes, ready, consumed[k]}
//    where consumed[k] is one of r's events.
// 3. Each receive takes the next message from its peer (host rendezvous, with the timeout),
//    makes r's stream wait for the message's `ready`, lands it with the codec (a reduce or copy
//    kernel reading the peer's memory), and records the message's `consumed` on r's stream.
// 4. When every message r published was taken (host), r's stream waits for their `consumed`
//    events: r's next step, which may overwrite what it sent, runs only after the peers' reads.
// Events are reused from step to step: a peer waits on `ready` before it reports the message
// consumed, and r re-records `ready` only after all its messages were consumed; consumed[k] is
// recorded by one peer and waited on by r before r's next step records anything.
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
    const DeviceCodec& codec = device_codec(ctx.codec, *this);
    const std::size_t nsends = post_sends(step, ctx, codec);
    try {
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        if (step.ops[i].kind != OpKind::send) receive(step.ops[i], ctx.reduce_init(i, step.ops[i]), ctx, codec);
      }
      world_.wait_consumed(rank_, step, ctx.timeout_s, ctx.step_index);
      for (std::size_t k = 0; k < nsends; ++k) consumed_[k].wait_on(stream());
    } catch (...) {
      world_.retract(rank_, step);
      throw;
    }
  }

 private:
  const std::byte* stage_sends(const Step& step, const StepContext& ctx, const DeviceCodec& codec);
  std::size_t post_sends(const Step& step, const StepContext& ctx, const DeviceCodec& codec);
  void receive(const Op& op, const std::byte* init, const StepContext& ctx, const DeviceCodec& codec);

  World& world_;
  int rank_;
  int device_;
  DeviceStream stream_;
  DeviceEvent ready_;
  std::vector<DeviceEvent> consumed_;  // one per send of the current step
  DeviceMemory staging_;               // scratch copies of the current step's sends
};

// Step 1: a copy of every send, in op order, when a receive of the step overlaps a send.
const std::byte* VirtualCommunicator::stage_sends(const Step& step, const StepContext& ctx,
                                                  const DeviceCodec& codec) {
  if (!receive_overlaps_send(step)) return nullptr;
  std::size_t total = 0;
  for (const Op& op : step.ops) total += op.kind == OpKind::send ? op.block.count * ctx.elem_size : 0;
  staging_.reserve(total, stream());
  std::size_t pos = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::send) continue;
    codec.encode(ctx.send_data(i, op), op.block.count, staging_.bytes() + pos);
    pos += op.block.count * ctx.elem_size;
  }
  return staging_.bytes();
}

// Step 2. Returns the number of sends.
std::size_t VirtualCommunicator::post_sends(const Step& step, const StepContext& ctx, const DeviceCodec& codec) {
  const std::byte* staged = stage_sends(step, ctx, codec);
  ready_.record(stream());
  std::size_t nsends = 0;
  for (const Op& op : step.ops) nsends += op.kind == OpKind::send ? 1 : 0;
  while (consumed_.size() < nsends) consumed_.emplace_back();
  world_.add_pending(rank_, nsends);
  std::size_t pos = 0, k = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::send) continue;
    const std::size_t bytes = op.block.count * ctx.elem_size;
    const std::byte* data = staged ? staged + pos : ctx.send_data(i, op);
    world_.publish(rank_, op.peer, DeviceMessage{data, bytes, as_cuda_event(ready_), as_cuda_event(consumed_[k++])});
    pos += bytes;
  }
  return nsends;
}

// Step 3. The sender is told the message was consumed also when landing throws, so its count
// always balances (its `consumed` event then stays unrecorded, which a wait treats as done).
void VirtualCommunicator::receive(const Op& op, const std::byte* init, const StepContext& ctx,
                                  const DeviceCodec& codec) {
  const DeviceMessage msg = world_.take(rank_, op.peer, ctx.timeout_s, ctx.step_index);
  struct Consumed {
    World& world;
    int sender;
    ~Consumed() { world.consumed(sender); }
  } consumed{world_, op.peer};
  const std::size_t expected = op.block.count * ctx.elem_size;
  if (msg.bytes != expected) {
    throw Error(step_where(rank_, ctx.step_index) + ": message from peer " + std::to_string(op.peer) + " has " +
                std::to_string(msg.bytes) + " bytes, the receive expects " + std::to_string(expected));
  }
  check(cudaStreamWaitEvent(as_cuda(stream()), msg.ready, 0), "cudaStreamWaitEvent");
  codec.apply(op.kind, ctx.buffer + op.block.offset * ctx.elem_size, msg.data, op.block.count, init);
  check(cudaEventRecord(msg.consumed, as_cuda(stream())), "cudaEventRecord");
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
