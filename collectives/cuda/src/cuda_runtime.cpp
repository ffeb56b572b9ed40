// Devices, errors, waiting with a timeout, and the owning handles of cuda_memory.hpp.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "colltune/collectives/cuda_memory.hpp"
#include "colltune/collectives/cuda_reduce.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll::cuda {
namespace {

cudaStream_t as_stream(Stream s) { return static_cast<cudaStream_t>(s); }

// Why there is no device, for the error line ("no CUDA driver", "no device", ...).
std::string no_device_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  cudaGetLastError();  // clear the sticky "no device" error
  if (err != cudaSuccess) return cudaGetErrorString(err);
  return "no device visible";
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

bool device_available() { return device_count() > 0; }

std::string device_description(int device) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.1f", static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
         std::to_string(prop.multiProcessorCount) + " SMs, " + gib + " GiB)";
}

void require_device(std::string_view who) {
  if (device_count() > 0) return;
  throw Error(std::string(who) + ": no CUDA device (" + no_device_reason() + ")");
}

std::size_t device_free_bytes() {
  std::size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

void check_last_error(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(err));
}

void check(int status, std::string_view what) {
  const auto err = static_cast<cudaError_t>(status);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw Error(std::string(what) + ": " + cudaGetErrorString(err));
  }
}

void synchronize(Stream stream) { check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize"); }

// Polls rather than blocks so that a stream waiting on work that never comes (a peer that
// failed) ends with an error instead of a hang. Sleeps grow from 0 to 100 us: a short wait
// costs little latency, a long one little CPU.
void synchronize(Stream stream, double timeout_s, std::string_view who) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::chrono::microseconds sleep{0};
  for (;;) {
    const cudaError_t err = cudaStreamQuery(as_stream(stream));
    if (err == cudaSuccess) return;
    if (err != cudaErrorNotReady) check(err, std::string(who) + ": cudaStreamQuery");
    if (Clock::now() > deadline) {
      throw TimeoutError(std::string(who) + ": device work did not finish within " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::microseconds(100)) sleep += std::chrono::microseconds(5);
  }
}

void set_device(int device) { check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")"); }

// ---- DeviceMemory ----------------------------------------------------------------------------

DeviceMemory::DeviceMemory(std::size_t bytes) : size_(bytes) {
  if (bytes > 0) check(cudaMalloc(&ptr_, bytes), "cudaMalloc(" + std::to_string(bytes) + " bytes)");
}

DeviceMemory::~DeviceMemory() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  if (this != &other) {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void DeviceMemory::reserve(std::size_t bytes, Stream stream) {
  if (bytes <= size_) return;
  if (ptr_ != nullptr) check(cudaFreeAsync(ptr_, as_stream(stream)), "cudaFreeAsync");
  ptr_ = nullptr;
  size_ = 0;
  check(cudaMallocAsync(&ptr_, bytes, as_stream(stream)), "cudaMallocAsync(" + std::to_string(bytes) + " bytes)");
  size_ = bytes;
}

void DeviceMemory::upload(const void* host, std::size_t bytes, Stream stream) {
  if (bytes == 0) return;
  if (bytes > size_) throw Error("upload of " + std::to_string(bytes) + " bytes into " + std::to_string(size_));
  check(cudaMemcpyAsync(ptr_, host, bytes, cudaMemcpyHostToDevice, as_stream(stream)), "cudaMemcpyAsync (upload)");
  synchronize(stream);
}

void DeviceMemory::download(void* host, std::size_t bytes, Stream stream) const {
  if (bytes == 0) return;
  if (bytes > size_) throw Error("download of " + std::to_string(bytes) + " bytes from " + std::to_string(size_));
  check(cudaMemcpyAsync(host, ptr_, bytes, cudaMemcpyDeviceToHost, as_stream(stream)), "cudaMemcpyAsync (download)");
  synchronize(stream);
}

// ---- DeviceStream, DeviceEvent ---------------------------------------------------------------

DeviceStream::DeviceStream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  stream_ = s;
}

DeviceStream::~DeviceStream() { cudaStreamDestroy(as_stream(stream_)); }

DeviceEvent::DeviceEvent() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  event_ = e;
}

DeviceEvent::~DeviceEvent() {
  if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

DeviceEvent::DeviceEvent(DeviceEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

DeviceEvent& DeviceEvent::operator=(DeviceEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void DeviceEvent::record(Stream stream) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(event_), as_stream(stream)), "cudaEventRecord");
}

void DeviceEvent::wait_on(Stream stream) const {
  check(cudaStreamWaitEvent(as_stream(stream), static_cast<cudaEvent_t>(event_), 0), "cudaStreamWaitEvent");
}

}  // namespace colltune::coll::cuda
