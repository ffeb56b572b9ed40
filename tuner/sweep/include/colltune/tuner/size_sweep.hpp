#pragma once
// colltune sweep --bytes: an allreduce's time and bus bandwidth against message size, on every
// topology of one or two varied topology parameters (nodes, nic_gbit, oversub, gpus, ...). A thin
// loop over the predictions `colltune simulate` makes: NCCL's own choice per size (algorithm
// "nccl", NCCL's model) or a registry algorithm (colltune's cost model).
#include <cstddef>
#include <string>
#include <vector>

#include "colltune/tuner/sweep.hpp"

namespace colltune::tuner {

struct SizeSweepSpec {
  std::string topology;          // the base spec; axes override or add its parameters
  std::vector<SweepAxis> axes;   // one or two topology parameters
  std::vector<std::size_t> sizes;  // bytes per rank, fp32 payloads
  std::string algorithm = "nccl";  // "nccl" or a registry allreduce id
  sim::NcclOptions nccl;           // "nccl": the user's NCCL settings (as simulate --nccl-algo ...)
};

struct SizeSweepCell {
  std::size_t bytes = 0;
  double time_us = 0;
  double busbw_gbps = 0;  // nccl-tests' allreduce bus bandwidth: bytes / time x 2(p-1)/p
  std::string choice;     // what ran: "Ring/LL128" (NCCL's pick) or the registry id
  // Why the algorithm does not run here, as simulate says it ("single-node NVLS only: ..."); then
  // time_us and busbw_gbps are 0 and are shown as n/a, never as a rate.
  std::string not_applicable = {};
};

struct SizeSweepPoint {
  std::vector<std::string> values;  // one per axis
  std::string topology;             // the spec this point ran
  int ranks = 0;
  std::vector<SizeSweepCell> cells;  // one per size
};

struct SizeSweepResult {
  SizeSweepSpec spec;
  std::vector<SizeSweepPoint> points;  // first axis slowest
};

// Checks every point's topology first (one line naming the axis and value), then prices every
// size on each. Throws colltune::Error for a model key (model, batch) on an axis, no sizes, an
// algorithm that is not an allreduce, or NCCL's model not describing a point's topology.
SizeSweepResult run_size_sweep(const SizeSweepSpec& spec);

std::string size_sweep_text(const SizeSweepResult& result);
std::string size_sweep_csv(const SizeSweepResult& result);
std::string size_sweep_json(const SizeSweepResult& result);
std::string size_sweep_html(const SizeSweepResult& result);

}  // namespace colltune::tuner
