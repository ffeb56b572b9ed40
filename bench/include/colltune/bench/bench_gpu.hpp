#pragma once
// The GPU side of `colltune bench`: the same sweep and table on device buffers.
// - `cuda` (COLLTUNE_HAVE_CUDA): config.ranks virtual ranks on one GPU (cuda_transport.hpp);
// - `nccl` (COLLTUNE_HAVE_NCCL): one rank per GPU, one thread per GPU in this process, or one
//   MPI process per GPU under mpirun. Where there is more than one GPU the ncclAllReduce vendor
//   baseline ("nccl") joins the algorithms of the same run.
// Each report carries the GPU's description and a device-to-device copy of max_bytes as its
// yardstick. Throws colltune::Error "--transport cuda: no CUDA device (...)" without a device.
#include <iosfwd>

#include "colltune/bench/bench.hpp"
#ifdef COLLTUNE_HAVE_NCCL
#ifdef COLLTUNE_HAVE_MPI
#include "colltune/collectives/mpi.hpp"
#endif
#endif

namespace colltune::bench {

#ifdef COLLTUNE_HAVE_CUDA
BenchReport run_cuda_bench(const BenchConfig& config, std::ostream* out);
// Device-to-device copy bandwidth in GB/s over `bytes` on the current GPU (best of several).
double device_copy_bandwidth_gbps(std::size_t bytes);
#endif

#ifdef COLLTUNE_HAVE_NCCL
// One thread per GPU: config.ranks GPUs, all of them when 0.
BenchReport run_nccl_bench(BenchConfig config, std::ostream* out);
#ifdef COLLTUNE_HAVE_MPI
// One process per GPU: every process of `mpi` calls it; rank 0 prints.
BenchReport run_nccl_mpi_bench(BenchConfig config, const coll::MpiCommunicator& mpi, std::ostream* out);
#endif
#endif

}  // namespace colltune::bench
