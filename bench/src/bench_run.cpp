// The SPMD sweep every rank runs, the threads bench around it, and the memcpy reference.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <ostream>
#include <vector>

#include "bench_detail.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/threads.hpp"
#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"

namespace colltune::bench {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct Buffers {
  std::vector<std::byte> in, out, ref;
  explicit Buffers(std::size_t bytes, bool check) : in(bytes), out(bytes), ref(check ? bytes : 0) {}
};

// Max over ranks of a time, sum over ranks of a count: through our own allreduce, so the
// aggregation needs nothing the transport does not already offer. A binomial tree (2 lg p
// steps): a ring's 2(p-1) steps on one value cost seconds per row at a thousand threads.
double reduce_scalar(coll::Communicator& comm, double value, coll::ReduceOp op, double timeout_s) {
  coll::AllreduceOptions options;
  options.algorithm = "tree";
  options.dtype = coll::DType::f64;
  options.op = op;
  options.timeout_s = timeout_s;
  coll::allreduce(comm, &value, &value, 1, options);
  return value;
}

std::string not_applicable(const coll::Communicator& comm, const BenchConfig& config, const std::string& algorithm,
                           std::size_t count) {
  if (algorithm == "mpi") return "";
  const auto reason = coll::find_algorithm(algorithm).not_applicable(comm.layout(), count, config.algo);
  return reason ? *reason : "";
}

// Times `iters` runs after `warmup` untimed ones: barrier, run, barrier, so the slowest rank
// sets the time; then checks the last result.
BenchRow measure(coll::Communicator& comm, const BenchConfig& config, const std::string& algorithm,
                 const AllreduceRunner& run, Buffers& buffers, std::size_t count) {
  BenchRow row;
  row.algorithm = algorithm;
  row.count = count;
  row.bytes = count * coll::dtype_size(config.dtype);
  row.not_applicable = not_applicable(comm, config, algorithm, count);
  if (!row.not_applicable.empty()) return row;
  for (int w = 0; w < config.warmup; ++w) run(buffers.in.data(), buffers.out.data(), count);
  comm.barrier(config.timeout_s);
  const auto t0 = Clock::now();
  for (int it = 0; it < config.iters; ++it) run(buffers.in.data(), buffers.out.data(), count);
  comm.barrier(config.timeout_s);
  const double local_us = elapsed_us(t0) / config.iters;
  row.time_us = reduce_scalar(comm, local_us, coll::ReduceOp::max, config.timeout_s);
  row.algbw_gbps = gbps(row.bytes, row.time_us);
  row.busbw_gbps = row.algbw_gbps * allreduce_busbw_factor(comm.size());
  if (config.check) {
    const auto wrong = detail::count_wrong(buffers.out.data(), buffers.ref.data(), count, coll::dtype_size(config.dtype));
    row.wrong = static_cast<long long>(
        reduce_scalar(comm, static_cast<double>(wrong), coll::ReduceOp::sum, config.timeout_s));
  }
  return row;
}

RankLayout bench_layout(int nranks, int ranks_per_host) {
  if (ranks_per_host <= 0) return RankLayout::single_host(nranks);
  std::vector<int> host_of(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) host_of[static_cast<std::size_t>(r)] = r / ranks_per_host;
  return RankLayout(std::move(host_of));
}

}  // namespace

double BenchReport::avg_busbw_gbps() const {
  double sum = 0;
  int n = 0;
  for (const BenchRow& row : rows) {
    if (!row.not_applicable.empty()) continue;
    sum += row.busbw_gbps;
    ++n;
  }
  return n == 0 ? 0.0 : sum / n;
}

long long BenchReport::total_wrong() const {
  long long wrong = 0;
  for (const BenchRow& row : rows) wrong += std::max(row.wrong, 0LL);
  return wrong;
}

RunnerFactory registry_runners(const BenchConfig& config) {
  return [config](coll::Communicator& comm, const std::string& algorithm) -> AllreduceRunner {
    coll::AllreduceOptions options;
    options.algorithm = algorithm;
    options.algo = config.algo;
    options.dtype = config.dtype;
    options.op = config.op;
    options.compression = config.compression;
    options.timeout_s = config.timeout_s;
    return [&comm, options](const void* in, void* out, std::size_t count) {
      coll::allreduce(comm, in, out, count, options);
    };
  };
}

std::vector<BenchRow> run_sweep(coll::Communicator& comm, const BenchConfig& config, const RunnerFactory& factory,
                                const RowSink& sink) {
  const std::vector<std::size_t> sizes = sweep_sizes(config);
  const std::size_t es = coll::dtype_size(config.dtype);
  Buffers buffers(sizes.empty() ? 0 : sizes.back(), config.check);
  std::vector<AllreduceRunner> runners;
  for (const std::string& algorithm : config.algorithms) runners.push_back(factory(comm, algorithm));
  std::vector<BenchRow> rows;
  for (const std::size_t bytes : sizes) {
    const std::size_t count = bytes / es;
    detail::fill_input(config, comm.rank(), comm.size(), buffers.in.data(), count);
    if (config.check) detail::fill_reference(config, comm.size(), buffers.ref.data(), count);
    for (std::size_t a = 0; a < runners.size(); ++a) {
      rows.push_back(measure(comm, config, config.algorithms[a], runners[a], buffers, count));
      if (comm.rank() == 0 && sink) sink(rows.back());
    }
  }
  return rows;
}

double memcpy_bandwidth_gbps(std::size_t bytes) {
  if (bytes == 0) return 0;
  std::vector<std::byte> src(bytes, std::byte{1}), dst(bytes, std::byte{0});
  double best_us = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    const double us = elapsed_us(t0);
    if (rep == 0 || us < best_us) best_us = us;
    src[static_cast<std::size_t>(rep) % bytes] = dst[bytes - 1];  // keeps the copies observable
  }
  return gbps(bytes, best_us);
}

namespace detail {

BenchReport run_report(const BenchConfig& config, int nranks, int nhosts, bool root, std::ostream* out,
                       const std::function<std::vector<BenchRow>(const RowSink&)>& sweep) {
  BenchReport report;
  report.config = config;
  report.nranks = nranks;
  report.nhosts = nhosts;
  if (!root) out = nullptr;
  if (config.measure_memcpy && root) report.memcpy_gbps = memcpy_bandwidth_gbps(config.max_bytes);
  if (out) *out << table_header(report) << std::flush;
  report.rows = sweep([&](const BenchRow& row) {
    if (out) *out << table_row(row, config) << std::flush;
  });
  if (out) *out << table_footer(report) << std::flush;
  if (root && !config.json_path.empty()) write_file_atomic(config.json_path, report_json(report));
  return report;
}

}  // namespace detail

BenchReport run_threads_bench(const BenchConfig& config, std::ostream* out) {
  validate_config(config, config.ranks);
  const RankLayout layout = bench_layout(config.ranks, config.ranks_per_host);
  return detail::run_report(config, layout.nranks(), layout.nhosts(), true, out, [&](const RowSink& sink) {
    std::vector<BenchRow> rows;
    coll::run_threads(layout, [&](coll::Communicator& comm) {
      auto mine = run_sweep(comm, config, registry_runners(config), sink);
      if (comm.rank() == 0) rows = std::move(mine);
    });
    return rows;
  });
}

}  // namespace colltune::bench
