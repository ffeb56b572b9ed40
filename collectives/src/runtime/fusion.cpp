// Tensor fusion: the plan (pure, cheap, shared with the simulator) and the runtime side that
// packs tensors into a staging buffer, allreduces each buffer once and unpacks.
#include "colltune/collectives/fusion.hpp"

#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>

#include "colltune/common/error.hpp"

namespace colltune::coll {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kNumDTypes = 6;

std::size_t dtype_index(DType t) {
  const auto i = static_cast<std::size_t>(t);
  if (i >= kNumDTypes) throw Error("plan_fusion: unknown dtype value " + std::to_string(i));
  return i;
}

// round_up(x, a) for a power of two a; kNone when it would overflow.
std::size_t round_up(std::size_t x, std::size_t a) {
  if (x > kNone - (a - 1)) return kNone;
  return (x + a - 1) & ~(a - 1);
}

std::size_t tensor_bytes(std::size_t index, std::size_t count, DType dtype) {
  const std::size_t size = dtype_size(dtype);
  if (count > kNone / size) {
    throw Error("plan_fusion: tensor " + std::to_string(index) + " has " + std::to_string(count) +
                " elements of " + std::string(to_string(dtype)) + ", more bytes than size_t holds");
  }
  return count * size;
}

// The offset at which `bytes` more fit into `buf` under `threshold`, or kNone.
std::size_t fit_offset(const FusionBuffer& buf, std::size_t bytes, std::size_t threshold, std::size_t align) {
  const std::size_t offset = round_up(buf.bytes, align);
  if (offset == kNone || offset > threshold || bytes > threshold - offset) return kNone;
  return offset;
}

void check_entry(const FusionBuffer& buffer, const FusionEntry& e, std::span<const TensorRef> tensors,
                 const char* what) {
  if (e.tensor >= tensors.size()) {
    throw Error(std::string(what) + ": fusion entry names tensor " + std::to_string(e.tensor) + " but only " +
                std::to_string(tensors.size()) + " tensors were given");
  }
  const TensorRef& t = tensors[e.tensor];
  if (t.dtype != buffer.dtype || t.count * dtype_size(t.dtype) != e.bytes || (t.data == nullptr && e.bytes != 0)) {
    throw Error(std::string(what) + ": tensor " + std::to_string(e.tensor) + " (" + std::to_string(t.count) + " " +
                std::string(to_string(t.dtype)) + ") does not match its fusion entry (" + std::to_string(e.bytes) +
                " bytes of " + std::string(to_string(buffer.dtype)) + ")");
  }
}

// A staging buffer aligned for the fusion entries (RAII over aligned operator new).
struct AlignedDelete {
  std::size_t align;
  void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t{align}); }
};
using AlignedBytes = std::unique_ptr<std::byte, AlignedDelete>;

AlignedBytes allocate_aligned(std::size_t bytes, std::size_t align) {
  auto* p = static_cast<std::byte*>(::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{align}));
  return AlignedBytes(p, AlignedDelete{align});
}

}  // namespace

// Steps: for each tensor in order, try the open buffer of its dtype (aligned offset + bytes
// <= threshold); if it does not fit (or fusion is off), open a new buffer for it, which
// becomes its dtype's open buffer. The only allocations are the result vectors.
std::vector<FusionBuffer> plan_fusion(std::span<const FusionTensor> tensors, std::size_t threshold_bytes,
                                      std::size_t alignment_bytes) {
  if (alignment_bytes == 0 || (alignment_bytes & (alignment_bytes - 1)) != 0) {
    throw Error("plan_fusion: alignment must be a power of two, got " + std::to_string(alignment_bytes));
  }
  std::vector<FusionBuffer> buffers;
  std::array<std::size_t, kNumDTypes> open;
  open.fill(kNone);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::size_t bytes = tensor_bytes(i, tensors[i].count, tensors[i].dtype);
    std::size_t& slot = open[dtype_index(tensors[i].dtype)];
    if (threshold_bytes != 0 && slot != kNone) {
      FusionBuffer& buf = buffers[slot];
      if (const std::size_t offset = fit_offset(buf, bytes, threshold_bytes, alignment_bytes); offset != kNone) {
        buf.entries.push_back(FusionEntry{i, offset, bytes});
        buf.bytes = offset + bytes;
        continue;
      }
    }
    FusionBuffer& fresh = buffers.emplace_back();
    fresh.dtype = tensors[i].dtype;
    fresh.bytes = bytes;
    fresh.entries.push_back(FusionEntry{i, 0, bytes});
    slot = buffers.size() - 1;
  }
  return buffers;
}

void pack(const FusionBuffer& buffer, std::span<const TensorRef> tensors, void* dst) {
  auto* out = static_cast<std::byte*>(dst);
  std::size_t filled = 0;  // bytes of dst written so far
  for (const FusionEntry& e : buffer.entries) {
    check_entry(buffer, e, tensors, "pack");
    if (e.offset_bytes > filled) std::memset(out + filled, 0, e.offset_bytes - filled);
    if (e.bytes != 0) std::memcpy(out + e.offset_bytes, tensors[e.tensor].data, e.bytes);
    filled = e.offset_bytes + e.bytes;
  }
}

void unpack(const FusionBuffer& buffer, const void* src, std::span<const TensorRef> tensors) {
  const auto* in = static_cast<const std::byte*>(src);
  for (const FusionEntry& e : buffer.entries) {
    check_entry(buffer, e, tensors, "unpack");
    if (e.bytes != 0) std::memcpy(tensors[e.tensor].data, in + e.offset_bytes, e.bytes);
  }
}

std::size_t fused_allreduce(std::span<const TensorRef> tensors, std::size_t threshold_bytes,
                            const AllreduceOne& allreduce_one, std::size_t alignment_bytes) {
  if (!allreduce_one) throw Error("fused_allreduce: no allreduce function given");
  std::vector<FusionTensor> shapes(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) shapes[i] = FusionTensor{tensors[i].count, tensors[i].dtype};
  const std::vector<FusionBuffer> plan = plan_fusion(shapes, threshold_bytes, alignment_bytes);
  std::size_t staging_bytes = 0;
  for (const FusionBuffer& b : plan) {
    if (b.entries.size() > 1 && b.bytes > staging_bytes) staging_bytes = b.bytes;
  }
  const std::size_t align = alignment_bytes < 64 ? 64 : alignment_bytes;
  AlignedBytes staging = staging_bytes == 0 ? AlignedBytes(nullptr, AlignedDelete{align})
                                            : allocate_aligned(staging_bytes, align);
  std::size_t calls = 0;
  for (const FusionBuffer& b : plan) {
    if (b.bytes == 0) continue;
    if (b.entries.size() == 1) {  // alone: reduce the tensor where it lies
      check_entry(b, b.entries.front(), tensors, "fused_allreduce");
      const TensorRef& t = tensors[b.entries.front().tensor];
      allreduce_one(t.data, t.count, t.dtype);
    } else {
      pack(b, tensors, staging.get());
      allreduce_one(staging.get(), b.count(), b.dtype);
      unpack(b, staging.get(), tensors);
    }
    ++calls;
  }
  return calls;
}

}  // namespace colltune::coll
