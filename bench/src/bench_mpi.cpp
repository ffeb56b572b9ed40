// The MPI bench: the same SPMD sweep as the threads bench, over MPI processes, with
// MPI_Allreduce ("mpi") available as the vendor baseline in the same run.
#ifdef COLLTUNE_HAVE_MPI
#include "colltune/bench/bench_mpi.hpp"

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_detail.hpp"
#include "colltune/common/error.hpp"

namespace colltune::bench {
namespace {

RunnerFactory mpi_runners(const BenchConfig& config, coll::MpiCommunicator& mpi) {
  RunnerFactory ours = registry_runners(config);
  return [config, ours, &mpi](coll::Communicator& comm, const std::string& algorithm) -> AllreduceRunner {
    if (algorithm != "mpi") return ours(comm, algorithm);
    // The baseline reduces in the input dtype: --fp16-compress applies to our algorithms only.
    return [&mpi, config](const void* in, void* out, std::size_t count) {
      coll::mpi_allreduce(mpi, in, out, count, config.dtype, config.op, config.timeout_s);
    };
  };
}

// A fingerprint of the host layout this rank uses (which host each rank is on): ranks started
// with different COLLTUNE_RANKS_PER_HOST values build different layouts from the same arguments,
// and a per-host algorithm would then pair messages that never match.
std::uint64_t layout_fingerprint(const RankLayout& layout, int size) {
  std::uint64_t h = 14695981039346656037ULL;
  for (int r = 0; r < size; ++r) {
    h ^= static_cast<std::uint64_t>(layout.host_of(r));
    h *= 1099511628211ULL;
  }
  return h;
}

// "1, 2 (2 of 3)": the ranks whose entry `field` of `all` (two per rank) differs from rank 0's.
std::string ranks_differing(const std::vector<std::uint64_t>& all, std::size_t field, int size) {
  std::string differing;
  int count = 0;
  for (std::size_t r = 1; r < static_cast<std::size_t>(size); ++r) {
    if (all[2 * r + field] == all[field]) continue;
    if (++count <= 8) differing += (differing.empty() ? "" : ", ") + std::to_string(r);
  }
  if (count == 0) return "";
  if (count > 8) differing += ", ...";
  return differing + " (" + std::to_string(count) + " of " + std::to_string(size) + ")";
}

// Every rank's fingerprints of its configuration and of its host layout, gathered before the
// first collective (under the timeout, as every wait): ranks started with different arguments
// would post collectives of different sizes and write past each other's buffers; ranks with
// different layouts would wait for messages that are never sent.
void agree_on_config(const BenchConfig& config, const coll::MpiCommunicator& comm) {
  const std::uint64_t mine[2] = {config_fingerprint(config), layout_fingerprint(comm.layout(), comm.size())};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(comm.size()));
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Iallgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm.comm(), &req);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(config.timeout_s);
  for (int flag = 0; !flag;) {
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (!flag && std::chrono::steady_clock::now() > deadline)
      throw TimeoutError("rank " + std::to_string(comm.rank()) + ": timed out after " + std::to_string(config.timeout_s) +
                         " s comparing the bench configuration with the other ranks (a rank did not start?)");
    if (!flag) std::this_thread::yield();
  }
  if (const std::string args = ranks_differing(all, 0, comm.size()); !args.empty())
    throw ConfigMismatch("the ranks were started with different bench arguments: rank(s) " + args +
                         " differ from rank 0; every rank must run the same command");
  if (const std::string hosts = ranks_differing(all, 1, comm.size()); !hosts.empty())
    throw ConfigMismatch("the ranks were started with different host layouts: rank(s) " + hosts +
                         " differ from rank 0 (rank 0: " + std::to_string(comm.layout().nhosts()) +
                         " host(s)); give every rank the same COLLTUNE_RANKS_PER_HOST or --ranks-per-host");
}

}  // namespace

BenchReport run_mpi_bench(const BenchConfig& config, coll::MpiCommunicator& comm, std::ostream* out) {
  validate_config(config, comm.size());
  agree_on_config(config, comm);
  const RunnerFactory runners = mpi_runners(config, comm);
  const bool root = comm.rank() == 0;
  BenchReport report = detail::host_report(config, comm.size(), comm.layout().nhosts(), root);
  return detail::run_report(std::move(report), root, out,
                            [&](const RowSink& sink) { return run_sweep(comm, config, runners, sink); });
}

}  // namespace colltune::bench
#endif  // COLLTUNE_HAVE_MPI
