#pragma once
// Tensor fusion (Horovod's HOROVOD_FUSION_THRESHOLD): pack a list of tensors, in order, into
// fusion buffers of at most `threshold` bytes, one buffer per dtype run; a tensor larger than
// the threshold goes alone. One allreduce per buffer, then unpack. The plan is pure and cheap:
// the simulator's training-step model uses the same function as the runtime.
//
// plan_fusion, exactly:
// - Tensors are taken in order. Like Horovod, a buffer holds one dtype only: each dtype has
//   at most one open buffer, and a tensor of another dtype neither closes nor joins it.
// - A tensor joins the open buffer of its dtype when its aligned offset
//   (round_up(buffer.bytes, alignment)) plus its bytes is <= threshold; otherwise that buffer
//   is closed and the tensor opens a new one. A tensor larger than the threshold is therefore
//   alone in its buffer (and the next tensor of that dtype opens another).
// - threshold 0 disables fusion: one buffer per tensor.
// - Buffers are returned in the order of their first tensor; entries in tensor order.
// - alignment must be a power of two (entries start on multiples of it; buffer.bytes has no
//   trailing padding). Zero-element tensors get an entry of 0 bytes.
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "colltune/collectives/dtype.hpp"

namespace colltune::coll {

struct FusionTensor {
  std::size_t count = 0;  // elements
  DType dtype = DType::f32;
};

struct FusionEntry {
  std::size_t tensor = 0;        // index into the planned tensor list
  std::size_t offset_bytes = 0;  // where it sits in the buffer (aligned)
  std::size_t bytes = 0;         // its payload
};

struct FusionBuffer {
  DType dtype = DType::f32;
  std::size_t bytes = 0;  // used bytes including alignment padding between entries
  std::vector<FusionEntry> entries;
  std::size_t count() const { return bytes / dtype_size(dtype); }  // elements to allreduce
};

inline constexpr std::size_t kFusionAlignment = 64;  // bytes; entries start on this boundary

// threshold_bytes == 0 disables fusion (one buffer per tensor).
// Throws colltune::Error for an alignment that is not a power of two or a tensor whose byte
// size overflows size_t.
std::vector<FusionBuffer> plan_fusion(std::span<const FusionTensor> tensors, std::size_t threshold_bytes,
                                      std::size_t alignment_bytes = kFusionAlignment);

// A tensor's data at run time: `count` elements of `dtype` at `data`.
struct TensorRef {
  void* data = nullptr;
  std::size_t count = 0;
  DType dtype = DType::f32;
};

// Copy the buffer's entries from their tensors into `dst` (buffer.bytes bytes) and zero the
// alignment padding, so the padding reduces to a deterministic value. `tensors` is the full
// list the plan was made from. Throws colltune::Error if a tensor does not match its entry.
void pack(const FusionBuffer& buffer, std::span<const TensorRef> tensors, void* dst);
// Copy the buffer's entries from `src` back into their tensors.
void unpack(const FusionBuffer& buffer, const void* src, std::span<const TensorRef> tensors);

// Called once per fusion buffer: allreduce `count` elements of `dtype` at `buf`, in place.
using AllreduceOne = std::function<void(void* buf, std::size_t count, DType dtype)>;

// Plan, then for each buffer: pack into one reusable staging buffer, allreduce_one, unpack.
// A buffer holding a single tensor is passed to allreduce_one directly (no copy). Buffers of
// 0 bytes are skipped. Returns the number of allreduce_one calls.
std::size_t fused_allreduce(std::span<const TensorRef> tensors, std::size_t threshold_bytes,
                            const AllreduceOne& allreduce_one, std::size_t alignment_bytes = kFusionAlignment);

}  // namespace colltune::coll
