// The SPMD sweep every rank runs, the host-memory rank, the threads bench around them, and the
// memcpy yardstick.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <ostream>
#include <utility>
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

class HostRank final : public BenchRank {
 public:
  HostRank(coll::Communicator& comm, double timeout_s) : comm_(comm), timeout_s_(timeout_s) {}
  coll::Communicator& comm() override { return comm_; }
  void allocate(std::size_t bytes) override {
    in_.resize(bytes);
    out_.resize(bytes);
  }
  void* in() override { return in_.data(); }
  void* out() override { return out_.data(); }
  void* input_staging() override { return in_.data(); }
  void commit_input(std::size_t) override {}
  void reset_output(std::size_t bytes) override {
    if (bytes > 0) std::memcpy(out_.data(), in_.data(), bytes);
  }
  const void* output_on_host(std::size_t) override { return out_.data(); }
  double reduce(double value, coll::ReduceOp op) override { return reduce_scalar(comm_, value, op, timeout_s_); }

 private:
  coll::Communicator& comm_;
  double timeout_s_;
  std::vector<std::byte> in_, out_;
};

std::string not_applicable(const coll::Communicator& comm, const BenchConfig& config, const std::string& algorithm,
                           std::size_t count) {
  if (detail::is_vendor_baseline(algorithm)) return "";
  const auto reason = coll::find_algorithm(algorithm).not_applicable(comm.layout(), count, config.algo);
  return reason ? *reason : "";
}

// Times config.iters runs: barrier, run, barrier, so the slowest rank sets the time (the
// device transports' barrier also waits for the rank's queued work).
template <class Run>
BenchTiming time_runs(BenchRank& rank, const BenchConfig& config, std::size_t bytes, Run run) {
  coll::Communicator& comm = rank.comm();
  comm.barrier(config.timeout_s);
  const auto t0 = Clock::now();
  for (int it = 0; it < config.iters; ++it) run();
  comm.barrier(config.timeout_s);
  BenchTiming t;
  t.time_us = rank.reduce(elapsed_us(t0) / config.iters, coll::ReduceOp::max);
  t.algbw_gbps = gbps(bytes, t.time_us);
  t.busbw_gbps = t.algbw_gbps * allreduce_busbw_factor(comm.size());
  return t;
}

// Wrong elements of this rank's output, summed over ranks.
long long check(BenchRank& rank, const BenchConfig& config, const std::vector<std::byte>& ref, std::size_t count) {
  const std::size_t es = coll::dtype_size(config.dtype);
  const auto wrong = detail::count_wrong(rank.output_on_host(count * es), ref.data(), count, es);
  return static_cast<long long>(rank.reduce(static_cast<double>(wrong), coll::ReduceOp::sum));
}

