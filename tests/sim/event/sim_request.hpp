#pragma once
// A CollectiveRequest for the cost model and the event simulator: algorithm, bytes, chunk
// (the in-switch tests, test_nvls.cpp and test_in_network.cpp, ask for many).
#include <cstddef>
#include <string>

#include "colltune/sim/cost_model.hpp"

namespace colltune::sim::test {

inline constexpr std::size_t kGiB = std::size_t{1} << 30;

inline CollectiveRequest request(const std::string& algo, std::size_t bytes, std::size_t chunk_elems = 0) {
  CollectiveRequest r;
  r.algorithm = algo;
  r.bytes = bytes;
  r.options.chunk_elems = chunk_elems;
  return r;
}

}  // namespace colltune::sim::test
