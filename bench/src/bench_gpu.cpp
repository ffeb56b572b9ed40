// The GPU benches (bench_gpu.hpp): the sweep of bench_run.cpp over device buffers. A device
// rank keeps its input and output on the GPU and a host copy of each for filling the input and
// checking the output; per-rank numbers are aggregated by an allreduce of one fp64 on the device.
#ifdef COLLTUNE_HAVE_CUDA
#include "colltune/bench/bench_gpu.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "bench_detail.hpp"
#include "colltune/collectives/cuda_transport.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"
#ifdef COLLTUNE_HAVE_NCCL
#include "colltune/collectives/nccl_transport.hpp"
#endif

namespace colltune::bench {
namespace {

namespace cuda = coll::cuda;

class DeviceRank final : public BenchRank {
 public:
  DeviceRank(cuda::DeviceCommunicator& comm, double timeout_s) : comm_(comm), timeout_s_(timeout_s) {}
  coll::Communicator& comm() override { return comm_; }
  void allocate(std::size_t bytes) override {
    in_ = cuda::DeviceMemory(bytes);
    out_ = cuda::DeviceMemory(bytes);
    host_in_.resize(bytes);
    host_out_.resize(bytes);
  }
  void* in() override { return in_.get(); }
  void* out() override { return out_.get(); }
  void* input_staging() override { return host_in_.data(); }
  void commit_input(std::size_t bytes) override { in_.upload(host_in_.data(), bytes, comm_.stream()); }
  void reset_output(std::size_t bytes) override { cuda::copy(out_.get(), in_.get(), bytes, comm_.stream()); }
  const void* output_on_host(std::size_t bytes) override {
    cuda::synchronize(comm_.stream(), timeout_s_, "rank " + std::to_string(comm_.rank()));
    out_.download(host_out_.data(), bytes, comm_.stream());
    return host_out_.data();
  }
  double reduce(double value, coll::ReduceOp op) override {
    return cuda::allreduce_scalar(comm_, value, op, timeout_s_);
  }

 private:
  cuda::DeviceCommunicator& comm_;
  double timeout_s_;
  cuda::DeviceMemory in_, out_;
  std::vector<std::byte> host_in_, host_out_;
};

// Registry algorithms through coll::allreduce on device buffers, and "nccl" through ncclAllReduce.
RunnerFactory device_runners(const BenchConfig& config, cuda::DeviceCommunicator& device) {
  return [config, &device](coll::Communicator&, const std::string& algorithm) -> AllreduceRunner {
    if (algorithm == "nccl") {
#ifdef COLLTUNE_HAVE_NCCL
      return [&device, config](const void* in, void* out, std::size_t count) {
        coll::nccl::allreduce(device, in, out, count, config.dtype, config.op);
      };
#else
      throw Error("--algo nccl: this colltune was built without NCCL");
#endif
    }
    coll::AllreduceOptions options;
    options.algorithm = algorithm;
    options.algo = config.algo;
    options.dtype = config.dtype;
    options.op = config.op;
    options.compression = config.compression;
    options.timeout_s = config.timeout_s;
    return [&device, options](const void* in, void* out, std::size_t count) {
      coll::allreduce(device, in, out, count, options);
    };
  };
}

// The rank's sweep; rank 0's rows are kept in `rows`.
void sweep_on(cuda::DeviceCommunicator& comm, const BenchConfig& config, const RowSink& sink,
              std::vector<BenchRow>& rows) {
  DeviceRank rank(comm, config.timeout_s);
  auto mine = run_sweep(rank, config, device_runners(config, comm), sink);
  if (comm.rank() == 0) rows = std::move(mine);
}

// Device memory the ranks on one GPU need: input, output and scratch (overlapping receives,
// an fp16 copy) of max_bytes each.
void check_device_memory(const BenchConfig& config, int ranks_on_gpu, const std::string& transport) {
  const std::size_t free = cuda::device_free_bytes();
  const auto n = static_cast<std::size_t>(ranks_on_gpu);
  const bool fits = config.max_bytes <= free / 3 / n;
  if (!fits) {
    throw Error("-e " + std::to_string(config.max_bytes) + ": " + std::to_string(n) +
                " rank(s) x 3 buffers of that size exceed the free memory of the GPU (" + format_bytes(free) +
                ", --transport " + transport + ")");
  }
}

// The report before the sweep: the description of `device` and, on root, the copy yardstick.
BenchReport device_report(const BenchConfig& config, int nranks, int nhosts, bool root, int device) {
  BenchReport report = detail::host_report(config, nranks, nhosts, false);
  report.device = cuda::device_description(device);
  if (config.measure_memcpy && root) {
    report.memcpy_gbps = device_copy_bandwidth_gbps(config.max_bytes);
    report.memcpy_kind = "device to device";
  }
  return report;
}

}  // namespace

double device_copy_bandwidth_gbps(std::size_t bytes) {
  if (bytes == 0) return 0;
  cuda::DeviceMemory src(bytes), dst(bytes);
  cuda::DeviceStream stream;
  double best_us = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    cuda::copy(dst.get(), src.get(), bytes, stream.get());
    cuda::synchronize(stream.get());
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (rep == 0 || us < best_us) best_us = us;
  }
  return gbps(bytes, best_us);
}

