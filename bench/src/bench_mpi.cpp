// The MPI bench: the same SPMD sweep as the threads bench, over MPI processes, with
// MPI_Allreduce ("mpi") available as the vendor baseline in the same run.
#ifdef COLLTUNE_HAVE_MPI
#include "colltune/bench/bench_mpi.hpp"

#include <ostream>
#include <utility>

#include "bench_detail.hpp"

namespace colltune::bench {
namespace {

RunnerFactory mpi_runners(const BenchConfig& config, coll::MpiCommunicator& mpi) {
  RunnerFactory ours = registry_runners(config);
  return [config, ours, &mpi](coll::Communicator& comm, const std::string& algorithm) -> AllreduceRunner {
    if (algorithm != "mpi") return ours(comm, algorithm);
    // The baseline reduces in the input dtype: --fp16-compress applies to our algorithms only.
    return [&mpi, config](const void* in, void* out, std::size_t count) {
      coll::mpi_allreduce(mpi, in, out, count, config.dtype, config.op);
    };
  };
}

}  // namespace

BenchReport run_mpi_bench(const BenchConfig& config, coll::MpiCommunicator& comm, std::ostream* out) {
  validate_config(config, comm.size());
  const RunnerFactory runners = mpi_runners(config, comm);
  const bool root = comm.rank() == 0;
  BenchReport report = detail::host_report(config, comm.size(), comm.layout().nhosts(), root);
  return detail::run_report(std::move(report), root, out,
                            [&](const RowSink& sink) { return run_sweep(comm, config, runners, sink); });
}

}  // namespace colltune::bench
#endif  // COLLTUNE_HAVE_MPI
