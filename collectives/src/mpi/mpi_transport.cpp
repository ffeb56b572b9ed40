// The MPI transport (see mpi.hpp). One step: post every receive (straight into the working
// buffer when it is a plain copy that overlaps no send of the step, else into staging), post
// every send (straight from the buffer unless the codec encodes), MPI_Testall until all
// complete or the timeout passes, then land the staged receives in op order.
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <string>

#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/mpi.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "mpi_poll.hpp"

namespace colltune::coll {
namespace {

constexpr std::size_t kNoStaging = static_cast<std::size_t>(-1);
constexpr std::size_t kStagingAlign = 64;  // keeps staged blocks aligned for the reducers
constexpr int kTag = 7;

std::size_t align_up(std::size_t n) { return (n + kStagingAlign - 1) / kStagingAlign * kStagingAlign; }

void check_mpi(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(what + ": " + std::string(text, static_cast<std::size_t>(len)));
}

}  // namespace

int ranks_per_host_from_env() {
  const char* text = std::getenv("COLLTUNE_RANKS_PER_HOST");
  if (text == nullptr || *text == '\0') return 0;
  return parse::integer<int>(text, "COLLTUNE_RANKS_PER_HOST", 1, 1 << 20);
}

MpiSession::MpiSession(int* argc, char*** argv) : uncaught_at_start_(std::uncaught_exceptions()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  owns_ = true;
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Unwinding from an error: peers may be blocked on this rank, and MPI_Finalize would wait
  // for them. Abort ends the whole job instead of hanging it.
  if (std::uncaught_exceptions() > uncaught_at_start_) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Finalize();
}

RankLayout mpi_host_layout(MPI_Comm comm, int ranks_per_host) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> host_of(static_cast<std::size_t>(size));
  if (ranks_per_host > 0) {
    for (int r = 0; r < size; ++r) host_of[static_cast<std::size_t>(r)] = r / ranks_per_host;
    return RankLayout(std::move(host_of));
  }
  // A host is identified by the lowest rank among the ranks that share its memory.
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  int leader = rank;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  std::vector<int> leaders(static_cast<std::size_t>(size));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  std::vector<int> id_of_leader(static_cast<std::size_t>(size), -1);
  int hosts = 0;
  for (int r = 0; r < size; ++r) {
    int& id = id_of_leader[static_cast<std::size_t>(leaders[static_cast<std::size_t>(r)])];
    if (id < 0) id = hosts++;
    host_of[static_cast<std::size_t>(r)] = id;
  }
  return RankLayout(std::move(host_of));
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, MpiOptions options) : options_(options) {
  if (options_.max_message_bytes == 0 || options_.max_message_bytes > static_cast<std::size_t>(INT_MAX)) {
    throw Error("MPI transport: max_message_bytes must be in [1, 2^31-1], got " +
                std::to_string(options_.max_message_bytes));
  }
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  // Errors come back as return codes we turn into colltune::Error, not as an abort.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  layout_ = mpi_host_layout(comm_, options_.ranks_per_host);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

// Posts one logical message as pieces of at most max_message_bytes (at least one piece, so
// an empty block still pairs with its receive).
void MpiCommunicator::post_message(bool send, std::byte* data, std::size_t bytes, int peer) {
  std::size_t done = 0;
  do {
    const std::size_t piece = std::min(bytes - done, options_.max_message_bytes);
    MPI_Request req = MPI_REQUEST_NULL;
    const int n = static_cast<int>(piece);
    const int rc = send ? MPI_Isend(data + done, n, MPI_BYTE, peer, kTag, comm_, &req)
                        : MPI_Irecv(data + done, n, MPI_BYTE, peer, kTag, comm_, &req);
    check_mpi(rc, "rank " + std::to_string(rank_) + (send ? ": MPI_Isend to " : ": MPI_Irecv from ") + std::to_string(peer));
    requests_.push_back(req);
    request_peer_.push_back(send ? -1 - peer : peer);
    request_bytes_.push_back(n);
    done += piece;
  } while (done < bytes);
}

void MpiCommunicator::post_receives(const Step& step, const StepContext& ctx) {
  const std::size_t wire = ctx.codec->wire_elem_size();
  recv_offsets_.assign(step.ops.size(), kNoStaging);
  std::size_t total = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind == OpKind::send) continue;
    const bool direct = op.kind == OpKind::recv_copy && !ctx.codec->encodes() && !overlaps_a_send(step, op);
    if (direct) continue;
    recv_offsets_[i] = total;
    total += align_up(op.block.count * wire);
  }
  // Sized before posting: the vector must not move while receives are in flight.
  if (recv_staging_.size() < total) recv_staging_.resize(total);
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind == OpKind::send) continue;
    std::byte* dst = recv_offsets_[i] == kNoStaging ? ctx.buffer + op.block.offset * ctx.elem_size
                                                    : recv_staging_.data() + recv_offsets_[i];
    post_message(false, dst, op.block.count * wire, op.peer);
  }
}

