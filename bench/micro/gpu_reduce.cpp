// Reduction-kernel bandwidth on the GPU against a device-to-device copy, in the same run:
// fp32, fp16 and bf16 sum (and the other dtypes), in place (inout = inout op in), timed with CUDA
// events over the kernel alone. bytes_per_second counts memory traffic: a copy of n bytes reads n
// and writes n (2n), a reduce of n bytes reads 2n and writes n (3n); so a kernel at memory speed
// shows the copy's bytes_per_second. Targets (bench/gpu-check.sh): fp32 sum >= 90% of the copy,
// fp16 >= 80%. Skips (with the reason) without a device.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "colltune/collectives/cuda_memory.hpp"
#include "colltune/collectives/cuda_reduce.hpp"
#include "colltune/common/error.hpp"

namespace {

namespace cuda = colltune::coll::cuda;
using colltune::coll::DType;
using colltune::coll::ReduceOp;

// The reason there is no GPU, or "" when there is one.
std::string no_gpu() {
  try {
    cuda::require_device("micro_gpu_reduce");
    return "";
  } catch (const colltune::Error& e) {
    return e.what();
  }
}

// Times `launch` with CUDA events around it on `stream`, one iteration per benchmark iteration.
template <class Launch>
void time_kernel(benchmark::State& state, cudaStream_t stream, std::size_t traffic_bytes, Launch launch) {
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  launch();  // warm-up: first-launch costs stay out of the measurement
  cudaStreamSynchronize(stream);
  for (auto _ : state) {
    cudaEventRecord(start, stream);
    launch();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(static_cast<double>(ms) / 1e3);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(traffic_bytes));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) state.SkipWithError(cudaGetErrorString(err));
}

void BM_DeviceCopy(benchmark::State& state) {
  if (const std::string why = no_gpu(); !why.empty()) return state.SkipWithError(why.c_str());
  const auto bytes = static_cast<std::size_t>(state.range(0));
  cuda::DeviceMemory src(bytes), dst(bytes);
  cuda::DeviceStream stream;
  auto* st = static_cast<cudaStream_t>(stream.get());
  time_kernel(state, st, 2 * bytes, [&] { cuda::copy(dst.get(), src.get(), bytes, stream.get()); });
}

// inout = inout op in over `bytes` of the dtype. Zeros keep every value finite however many
// iterations run (and are a worst case for nothing: the kernels do not branch on values).
void reduce_benchmark(benchmark::State& state, DType dtype) {
  if (const std::string why = no_gpu(); !why.empty()) return state.SkipWithError(why.c_str());
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t count = bytes / colltune::coll::dtype_size(dtype);
  cuda::DeviceMemory inout(bytes), in(bytes);
  cudaMemset(inout.get(), 0, bytes);
  cudaMemset(in.get(), 0, bytes);
  cuda::DeviceStream stream;
  auto* st = static_cast<cudaStream_t>(stream.get());
  time_kernel(state, st, 3 * bytes, [&] { cuda::reduce(dtype, ReduceOp::sum, inout.get(), in.get(), count, stream.get()); });
}

void BM_DeviceReduce_f32_sum(benchmark::State& s) { reduce_benchmark(s, DType::f32); }
void BM_DeviceReduce_f16_sum(benchmark::State& s) { reduce_benchmark(s, DType::f16); }
void BM_DeviceReduce_bf16_sum(benchmark::State& s) { reduce_benchmark(s, DType::bf16); }
void BM_DeviceReduce_f64_sum(benchmark::State& s) { reduce_benchmark(s, DType::f64); }
void BM_DeviceReduce_i32_sum(benchmark::State& s) { reduce_benchmark(s, DType::i32); }

// 256 MiB and 1 GiB of destination buffer: far beyond the L2 cache (50 MiB on H100/H200).
#define COLLTUNE_GPU_SIZES ->Arg(256 << 20)->Arg(1 << 30)->UseManualTime()->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_DeviceCopy) COLLTUNE_GPU_SIZES;
BENCHMARK(BM_DeviceReduce_f32_sum) COLLTUNE_GPU_SIZES;
BENCHMARK(BM_DeviceReduce_f16_sum) COLLTUNE_GPU_SIZES;
BENCHMARK(BM_DeviceReduce_bf16_sum) COLLTUNE_GPU_SIZES;
BENCHMARK(BM_DeviceReduce_f64_sum) COLLTUNE_GPU_SIZES;
BENCHMARK(BM_DeviceReduce_i32_sum) COLLTUNE_GPU_SIZES;

}  // namespace

BENCHMARK_MAIN();
