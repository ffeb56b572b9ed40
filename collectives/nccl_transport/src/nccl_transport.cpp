// The `nccl` transport (see nccl_transport.hpp): the communicator, its step, the single-process
// launcher and the ncclAllReduce baseline.
#include "colltune/collectives/nccl_transport.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "colltune/collectives/executor.hpp"
#include "colltune/common/error.hpp"
#include "nccl_detail.hpp"
#include "rank_world.hpp"

namespace colltune::coll::nccl {
namespace detail {

void check(ncclResult_t r, ncclComm_t comm, std::string_view what) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  const char* last = comm != nullptr ? ncclGetLastError(comm) : nullptr;
  throw Error(std::string(what) + ": " + ncclGetErrorString(r) + (last != nullptr && *last ? std::string(" (") + last + ")" : ""));
}

// A non-blocking communicator's pending operation (init, group) is done when its async error
// is no longer ncclInProgress. Polls with growing sleeps; aborts the communicator on timeout.
void wait_ready(ncclComm_t comm, double timeout_s, std::string_view what) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::chrono::microseconds sleep{0};
  for (;;) {
    ncclResult_t state = ncclSuccess;
    check(ncclCommGetAsyncError(comm, &state), comm, std::string(what) + ": ncclCommGetAsyncError");
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) check(state, comm, what);
    if (Clock::now() > deadline) {
      ncclCommAbort(comm);
      throw TimeoutError(std::string(what) + ": NCCL did not finish within " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::microseconds(200)) sleep += std::chrono::microseconds(10);
  }
}

ncclComm_t init_rank(int nranks, const ncclUniqueId& id, int rank, double timeout_s) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  check(ncclCommInitRankConfig(&comm, nranks, id, rank, &config), nullptr,
        "ncclCommInitRankConfig (rank " + std::to_string(rank) + " of " + std::to_string(nranks) + ")");
  wait_ready(comm, timeout_s, "rank " + std::to_string(rank) + ": NCCL initialisation");
  return comm;
}

ncclDataType_t to_nccl(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
  }
  throw Error("nccl: unknown dtype value " + std::to_string(static_cast<int>(t)));
}

ncclRedOp_t to_nccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return ncclSum;  // avg: the 1/p scale follows, as in every back end
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
  }
  throw Error("nccl: unknown reduce op value " + std::to_string(static_cast<int>(op)));
}

}  // namespace detail

namespace {

constexpr std::size_t kAlign = 16;  // scratch offsets keep the destination's alignment mod 16

std::size_t align_like(std::size_t pos, const std::byte* dst) {
  const std::size_t want = reinterpret_cast<std::uintptr_t>(dst) % kAlign;
  const std::size_t base = (pos + kAlign - 1) / kAlign * kAlign;
  return base + want;
}

// What run_rank_threads needs of a world: NCCL ranks have no host rendezvous to abort, a rank
// that fails is noticed by its peers' timeouts (and NCCL's abort of its communicator).
struct Ranks {
  int n;
  int size() const { return n; }
  void abort(int) {}
};

bool overlaps_another_receive(const Step& step, std::size_t i) {
  for (std::size_t j = 0; j < step.ops.size(); ++j) {
    if (j != i && step.ops[j].kind != OpKind::send && overlaps(step.ops[j].block, step.ops[i].block)) return true;
  }
  return false;
}

}  // namespace

NcclCommunicator::NcclCommunicator(ncclComm_t comm, int rank, int nranks, RankLayout layout, int device, double timeout_s)
    : comm_(comm), rank_(rank), nranks_(nranks), layout_(std::move(layout)), device_(device), timeout_s_(timeout_s) {}

NcclCommunicator::~NcclCommunicator() {
  ncclComm_t comm = comm_;
  if (comm == nullptr) return;
  // A rank that failed (or was torn down by an exception) aborts: finalising would wait for
  // peers that may never come. Otherwise finalise, with the timeout, then destroy.
  if (failed_ || std::uncaught_exceptions() > 0) {
    ncclCommAbort(comm);
    return;
  }
  try {
    detail::check(ncclCommFinalize(comm), comm, "ncclCommFinalize");
    detail::wait_ready(comm, timeout_s_, "rank " + std::to_string(rank_) + ": NCCL finalisation");
    ncclCommDestroy(comm);
  } catch (...) {
    // wait_ready aborted the communicator already; nothing else can be done in a destructor.
  }
}

void NcclCommunicator::barrier(double timeout_s) {
  cuda::DeviceMemory& one = scratch(sizeof(float));
  guarded([&] {
    ncclComm_t comm = comm_;
    detail::check(ncclAllReduce(one.get(), one.get(), 1, ncclFloat32, ncclSum, comm, static_cast<cudaStream_t>(stream())),
                  comm, "ncclAllReduce (barrier)");
    detail::wait_ready(comm, timeout_s, where("barrier"));
    cuda::synchronize(stream(), timeout_s, where("barrier"));
  });
}

std::string NcclCommunicator::where(std::string_view what) const {
  return "rank " + std::to_string(rank_) + " " + std::string(what);
}

