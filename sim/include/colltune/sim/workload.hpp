#pragma once
// A training workload: the gradient tensors of one step, when each becomes ready during the
// backward pass, and the compute time around them.
#include <cstddef>
#include <string>
#include <vector>

#include "colltune/collectives/dtype.hpp"

namespace colltune::sim {

struct GradTensor {
  std::string name;
  std::size_t count = 0;  // elements
  coll::DType dtype = coll::DType::f32;
  double ready_us = 0;    // time after the backward pass starts at which the gradient is ready
  std::size_t bytes() const { return count * coll::dtype_size(dtype); }
};

struct Workload {
  std::string name;
  double forward_us = 0;
  double backward_us = 0;
  std::vector<GradTensor> tensors;  // in the order they become ready
  std::size_t total_bytes() const;
  std::size_t total_params() const;
};

}  // namespace colltune::sim
