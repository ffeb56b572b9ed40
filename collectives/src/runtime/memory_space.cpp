// Host memory for the collective front end (memory_space.hpp): memcpy, the CPU reducers, and
// the CPU's fp16 conversions (compression.hpp). Also the communicators' default memory.
#include "colltune/collectives/memory_space.hpp"

#include <cstring>
#include <vector>

#include "colltune/collectives/allreduce.hpp"
#include "colltune/collectives/communicator.hpp"
#include "colltune/collectives/reducer.hpp"

namespace colltune::coll {
namespace {

class HostFp16Stage final : public Fp16Stage {
 public:
  explicit HostFp16Stage(std::size_t count) : half_(count) {}
  std::uint16_t* half() override { return half_.data(); }
  void compress(const void* in, DType dtype, double prescale) override {
    counts_.input = dtype == DType::f32 ? compress_f16(static_cast<const float*>(in), half_.data(), half_.size(), prescale)
                                        : compress_f16(static_cast<const double*>(in), half_.data(), half_.size(), prescale);
  }
  void scan_result() override { counts_.result = find_f16_overflow(half_.data(), half_.size()); }
  void decompress(void* out, DType dtype, double postscale) override {
    if (dtype == DType::f32) {
      decompress_f16(half_.data(), static_cast<float*>(out), half_.size(), postscale);
    } else {
      decompress_f16(half_.data(), static_cast<double*>(out), half_.size(), postscale);
    }
  }
  Fp16Counts counts() override { return counts_; }

 private:
  std::vector<std::uint16_t> half_;
  Fp16Counts counts_;
};

class HostMemory final : public MemorySpace {
 public:
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
  void scale(DType dtype, void* data, std::size_t count, double factor) override {
    coll::scale(dtype, data, count, factor);
  }
  std::unique_ptr<WireCodec> codec(DType dtype, ReduceOp op) override { return std::make_unique<PlainCodec>(dtype, op); }
  std::unique_ptr<Fp16Stage> fp16_stage(std::size_t count) override { return std::make_unique<HostFp16Stage>(count); }
  std::string_view refuses(Compression /*compression*/) const override { return {}; }
};

}  // namespace

MemorySpace& host_memory() {
  static HostMemory memory;
  return memory;
}

MemorySpace& Communicator::memory() { return host_memory(); }

}  // namespace colltune::coll