// Step 1: where each op of the step reads or lands (see the file comment of the header).
void NcclCommunicator::plan(const Step& step, const StepContext& ctx) {
  const bool overlap = receive_overlaps_send(step);
  places_.assign(step.ops.size(), Place{});
  std::size_t send_pos = 0, recv_pos = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    const std::size_t bytes = op.block.count * ctx.elem_size;
    std::byte* dst = ctx.buffer + op.block.offset * ctx.elem_size;
    if (op.kind == OpKind::send) {
      places_[i] = Place{overlap, send_pos};
      send_pos += overlap ? bytes : 0;
    } else if (op.kind == OpKind::recv_reduce || overlaps_a_send(step, op) || overlaps_another_receive(step, i)) {
      recv_pos = align_like(recv_pos, dst);
      places_[i] = Place{true, recv_pos};
      recv_pos += bytes;
    }
  }
  send_staging_.reserve(send_pos, stream());
  recv_staging_.reserve(recv_pos + kAlign, stream());
}

void NcclCommunicator::run_step(const Step& step, const StepContext& ctx) {
  const cuda::DeviceCodec& codec = cuda::device_codec(ctx.codec, *this);
  guarded([&] {
    plan(step, ctx);
    for (std::size_t i = 0; i < step.ops.size(); ++i) {  // scratch copies of overlapped sends
      const Op& op = step.ops[i];
      if (op.kind == OpKind::send && places_[i].staged) {
        codec.encode(ctx.send_data(i, op), op.block.count, send_staging_.bytes() + places_[i].offset);
      }
    }
    detail::check(ncclGroupStart(), comm_, where("ncclGroupStart"));
    for (std::size_t i = 0; i < step.ops.size(); ++i) post(step.ops[i], i, ctx);
    detail::check(ncclGroupEnd(), comm_, where("ncclGroupEnd"));
    detail::wait_ready(comm_, ctx.timeout_s, step_where(rank_, ctx.step_index));
    for (std::size_t i = 0; i < step.ops.size(); ++i) {  // step 3: land what arrived in scratch
      const Op& op = step.ops[i];
      if (op.kind == OpKind::send || !places_[i].staged) continue;
      codec.apply(op.kind, ctx.buffer + op.block.offset * ctx.elem_size, recv_staging_.bytes() + places_[i].offset,
                  op.block.count, ctx.reduce_init(i, op));
    }
  });
}

// Step 2, one op.
void NcclCommunicator::post(const Op& op, std::size_t i, const StepContext& ctx) {
  const std::size_t bytes = op.block.count * ctx.elem_size;
  if (bytes == 0) return;
  ncclComm_t comm = comm_;
  const auto st = static_cast<cudaStream_t>(stream());
  const Place& place = places_[i];
  if (op.kind == OpKind::send) {
    const std::byte* src = place.staged ? send_staging_.bytes() + place.offset : ctx.send_data(i, op);
    detail::check(ncclSend(src, bytes, ncclUint8, op.peer, comm, st), comm, where("ncclSend"));
  } else {
    std::byte* dst = place.staged ? recv_staging_.bytes() + place.offset : ctx.buffer + op.block.offset * ctx.elem_size;
    detail::check(ncclRecv(dst, bytes, ncclUint8, op.peer, comm, st), comm, where("ncclRecv"));
  }
}

void NcclCommunicator::guarded(const std::function<void()>& body) {
  try {
    body();
  } catch (...) {
    failed_ = true;
    throw;
  }
}

void run_threads(int ngpus, const std::function<void(cuda::DeviceCommunicator&)>& fn, double timeout_s) {
  cuda::require_device("nccl transport");
  const int have = cuda::device_count();
  if (ngpus < 1 || ngpus > have) {
    throw Error("nccl transport: " + std::to_string(ngpus) + " rank(s) need as many GPUs, this machine has " +
                std::to_string(have));
  }
  ncclUniqueId id;
  detail::check(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId");
  Ranks ranks{ngpus};
  coll::detail::run_rank_threads(ranks, [&](int r) {
    cuda::set_device(r);
    NcclCommunicator comm(detail::init_rank(ngpus, id, r, timeout_s), r, ngpus, RankLayout::single_host(ngpus), r,
                          timeout_s);
    fn(comm);
    cuda::synchronize(comm.stream(), timeout_s, "rank " + std::to_string(r));
  });
}

void allreduce(cuda::DeviceCommunicator& comm, const void* in, void* out, std::size_t count, DType dtype, ReduceOp op) {
  auto* nccl = dynamic_cast<NcclCommunicator*>(&comm);
  if (nccl == nullptr) {
    throw Error("ncclAllReduce needs the nccl transport, not " + std::string(comm.transport()));
  }
  nccl->guarded([&] {
    ncclComm_t c = nccl->handle();
    detail::check(ncclAllReduce(in, out, count, detail::to_nccl(dtype), detail::to_nccl(op), c,
                                static_cast<cudaStream_t>(comm.stream())),
                  c, "ncclAllReduce");
    detail::wait_ready(c, nccl->timeout_s(), "ncclAllReduce");
    if (op == ReduceOp::avg) cuda::scale(dtype, out, count, 1.0 / comm.size(), comm.stream());
  });
}

}  // namespace colltune::coll::nccl