BenchReport run_cuda_bench(const BenchConfig& config, std::ostream* out) {
  cuda::require_device("--transport cuda");
  validate_config(config, config.ranks);
  check_device_memory(config, config.ranks, "cuda");
  const RankLayout layout = detail::layout_of(config, config.ranks);
  BenchReport report = device_report(config, layout.nranks(), layout.nhosts(), true, 0);
  return detail::run_report(std::move(report), true, out, [&](const RowSink& sink) {
    std::vector<BenchRow> rows;
    cuda::run_virtual_ranks(layout, [&](cuda::DeviceCommunicator& comm) { sweep_on(comm, config, sink, rows); });
    return rows;
  });
}

#ifdef COLLTUNE_HAVE_NCCL

namespace {

// With more than one GPU, ncclAllReduce joins the run as the vendor baseline.
void add_vendor_baseline(BenchConfig& config, int nranks) {
  if (nranks > 1 && std::find(config.algorithms.begin(), config.algorithms.end(), "nccl") == config.algorithms.end()) {
    config.algorithms.push_back("nccl");
  }
}

}  // namespace

BenchReport run_nccl_bench(BenchConfig config, std::ostream* out) {
  cuda::require_device("--transport nccl");
  const int ngpus = config.ranks > 0 ? config.ranks : cuda::device_count();
  validate_config(config, ngpus);
  check_device_memory(config, 1, "nccl");
  add_vendor_baseline(config, ngpus);
  BenchReport report = device_report(config, ngpus, 1, true, 0);
  return detail::run_report(std::move(report), true, out, [&](const RowSink& sink) {
    std::vector<BenchRow> rows;
    coll::nccl::run_threads(
        ngpus, [&](cuda::DeviceCommunicator& comm) { sweep_on(comm, config, sink, rows); }, config.timeout_s);
    return rows;
  });
}

#ifdef COLLTUNE_HAVE_MPI
BenchReport run_nccl_mpi_bench(BenchConfig config, const coll::MpiCommunicator& mpi, std::ostream* out) {
  cuda::require_device("--transport nccl");
  validate_config(config, mpi.size());
  add_vendor_baseline(config, mpi.size());
  const auto comm = coll::nccl::from_mpi(mpi, config.timeout_s);
  check_device_memory(config, 1, "nccl");
  const bool root = mpi.rank() == 0;
  BenchReport report = device_report(config, mpi.size(), mpi.layout().nhosts(), root, comm->device());
  return detail::run_report(std::move(report), root, out, [&](const RowSink& sink) {
    std::vector<BenchRow> rows;
    sweep_on(*comm, config, sink, rows);
    return rows;
  });
}
#endif

#endif  // COLLTUNE_HAVE_NCCL

}  // namespace colltune::bench
#endif  // COLLTUNE_HAVE_CUDA