// One row: out of place (warm-up, timed runs, then the last result checked: the input does not
// change, so every run gives it), then in place as nccl-tests does it: the timed runs reduce
// the output again and again (the values change, the work does not), then the output is reset
// to the input and reduced once more for the check.
BenchRow measure(BenchRank& rank, const BenchConfig& config, const std::string& algorithm, const AllreduceRunner& run,
                 const std::vector<std::byte>& ref, std::size_t count) {
  BenchRow row;
  row.algorithm = algorithm;
  row.count = count;
  row.bytes = count * coll::dtype_size(config.dtype);
  row.not_applicable = not_applicable(rank.comm(), config, algorithm, count);
  if (!row.not_applicable.empty()) return row;
  void* in = rank.in();
  void* out = rank.out();
  for (int w = 0; w < config.warmup; ++w) run(in, out, count);
  row.out_of_place = time_runs(rank, config, row.bytes, [&] { run(in, out, count); });
  if (config.check) row.out_of_place.wrong = check(rank, config, ref, count);
  rank.reset_output(row.bytes);
  row.in_place = time_runs(rank, config, row.bytes, [&] { run(out, out, count); });
  if (config.check) {
    rank.reset_output(row.bytes);
    run(out, out, count);
    row.in_place.wrong = check(rank, config, ref, count);
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

double BenchReport::avg_busbw_gbps(const std::string& algorithm) const {
  double sum = 0;
  int n = 0;
  for (const BenchRow& row : rows) {
    if (row.algorithm != algorithm || !row.not_applicable.empty()) continue;
    sum += row.out_of_place.busbw_gbps + row.in_place.busbw_gbps;
    n += 2;
  }
  return n == 0 ? 0.0 : sum / n;
}

long long BenchReport::total_wrong() const {
  long long wrong = 0;
  for (const BenchRow& row : rows) wrong += std::max(row.out_of_place.wrong, 0LL) + std::max(row.in_place.wrong, 0LL);
  return wrong;
}

std::unique_ptr<BenchRank> host_rank(coll::Communicator& comm, double timeout_s) {
  return std::make_unique<HostRank>(comm, timeout_s);
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

std::vector<BenchRow> run_sweep(BenchRank& rank, const BenchConfig& config, const RunnerFactory& factory,
                                const RowSink& sink) {
  const std::vector<std::size_t> sizes = sweep_sizes(config);
  const std::size_t es = coll::dtype_size(config.dtype);
  coll::Communicator& comm = rank.comm();
  rank.allocate(sizes.empty() ? 0 : sizes.back());
  std::vector<std::byte> ref(config.check && !sizes.empty() ? sizes.back() : 0);
  std::vector<AllreduceRunner> runners;
  for (const std::string& algorithm : config.algorithms) runners.push_back(factory(comm, algorithm));
  std::vector<BenchRow> rows;
  for (const std::size_t bytes : sizes) {
    const std::size_t count = bytes / es;
    detail::fill_input(config, comm.rank(), comm.size(), rank.input_staging(), count);
    rank.commit_input(bytes);
    if (config.check) detail::fill_reference(config, comm.size(), ref.data(), count);
    for (std::size_t a = 0; a < runners.size(); ++a) {
      rows.push_back(measure(rank, config, config.algorithms[a], runners[a], ref, count));
      if (comm.rank() == 0 && sink) sink(rows.back());
    }
  }
  return rows;
}

std::vector<BenchRow> run_sweep(coll::Communicator& comm, const BenchConfig& config, const RunnerFactory& factory,
                                const RowSink& sink) {
  HostRank rank(comm, config.timeout_s);
  return run_sweep(rank, config, factory, sink);
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

bool is_vendor_baseline(const std::string& algorithm) { return algorithm == "mpi" || algorithm == "nccl"; }

RankLayout layout_of(const BenchConfig& config, int nranks) { return bench_layout(nranks, config.ranks_per_host); }

BenchReport run_report(BenchReport report, bool root, std::ostream* out,
                       const std::function<std::vector<BenchRow>(const RowSink&)>& sweep) {
  const BenchConfig& config = report.config;
  if (!root) out = nullptr;
  // json_path "-": the JSON goes where the table would, instead of it.
  std::ostream* const json_out = config.json_path == "-" ? std::exchange(out, nullptr) : nullptr;
  if (out) *out << table_header(report) << std::flush;
  report.rows = sweep([&](const BenchRow& row) {
    if (out) *out << table_row(row, config) << std::flush;
  });
  if (out) *out << table_footer(report) << std::flush;
  if (json_out) {
    *json_out << report_json(report) << std::flush;
  } else if (root && !config.json_path.empty()) {
    write_file_atomic(config.json_path, report_json(report));
  }
  return report;
}

BenchReport host_report(const BenchConfig& config, int nranks, int nhosts, bool root) {
  BenchReport report;
  report.config = config;
  report.nranks = nranks;
  report.nhosts = nhosts;
  if (config.measure_memcpy && root) {
    report.memcpy_gbps = memcpy_bandwidth_gbps(config.max_bytes);
    report.memcpy_kind = "memcpy, 1 thread";
  }
  return report;
}

}  // namespace detail

BenchReport run_threads_bench(const BenchConfig& config, std::ostream* out) {
  validate_config(config, config.ranks);
  const RankLayout layout = detail::layout_of(config, config.ranks);
  BenchReport report = detail::host_report(config, layout.nranks(), layout.nhosts(), true);
  return detail::run_report(std::move(report), true, out, [&](const RowSink& sink) {
    std::vector<BenchRow> rows;
    coll::run_threads(layout, [&](coll::Communicator& comm) {
      auto mine = run_sweep(comm, config, registry_runners(config), sink);
      if (comm.rank() == 0) rows = std::move(mine);
    });
    return rows;
  });
}

}  // namespace colltune::bench
