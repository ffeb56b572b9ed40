#pragma once
// Internal: NCCL's tuning model (src/graph/tuning.cc, ncclTopoTuneModel) and the parsing of
// NCCL_ALGO / NCCL_PROTO (parseList).
#include <array>
#include <string_view>

#include "colltune/sim/nccl_model.hpp"

namespace colltune::sim::nccl {

template <typename T, int N>
using PerColl = std::array<std::array<T, N>, kNcclNumColls>;
using AlgoProto = std::array<std::array<float, kNcclNumProtos>, kNcclNumAlgos>;

// Enable flags per collective: 0 off, 1 on, 2 on where NCCL's own rules allow (LL128).
struct Enables {
  PerColl<int, kNcclNumAlgos> algo{};
  PerColl<int, kNcclNumProtos> proto{};
};
// NCCL's defaults (every algorithm, LL and Simple on, LL128 automatic) with the environment
// lists applied. Throws colltune::Error for an unknown name or prefix, naming the variable.
Enables parse_enables(std::string_view algo_env, std::string_view proto_env);

struct TuneInput {
  const NcclConstants* constants = nullptr;
  const NcclSystem* system = nullptr;
  std::array<const ChannelPlan*, kNcclNumAlgos> graphs{};  // by algorithm (PAT = tree, NVLSTree = NVLS)
  int collnet_heads = 0;      // CollNetDirect heads per node
  double net_overhead_us = -1;  // NCCL_NET_OVERHEAD, < 0 = default
  double net_latency_us = 0;    // graph latencyInter
  Enables enables;
};

// A latency in the parts NCCL's formula combines (NcclLatencyParts), as NCCL's floats.
struct LatencyParts {
  float base = 0;
  float intra = 0;
  float inter = 0;
  float intra_steps = 0;
  float inter_steps = 0;
};

struct TuneTables {
  std::array<AlgoProto, kNcclNumColls> bw{};   // comm->bandwidths (GB/s of algorithm bandwidth)
  std::array<AlgoProto, kNcclNumColls> lat{};  // comm->latencies (us)
  std::array<std::array<std::array<LatencyParts, kNcclNumProtos>, kNcclNumAlgos>, kNcclNumColls> parts{};
  std::array<std::array<int, kNcclNumProtos>, kNcclNumAlgos> max_threads{};
  std::array<std::array<long, kNcclNumProtos>, kNcclNumAlgos> thread_threshold{};
};

TuneTables tune_model(const TuneInput& in);

// tuning.cc's compCapIndex: the row of the per-generation tables (Volta 0, Ampere 1, Hopper 2,
// Blackwell 3) for the communicator's lowest compute capability.
inline int comp_cap_index(int cc_min) { return cc_min >= 100 ? 3 : cc_min >= 90 ? 2 : cc_min >= 80 ? 1 : 0; }

// NCCL's log2i: floor(log2(n)); for 0, -1 from 2.22 on (0 before).
long nccl_log2i(long n, bool zero_is_minus_one);

}  // namespace colltune::sim::nccl
