#pragma once
// Helpers for the GPU tests: skipping (with the reason) where there is no device, and device
// copies of host vectors.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "colltune/collectives/cuda_memory.hpp"
#include "colltune/collectives/cuda_reduce.hpp"
#include "colltune/common/error.hpp"

namespace colltune::test {

// The reason this machine cannot run GPU tests ("no CUDA device (...)"), empty when it can.
inline std::string why_no_gpu() {
  try {
    coll::cuda::require_device("GPU test");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// Skips the current test, saying why, on a machine without a CUDA device.
#define COLLTUNE_REQUIRE_GPU()                                        \
  do {                                                                \
    if (const std::string why = ::colltune::test::why_no_gpu(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

template <class T>
coll::cuda::DeviceMemory to_device(const std::vector<T>& host) {
  coll::cuda::DeviceMemory d(host.size() * sizeof(T));
  d.upload(host.data(), host.size() * sizeof(T));
  return d;
}

template <class T>
std::vector<T> to_host(const coll::cuda::DeviceMemory& d, std::size_t count) {
  std::vector<T> host(count);
  d.download(host.data(), count * sizeof(T));
  return host;
}

}  // namespace colltune::test
