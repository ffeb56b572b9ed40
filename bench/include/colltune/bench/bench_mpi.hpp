#pragma once
// The MPI side of `colltune bench`: the sweep over MPI processes, with "mpi" (MPI_Allreduce)
// as the vendor baseline next to our algorithms. Only with COLLTUNE_HAVE_MPI.
#include <iosfwd>

#include "colltune/bench/bench.hpp"
#include "colltune/collectives/mpi.hpp"
#include "colltune/common/error.hpp"

namespace colltune::bench {

// Thrown on every rank alike when the ranks' configurations differ (see config_fingerprint):
// every rank knows, so the job can end without MPI_Abort and with one message (rank 0's).
class ConfigMismatch : public Error {
 public:
  using Error::Error;
};

// Every process calls it; rank 0 prints the table to `out` (when non-null) and returns the
// full report; the others return theirs too (rows aggregated over ranks). Before the first
// collective the ranks compare their configurations: ConfigMismatch when they differ.
BenchReport run_mpi_bench(const BenchConfig& config, coll::MpiCommunicator& comm, std::ostream* out);

}  // namespace colltune::bench
