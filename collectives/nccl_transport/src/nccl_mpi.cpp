// The nccl transport across MPI processes: one GPU per local rank, NCCL's unique id from rank 0
// broadcast over MPI. Built when MPI is found too.
#ifdef COLLTUNE_HAVE_MPI
#include <string>

#include "colltune/collectives/nccl_transport.hpp"
#include "colltune/common/error.hpp"
#include "nccl_detail.hpp"

namespace colltune::coll::nccl {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string("nccl transport: ") + what + " failed (MPI error " + std::to_string(rc) + ")");
}

// This process's rank among the processes of its host (shared-memory group), and their count.
std::pair<int, int> local_rank(MPI_Comm comm) {
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  int rank = 0, size = 0;
  MPI_Comm_rank(local, &rank);
  MPI_Comm_size(local, &size);
  MPI_Comm_free(&local);
  return {rank, size};
}

}  // namespace

std::unique_ptr<cuda::DeviceCommunicator> from_mpi(const MpiCommunicator& mpi, double timeout_s) {
  const auto [local, local_size] = local_rank(mpi.comm());
  const int gpus = cuda::device_count();
  // Agree before anyone blocks in NCCL: every rank learns whether every host has enough GPUs.
  int ok = local_size <= gpus ? 1 : 0, all_ok = 0;
  check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, mpi.comm()), "MPI_Allreduce");
  if (all_ok == 0) {
    throw Error("nccl transport: a host runs more ranks than it has GPUs (this one: " + std::to_string(local_size) +
                " rank(s), " + std::to_string(gpus) + " GPU(s)); one GPU per rank");
  }
  ncclUniqueId id;
  if (mpi.rank() == 0) detail::check(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId");
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpi.comm()), "MPI_Bcast (ncclUniqueId)");
  cuda::set_device(local);
  return std::make_unique<NcclCommunicator>(detail::init_rank(mpi.size(), id, mpi.rank(), timeout_s), mpi.rank(),
                                            mpi.size(), mpi.layout(), local, timeout_s);
}

}  // namespace colltune::coll::nccl
#endif
