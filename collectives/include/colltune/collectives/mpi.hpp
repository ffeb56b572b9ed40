#pragma once
// The MPI transport: ranks are MPI processes (one machine or many, under mpirun). All ops of a
// step are posted together as MPI_Isend/MPI_Irecv and completed with an MPI_Testall loop under a
// timeout. Messages longer than an MPI count allows (2^31-1 bytes) are split into pieces that
// both sides cut identically. Only built when MPI is found (COLLTUNE_HAVE_MPI=1).
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <vector>

#include "colltune/collectives/communicator.hpp"
#include "colltune/collectives/dtype.hpp"

namespace colltune::coll {

struct MpiOptions {
  // 0: ranks that share memory (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) form a host.
  // k > 0: emulate hosts of k consecutive ranks (the last one may hold fewer).
  int ranks_per_host = 0;
  // Largest single MPI message; longer blocks travel in several pieces.
  std::size_t max_message_bytes = static_cast<std::size_t>(INT_MAX);
};

// COLLTUNE_RANKS_PER_HOST from the environment (0 when unset); throws colltune::Error when it
// is not a positive integer.
int ranks_per_host_from_env();

// MPI_Init_thread / MPI_Finalize for the lifetime of the object. When MPI is already
// initialised it does neither. If destroyed during stack unwinding (an error on this rank) it
// calls MPI_Abort instead of MPI_Finalize, because finalising would wait for peers that may
// themselves be waiting for this rank.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession();

 private:
  bool owns_ = false;
  int uncaught_at_start_ = 0;
};

// Host layout of `comm`: from shared-memory groups, or emulated with ranks_per_host > 0.
// Collective over comm.
RankLayout mpi_host_layout(MPI_Comm comm, int ranks_per_host);

class MpiCommunicator final : public Communicator {
 public:
  // Collective over `comm` (duplicated, so our messages never mix with the caller's).
  explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD, MpiOptions options = {});
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const RankLayout& layout() const override { return layout_; }
  std::string_view transport() const override { return "mpi"; }
  void run_step(const Step& step, const StepContext& ctx) override;
  void barrier(double timeout_s) override;

  MPI_Comm comm() const { return comm_; }
  const MpiOptions& options() const { return options_; }

 private:
  void post_sends(const Step& step, const StepContext& ctx);
  void post_receives(const Step& step, const StepContext& ctx);
  void wait_all(const StepContext& ctx);
  void apply_receives(const Step& step, const StepContext& ctx);
  void post_message(bool send, std::byte* data, std::size_t bytes, int peer);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  MpiOptions options_;
  RankLayout layout_;
  // Per-step state, kept between steps so buffers are reused, not reallocated.
  std::vector<MPI_Request> requests_;
  std::vector<int> request_peer_;   // peer of each request; sends as -1 - peer
  std::vector<int> request_bytes_;  // bytes posted by each request
  std::vector<MPI_Status> statuses_;
  std::vector<std::byte> send_staging_;
  std::vector<std::byte> recv_staging_;
  std::vector<std::size_t> recv_offsets_;  // per op: offset into recv_staging_, or npos (direct)
};

// The vendor baseline: MPI_Allreduce over comm (avg = MPI_SUM then 1/p; fp16/bf16 through
// user-defined MPI ops over coll::reduce). in == out is the in-place form. Run as
// MPI_Iallreduce polled under `timeout_s`: a peer that never joins (stopped, hung) ends the
// wait with TimeoutError. A collective cannot be cancelled, so after a timeout the
// communicator is unusable and `out` may still be written: end the job (MPI_Abort).
void mpi_allreduce(const MpiCommunicator& comm, const void* in, void* out, std::size_t count, DType dtype,
                   ReduceOp op, double timeout_s = kDefaultTimeoutS);

}  // namespace colltune::coll
