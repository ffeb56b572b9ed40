#pragma once
// Internals of the nccl transport shared by its files: the communicator class, error checks,
// waiting for a non-blocking communicator, and the type mappings.
#include <nccl.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "colltune/collectives/cuda_transport.hpp"

namespace colltune::coll::nccl {

namespace detail {

// colltune::Error naming `what`, NCCL's message and its last error text, unless r is success or
// in progress (a non-blocking call that is still running: see wait_ready).
void check(ncclResult_t r, ncclComm_t comm, std::string_view what);
// Waits until the communicator's pending operation finished; TimeoutError (after aborting the
// communicator) past timeout_s.
void wait_ready(ncclComm_t comm, double timeout_s, std::string_view what);
// A non-blocking communicator for `rank`, initialised within the timeout.
ncclComm_t init_rank(int nranks, const ncclUniqueId& id, int rank, double timeout_s);
ncclDataType_t to_nccl(DType t);
ncclRedOp_t to_nccl(ReduceOp op);

}  // namespace detail

class NcclCommunicator final : public cuda::DeviceCommunicator {
 public:
  // Owns `comm` (a non-blocking ncclComm_t for `rank` on `device`, the current device).
  NcclCommunicator(ncclComm_t comm, int rank, int nranks, RankLayout layout, int device, double timeout_s);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }
  const RankLayout& layout() const override { return layout_; }
  std::string_view transport() const override { return "nccl"; }
  cuda::Stream stream() const override { return stream_.get(); }
  int device() const override { return device_; }
  void run_step(const Step& step, const StepContext& ctx) override;
  // An ncclAllReduce of one element, then the stream's work, within the timeout.
  void barrier(double timeout_s) override;

  ncclComm_t handle() const { return comm_; }
  double timeout_s() const { return timeout_s_; }
  // Runs body; a failure marks the communicator failed (the destructor then aborts it).
  void guarded(const std::function<void()>& body);

 private:
  // Where an op of the current step reads (send) or lands (receive): in scratch or in place.
  struct Place {
    bool staged = false;
    std::size_t offset = 0;  // into the send or receive scratch
  };
  void plan(const Step& step, const StepContext& ctx);
  void post(const Op& op, std::size_t i, const StepContext& ctx);
  std::string where(std::string_view what) const;

  ncclComm_t comm_;
  int rank_;
  int nranks_;
  RankLayout layout_;
  int device_;
  double timeout_s_;
  bool failed_ = false;
  cuda::DeviceStream stream_;
  cuda::DeviceMemory send_staging_, recv_staging_;
  std::vector<Place> places_;
};

}  // namespace colltune::coll::nccl
