#pragma once
// Owning handles for device memory, streams and events (RAII, move-only), usable without the
// CUDA headers. Every failing CUDA call throws colltune::Error naming it.
#include <cstddef>

#include "colltune/collectives/cuda_reduce.hpp"

namespace colltune::coll::cuda {

// cudaMalloc'd bytes on the current device (a size of 0 allocates nothing).
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* get() const { return ptr_; }
  std::byte* bytes() const { return static_cast<std::byte*>(ptr_); }
  std::size_t size() const { return size_; }
  // Grows to at least `bytes` (contents not kept), stream-ordered: the old block is freed and
  // the new one allocated on `stream` (cudaFreeAsync/cudaMallocAsync), so work already queued
  // there, and work on other streams that this stream waits for, still sees the old block.
  void reserve(std::size_t bytes, Stream stream);

  // Host <-> device copies of `bytes` from the start, on `stream`; they return when the copy
  // is done (the host side is pageable memory).
  void upload(const void* host, std::size_t bytes, Stream stream = nullptr);
  void download(void* host, std::size_t bytes, Stream stream = nullptr) const;

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

// A non-blocking stream on the current device.
class DeviceStream {
 public:
  DeviceStream();
  ~DeviceStream();
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  Stream get() const { return stream_; }

 private:
  Stream stream_ = nullptr;
};

// An event without timing (the cheap kind), for ordering streams.
class DeviceEvent {
 public:
  DeviceEvent();
  ~DeviceEvent();
  DeviceEvent(DeviceEvent&& other) noexcept;
  DeviceEvent& operator=(DeviceEvent&& other) noexcept;
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;

  void record(Stream stream);
  // Later work on `stream` waits for what was recorded.
  void wait_on(Stream stream) const;
  void* handle() const { return event_; }  // cudaEvent_t

 private:
  void* event_ = nullptr;  // cudaEvent_t
};

// The current device of the calling thread (cudaSetDevice).
void set_device(int device);

}  // namespace colltune::coll::cuda
