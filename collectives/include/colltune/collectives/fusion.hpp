#pragma once
// Tensor fusion (Horovod's HOROVOD_FUSION_THRESHOLD): pack a list of tensors, in order, into
// fusion buffers of at most `threshold` bytes, one buffer per dtype run; a tensor larger than
// the threshold goes alone. One allreduce per buffer, then unpack. The plan is pure and cheap:
// the simulator's training-step model uses the same function as the runtime.
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
std::vector<FusionBuffer> plan_fusion(std::span<const FusionTensor> tensors, std::size_t threshold_bytes,
                                      std::size_t alignment_bytes = kFusionAlignment);

}  // namespace colltune::coll
