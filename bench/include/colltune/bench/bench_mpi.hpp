#pragma once
// The MPI side of `colltune bench`: the sweep over MPI processes, with "mpi" (MPI_Allreduce)
// as the vendor baseline next to our algorithms. Only with COLLTUNE_HAVE_MPI.
#include <iosfwd>

#include "colltune/bench/bench.hpp"
#include "colltune/collectives/mpi.hpp"

namespace colltune::bench {

// Every process calls it; rank 0 prints the table to `out` (when non-null) and returns the
// full report; the others return theirs too (rows aggregated over ranks).
BenchReport run_mpi_bench(const BenchConfig& config, coll::MpiCommunicator& comm, std::ostream* out);

}  // namespace colltune::bench
