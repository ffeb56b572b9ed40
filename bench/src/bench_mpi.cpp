// The MPI bench: the same SPMD sweep as the threads bench, over MPI processes, with
// MPI_Allreduce ("mpi") available as the vendor baseline in the same run.
#ifdef COLLTUNE_HAVE_MPI
#include "colltune/bench/bench_mpi.hpp"

#include <ostream>

#include "colltune/common/atomic_file.hpp"

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
  BenchReport report;
  report.config = config;
  report.nranks = comm.size();
  report.nhosts = comm.layout().nhosts();
  const bool root = comm.rank() == 0;
  if (config.measure_memcpy && root) report.memcpy_gbps = memcpy_bandwidth_gbps(config.max_bytes);
  if (out && root) *out << table_header(report) << std::flush;
  const RowSink sink = [&](const BenchRow& row) {
    if (out) *out << table_row(row, config) << std::flush;
  };
  report.rows = run_sweep(comm, config, mpi_runners(config, comm), sink);
  if (out && root) *out << table_footer(report) << std::flush;
  if (root && !config.json_path.empty()) write_file_atomic(config.json_path, report_json(report));
  return report;
}

}  // namespace colltune::bench
#endif  // COLLTUNE_HAVE_MPI
