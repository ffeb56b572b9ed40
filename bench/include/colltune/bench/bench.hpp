#pragma once
// `colltune bench`: an nccl-tests style allreduce sweep over real ranks (threads of one
// process, MPI processes, virtual ranks on one GPU, or one rank per GPU with NCCL). For each
// size from min to max (times factor) and each algorithm it times `iters` allreduces after
// `warmup` untimed ones, out of place (in -> out) and in place (out -> out), and reports for
// each the time, algbw = bytes / time and busbw = algbw x 2(p-1)/p; with check on it compares
// every rank's result bit-exactly with a host reference (inputs are small integers, so any
// reduction order is exact). The output format: docs/bench.md.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "colltune/collectives/allreduce.hpp"
#include "colltune/collectives/communicator.hpp"

namespace colltune::bench {

enum class Transport { threads, mpi, cuda, nccl };
std::string_view to_string(Transport t);
// "threads" | "mpi" | "cuda" | "nccl"; colltune::Error otherwise
Transport parse_transport(std::string_view name);

struct BenchConfig {
  Transport transport = Transport::threads;
  int ranks = 0;           // threads, cuda: the rank count (required); mpi: taken from mpirun;
                           // nccl: GPUs to use (0: all), under mpirun taken from it
  int ranks_per_host = 0;  // > 0: emulate hosts of this many consecutive ranks
  // registry ids, plus the vendor baselines "mpi" (MPI_Allreduce) and "nccl" (ncclAllReduce)
  std::vector<std::string> algorithms{"ring"};
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 8 * 1024 * 1024;
  std::size_t factor = 2;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  coll::DType dtype = coll::DType::f32;
  coll::ReduceOp op = coll::ReduceOp::sum;
  coll::Compression compression = coll::Compression::none;
  coll::AlgoOptions algo;  // chunking; inner algorithm of hierarchical
  double timeout_s = coll::kDefaultTimeoutS;
  bool measure_memcpy = true;  // a copy of max_bytes as a yardstick (host memcpy or device copy)
  std::string json_path;       // empty: no JSON file; "-": JSON on the output stream instead of the table
};

// Throws colltune::Error naming the offending field and value: unknown algorithm or dtype,
// "mpi" without the MPI transport, an --inner that hierarchical does not take, min > max,
// factor < 2, ranks < 1 or above the limits (limits.hpp), negative iters, sizes whose buffers
// exceed the machine's memory. `nranks` is the rank count that will run.
void validate_config(const BenchConfig& config, int nranks);

// The configuration as every rank must see it: everything that decides which collectives run
// and on how many bytes (not the JSON path or the timeout). MPI ranks compare fingerprints
// of it before their first collective (run_mpi_bench), so ranks started with different
// arguments stop with one message instead of corrupting each other's buffers.
std::string effective_config_text(const BenchConfig& config);
std::uint64_t config_fingerprint(const BenchConfig& config);

// Sizes swept, in bytes, each rounded down to a whole number of elements.
std::vector<std::size_t> sweep_sizes(const BenchConfig& config);

// nccl-tests' allreduce bus-bandwidth factor 2(p-1)/p.
double allreduce_busbw_factor(int nranks);

// One of a row's two measurements (nccl-tests' out-of-place and in-place columns).
struct BenchTiming {
  double time_us = 0;      // the slowest rank's time per allreduce
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  long long wrong = -1;    // wrong elements summed over ranks; -1 when not checked
};

struct BenchRow {
  std::string algorithm;
  std::size_t bytes = 0;
  std::size_t count = 0;
  BenchTiming out_of_place;  // in -> out
  BenchTiming in_place;      // out -> out
  std::string not_applicable;  // non-empty: the algorithm does not apply at this size (row skipped)
};

struct BenchReport {
  BenchConfig config;
  int nranks = 0;
  int nhosts = 0;
  std::string device;        // the GPU for the device transports ("" on the host)
  std::vector<BenchRow> rows;
  double memcpy_gbps = 0;    // the yardstick copy of max_bytes; 0 when not measured
  std::string memcpy_kind;   // what was copied: "memcpy, 1 thread" or "device to device"
  // nccl-tests' average: busbw over the out-of-place and in-place measurements of every row of
  // `algorithm` that ran (0 when none did).
  double avg_busbw_gbps(const std::string& algorithm) const;
  long long total_wrong() const;  // over the checked rows, both measurements
};

// One allreduce: in -> out, count elements (in == out: in place).
using AllreduceRunner = std::function<void(const void* in, void* out, std::size_t count)>;
// Makes the runner for an algorithm id on `comm` (the MPI bench adds "mpi", the NCCL bench "nccl").
using RunnerFactory = std::function<AllreduceRunner(coll::Communicator& comm, const std::string& algorithm)>;
// Called on rank 0 as each row completes (for a live table).
using RowSink = std::function<void(const BenchRow&)>;

// What the sweep needs from a rank besides its communicator: the buffers the collective reads
// and writes (host memory for threads and MPI, device memory for cuda and nccl), and the
// aggregation of per-rank numbers into a row.
class BenchRank {
 public:
  virtual ~BenchRank() = default;
  virtual coll::Communicator& comm() = 0;
  // Input and output buffers of `bytes` (the largest size of the sweep).
  virtual void allocate(std::size_t bytes) = 0;
  virtual void* in() = 0;
  virtual void* out() = 0;
  // Host memory to write the next input into, then make it the input.
  virtual void* input_staging() = 0;
  virtual void commit_input(std::size_t bytes) = 0;
  // output = input (the in-place measurement starts from the input).
  virtual void reset_output(std::size_t bytes) = 0;
  // The output in host memory, after this rank's queued work.
  virtual const void* output_on_host(std::size_t bytes) = 0;
  // `value` over all ranks (max of times, sum of wrong counts).
  virtual double reduce(double value, coll::ReduceOp op) = 0;
};

// The host-memory rank of the threads and MPI benches.
std::unique_ptr<BenchRank> host_rank(coll::Communicator& comm, double timeout_s);

// The SPMD sweep every rank runs; returns the rows on every rank (aggregated over ranks).
std::vector<BenchRow> run_sweep(BenchRank& rank, const BenchConfig& config, const RunnerFactory& factory,
                                const RowSink& sink);
// The same on host memory.
std::vector<BenchRow> run_sweep(coll::Communicator& comm, const BenchConfig& config, const RunnerFactory& factory,
                                const RowSink& sink);
// The runner factory for registry algorithms through coll::allreduce.
RunnerFactory registry_runners(const BenchConfig& config);

// Runs the sweep on config.ranks threads; prints the table to `out` as rows complete when
// out is non-null.
BenchReport run_threads_bench(const BenchConfig& config, std::ostream* out);

// Single-thread memcpy bandwidth in GB/s over `bytes` (best of several repetitions).
double memcpy_bandwidth_gbps(std::size_t bytes);

// nccl-tests style text.
std::string table_header(const BenchReport& report);
std::string table_row(const BenchRow& row, const BenchConfig& config);
std::string table_footer(const BenchReport& report);
// The report as JSON text (schema in docs/bench.md).
std::string report_json(const BenchReport& report);

}  // namespace colltune::bench