void MpiCommunicator::post_sends(const Step& step, const StepContext& ctx) {
  const std::size_t wire = ctx.codec->wire_elem_size();
  std::size_t total = 0;
  if (ctx.codec->encodes()) {
    for (const Op& op : step.ops) total += op.kind == OpKind::send ? align_up(op.block.count * wire) : 0;
    if (send_staging_.size() < total) send_staging_.resize(total);
  }
  std::size_t pos = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::send) continue;
    // MPI_Isend takes a non-const pointer but only reads it.
    auto* src = const_cast<std::byte*>(ctx.send_data(i, op));
    if (ctx.codec->encodes()) {
      ctx.codec->encode(src, op.block.count, send_staging_.data() + pos);
      src = send_staging_.data() + pos;
      pos += align_up(op.block.count * wire);
    }
    post_message(true, src, op.block.count * wire, op.peer);
  }
}

void MpiCommunicator::wait_all(const StepContext& ctx) {
  const int n = static_cast<int>(requests_.size());
  statuses_.resize(requests_.size());
  int rc = MPI_SUCCESS;
  const bool done = detail::poll_until(
      [&] {
        int flag = 0;
        rc = MPI_Testall(n, requests_.data(), &flag, statuses_.data());
        return flag != 0 || rc != MPI_SUCCESS;
      },
      ctx.timeout_s);
  check_mpi(rc, step_where(rank_, ctx.step_index) + ": MPI_Testall");
  if (!done) {
    std::string peers;
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      int flag = 0;
      MPI_Request_get_status(requests_[i], &flag, MPI_STATUS_IGNORE);
      if (flag) continue;
      const int p = request_peer_[i];
      peers += (peers.empty() ? "" : ", ") + (p < 0 ? "send to peer " + std::to_string(-1 - p)
                                                    : "receive from peer " + std::to_string(p));
      // Withdraw it, so a late message cannot land in a buffer the caller has released.
      MPI_Cancel(&requests_[i]);
      MPI_Request_free(&requests_[i]);
    }
    throw TimeoutError(step_where(rank_, ctx.step_index) + ": timed out after " + std::to_string(ctx.timeout_s) +
                       " s (pending: " + peers + ")");
  }
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    if (request_peer_[i] < 0) continue;
    int got = 0;
    MPI_Get_count(&statuses_[i], MPI_BYTE, &got);
    if (got != request_bytes_[i]) {
      throw Error(step_where(rank_, ctx.step_index) + ": message from peer " + std::to_string(request_peer_[i]) +
                  " has " + std::to_string(got) + " bytes, the receive expects " + std::to_string(request_bytes_[i]));
    }
  }
}

void MpiCommunicator::apply_receives(const Step& step, const StepContext& ctx) {
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    if (recv_offsets_[i] == kNoStaging) continue;
    const Op& op = step.ops[i];
    ctx.codec->apply(op.kind, ctx.buffer + op.block.offset * ctx.elem_size, recv_staging_.data() + recv_offsets_[i],
                     op.block.count, ctx.reduce_init(i, op));
  }
}

void MpiCommunicator::run_step(const Step& step, const StepContext& ctx) {
  requests_.clear();
  request_peer_.clear();
  request_bytes_.clear();
  post_receives(step, ctx);
  post_sends(step, ctx);
  wait_all(ctx);
  apply_receives(step, ctx);
}

void MpiCommunicator::barrier(double timeout_s) {
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
  const bool done = detail::poll_until(
      [&] {
        int flag = 0;
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        return flag != 0;
      },
      timeout_s);
  if (!done) throw TimeoutError("rank " + std::to_string(rank_) + ": barrier timed out after " + std::to_string(timeout_s) + " s");
}

}  // namespace colltune::coll
