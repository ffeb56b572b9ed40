// colltune bench: nccl-tests style allreduce sweep over threads, MPI ranks, virtual ranks on one
// GPU (cuda) or one rank per GPU (nccl).
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "colltune/bench/bench.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/calibrate/compare.hpp"
#include "commands.hpp"
#include "options/options.hpp"
#ifdef COLLTUNE_HAVE_MPI
#include "colltune/bench/bench_mpi.hpp"
#endif
#ifdef COLLTUNE_HAVE_CUDA
#include "colltune/bench/bench_gpu.hpp"
#endif

namespace colltune::cli {
namespace {

struct BenchArgs {
  std::string transport = "threads";
  int ranks = 0;
  std::string min = "8", max = "8M", dtype = "fp32", op = "sum", compression, timeout = "60s", chunk;
  JsonOutput json;
  std::size_t factor = 2;
  int check = 1;
  bool fp16_compress = false;
  std::string predict;  // --predict SPEC: the topology to predict each row on
  bench::BenchConfig config;
};

bench::BenchConfig to_config(const BenchArgs& a) {
  bench::BenchConfig c = a.config;
  c.transport = bench::parse_transport(a.transport);
  c.ranks = a.ranks;
  c.min_bytes = parse_size(a.min, "-b");
  c.max_bytes = parse_size(a.max, "-e");
  c.factor = a.factor;
  if (a.check != 0 && a.check != 1) throw Error("-c " + std::to_string(a.check) + ": expected 0 or 1");
  c.check = a.check == 1;
  c.dtype = coll::parse_dtype(a.dtype);
  c.op = coll::parse_reduce_op(a.op);
  if (a.fp16_compress && !a.compression.empty() && a.compression != "fp16") {
    throw Error("--fp16-compress contradicts --compression " + a.compression);
  }
  c.compression = a.fp16_compress ? coll::Compression::fp16
                                  : coll::parse_compression(a.compression.empty() ? "none" : a.compression);
  c.timeout_s = parse_time_us(a.timeout, "--timeout") / 1e6;
  c.algo.chunk_elems = chunk_elements(a.chunk, coll::dtype_size(c.dtype), a.dtype);
  c.json_path = a.json.destination.value_or("");
  if ((c.transport == bench::Transport::threads || c.transport == bench::Transport::cuda) && a.ranks == 0) {
    throw Error("--ranks: the " + std::string(bench::to_string(c.transport)) +
                " transport needs a rank count (--ranks N, N >= 1)");
  }
  return c;
}

// A check that found wrong values fails the command (exit status 1), after the table.
void fail_if_wrong(const bench::BenchReport& report, bool report_it) {
  if (report.total_wrong() == 0) return;
  if (!report_it) throw QuietExit{kExitCheckFailed};
  throw CheckFailure("bench: " + std::to_string(report.total_wrong()) +
                     " result values differ from the reference (see #wrong in the table)");
}

#ifdef COLLTUNE_HAVE_MPI
// Runs `body(comm)`, which returns the rank's report, on every MPI rank.
//  - An error on any rank prints one line and ends the whole job (its peers may be waiting).
//  - A configuration mismatch is found by every rank: all finalize, rank 0 says it once.
//  - Wrong values fail the command (exit status 1) after the table.
template <class Body>
std::optional<bench::BenchReport> on_mpi_world(const bench::BenchConfig& config, Body body) {
  bench::validate_config(config, 1);  // before MPI starts: bad input ends every rank alike
  coll::MpiOptions options;
  options.ranks_per_host = config.ranks_per_host > 0 ? config.ranks_per_host : coll::ranks_per_host_from_env();
  bench::BenchReport report;
  bool root = false;
  std::string mismatch;
  {
    coll::MpiSession session(nullptr, nullptr);
    try {
      coll::MpiCommunicator comm(MPI_COMM_WORLD, options);
      root = comm.rank() == 0;
      if (config.ranks > 0 && config.ranks != comm.size()) {
        throw Error("--ranks " + std::to_string(config.ranks) + " but mpirun started " + std::to_string(comm.size()) +
                    " processes");
      }
      report = body(comm);
    } catch (const bench::ConfigMismatch& e) {
      // Every rank found it. Rank 0 says it now, before any rank can exit: mpirun ends the
      // job at the first non-zero exit, which could otherwise cut rank 0 off before it wrote.
      mismatch = e.what();
      if (root) std::cerr << "colltune: error: " << mismatch << std::endl;
    } catch (const std::exception& e) {
      std::cerr << "colltune: " << (exit_status(e) == kExitInternal ? "internal error: " : "error: ") << e.what()
                << std::endl;
      MPI_Abort(MPI_COMM_WORLD, exit_status(e));
    }
  }  // MPI_Finalize: every rank completed the same sweep, or stopped at the same mismatch
  if (!mismatch.empty()) throw QuietExit{kExitBadInput};  // already said by rank 0
  fail_if_wrong(report, root);
  if (!root) return std::nullopt;
  return report;
}
#endif

std::optional<bench::BenchReport> run_mpi(const bench::BenchConfig& config) {
#ifdef COLLTUNE_HAVE_MPI
  return on_mpi_world(config, [&](coll::MpiCommunicator& comm) {
    if (comm.size() == 1) {
      std::cerr << "colltune: warning: --transport mpi is running 1 rank; start it with mpirun -np N to run N ranks"
                << std::endl;
    }
    return bench::run_mpi_bench(config, comm, comm.rank() == 0 ? &std::cout : nullptr);
  });
#else
  (void)config;
  throw Error("--transport mpi: this colltune was built without MPI");
#endif
}

std::optional<bench::BenchReport> run_cuda(const bench::BenchConfig& config) {
#ifdef COLLTUNE_HAVE_CUDA
  bench::BenchReport report = bench::run_cuda_bench(config, &std::cout);
  fail_if_wrong(report, true);
  return report;
#else
  (void)config;
  throw Error("--transport cuda: this colltune was built without CUDA");
#endif
}

// Under an MPI launcher one process per GPU; otherwise one thread per GPU.
std::optional<bench::BenchReport> run_nccl(const bench::BenchConfig& config) {
#if defined(COLLTUNE_HAVE_NCCL)
#ifdef COLLTUNE_HAVE_MPI
  if (under_mpi_launcher()) {
    return on_mpi_world(config, [&](coll::MpiCommunicator& comm) {
      return bench::run_nccl_mpi_bench(config, comm, comm.rank() == 0 ? &std::cout : nullptr);
    });
  }
#endif
  bench::BenchReport report = bench::run_nccl_bench(config, &std::cout);
  fail_if_wrong(report, true);
  return report;
#elif defined(COLLTUNE_HAVE_CUDA)
  (void)config;
  throw Error("--transport nccl: this colltune was built without NCCL");
#else
  (void)config;
  throw Error("--transport nccl: this colltune was built without CUDA");
#endif
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "nccl-tests style allreduce sweep over threads, MPI ranks or GPUs");
  cmd->add_option("--transport", args->transport,
                  "threads | mpi (run under mpirun) | cuda (virtual ranks on one GPU) | nccl (one rank per GPU)");
  cmd->add_option("--ranks", args->ranks,
                  "rank count (threads, cuda; mpi takes it from mpirun; nccl: GPUs to use, default all)");
  cmd->add_option("--ranks-per-host", args->config.ranks_per_host,
                  "emulate hosts of this many ranks (for hierarchical); mpi default: shared-memory groups or "
                  "COLLTUNE_RANKS_PER_HOST");
  cmd->add_option("--algo", args->config.algorithms,
                  "algorithms, comma-separated (registry ids; mpi = MPI_Allreduce, nccl = ncclAllReduce)")
      ->delimiter(',');
  cmd->add_option("-b,--minbytes", args->min, "smallest size (e.g. 8, 64K, 1M)");
  cmd->add_option("-e,--maxbytes", args->max, "largest size");
  cmd->add_option("-f,--stepfactor", args->factor, "size multiplication factor (>= 2)");
  cmd->add_option("-n,--iters", args->config.iters, "timed iterations per size");
  cmd->add_option("-w,--warmup_iters", args->config.warmup, "untimed iterations per size");
  cmd->add_option("-c,--check", args->check, "1: check every result bit-exactly");
  cmd->add_option("-d,--datatype", args->dtype, "fp32 | fp64 | fp16 | bf16 | int32 | int64");
  cmd->add_option("-o,--op", args->op, "sum | avg | min | max | prod");
  cmd->add_flag("--fp16-compress", args->fp16_compress, "compress fp32/fp64 to fp16 on the wire (Horovod fp16)");
  cmd->add_option("--compression", args->compression, "none | fp16 | fp16_fp32acc");
  cmd->add_option("--chunk", args->chunk, "pipeline chunk, bytes with a unit (e.g. 64KiB; a whole number of "
                                         "elements; 0 = none)");
  cmd->add_option("--inner", args->config.algo.inner, "hierarchical: algorithm across hosts");
  cmd->add_option("--timeout", args->timeout, "per-wait timeout (e.g. 30s)");
  add_json_option(*cmd, args->json, "The results");
  cmd->add_option("--predict", args->predict,
                  "After the sweep, each row beside colltune's prediction on this topology (preset, JSON, NCCL XML)");
  cmd->callback([args] {
    const bench::BenchConfig config = to_config(*args);
    // --json FILE, the bench's one output file, is checked before the sweep (by the process that
    // writes it); the bench writes it atomically at the end.
    if (launch_rank() == 0) {
      OutputFiles files;
      args->json.declare(files);
    }
    // Loaded first: a bad topology stops the command before anything runs.
    std::optional<topo::Topology> topology;
    if (!args->predict.empty()) topology = topo::load_topology(args->predict);
    if (topology && config.ranks > 0 && config.ranks != topology->num_ranks())
      throw Error("--predict " + args->predict + ": the topology has " + std::to_string(topology->num_ranks()) +
                  " ranks, the bench runs " + std::to_string(config.ranks));
    std::optional<bench::BenchReport> report;
    switch (config.transport) {
      case bench::Transport::threads:
        report = bench::run_threads_bench(config, &std::cout);
        fail_if_wrong(*report, true);
        break;
      case bench::Transport::mpi: report = run_mpi(config); break;
      case bench::Transport::cuda: report = run_cuda(config); break;
      case bench::Transport::nccl: report = run_nccl(config); break;
    }
    if (!topology || !report) return;  // MPI ranks other than 0 have no report
    // Through the report's JSON, so the rows are read exactly as `compare` reads a saved
    // --json file (tuner does not depend on the bench library).
    const tuner::Comparison comparison = tuner::compare_measurements(
        *topology, tuner::parse_bench_json(bench::report_json(*report), "bench"));
    // Beside the table; on stderr when the JSON takes stdout.
    (args->json.to_stdout() ? std::cerr : std::cout) << "\n" << tuner::comparison_text(comparison);
  });
}

}  // namespace colltune::cli
