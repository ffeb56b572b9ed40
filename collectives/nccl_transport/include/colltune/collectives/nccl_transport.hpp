#pragma once
// The `nccl` transport: one rank per GPU, NCCL point-to-point as the wire (built when NCCL is
// found, COLLTUNE_HAVE_NCCL=1). It plugs into the executor as the `cuda` transport does
// (cuda_transport.hpp): a DeviceCommunicator, with the DeviceCodec's kernels landing blocks.
//
// One schedule step on rank r, all on r's stream:
// 1. a receive that overlaps a send of the step (or a second receive into the same elements)
//    cannot land in place: sends that a receive overlaps are copied to send scratch first, and
//    such receives, and every receive-reduce, arrive in receive scratch;
// 2. ncclGroupStart; ncclSend/ncclRecv of every op of the step, in op order (NCCL matches the
//    k-th send to a peer with the peer's k-th receive from r, as the schedule does); ncclGroupEnd;
// 3. the landing kernels: reduce (or copy) each receive from scratch into the buffer.
// So sends read the buffer as the step began and receives land when it ends. Zero-length
// blocks are not posted (both sides know the length from the schedule).
//
// NCCL communicators are created non-blocking, so that initialisation and every group can be
// waited for with the timeout; a rank that times out aborts its communicator (ncclCommAbort),
// which also frees peers stuck with it.
#include <functional>
#include <memory>

#include "colltune/collectives/cuda_transport.hpp"
#ifdef COLLTUNE_HAVE_MPI
#include "colltune/collectives/mpi.hpp"
#endif

namespace colltune::coll::nccl {

// Single process: runs fn(comm) for ranks 0..ngpus-1, rank r on GPU r with its own host
// thread. If a rank throws, the first exception is rethrown after every thread ended (the
// others end by their timeouts or by NCCL's abort). Throws colltune::Error "nccl transport:
// no CUDA device (...)" without a device, and names the counts when ngpus exceeds the GPUs.
void run_threads(int ngpus, const std::function<void(cuda::DeviceCommunicator&)>& fn,
                 double timeout_s = kDefaultTimeoutS);

#ifdef COLLTUNE_HAVE_MPI
// Multi-process: every MPI rank of `mpi` calls it; rank 0's ncclUniqueId is broadcast over MPI;
// the rank uses GPU (local rank on its host) and the host layout is mpi's. Throws
// colltune::Error when a host has more ranks than GPUs.
std::unique_ptr<cuda::DeviceCommunicator> from_mpi(const MpiCommunicator& mpi, double timeout_s = kDefaultTimeoutS);
#endif

// The vendor baseline: ncclAllReduce over `comm` (which must be an nccl communicator) on its
// stream. avg is ncclSum followed by the 1/p scale, like the other back ends; in == out is in
// place. Returns when queued.
void allreduce(cuda::DeviceCommunicator& comm, const void* in, void* out, std::size_t count, DType dtype,
               ReduceOp op);

}  // namespace colltune::coll::nccl
