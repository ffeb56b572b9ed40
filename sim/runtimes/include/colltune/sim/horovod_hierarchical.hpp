#pragma once
// Horovod's hierarchical allreduce over NCCL (HOROVOD_HIERARCHICAL_ALLREDUCE=1), priced as
// Horovod runs it: NCCLHierarchicalAllreduce::Execute in horovod/common/ops/nccl_operations.cc.
// For one fused buffer of n elements on H hosts with L GPUs each:
//  0. pad n up to a multiple of L x 64 elements (FUSION_BUFFER_ATOMIC_UNIT; only a buffer of
//     several tensors is padded); s = n / L elements per local rank, r = n mod L left over;
//  1. ncclReduceScatter of s x L elements on the host's L GPUs (NCCL's own algorithm and
//     protocol choice for the intra-host communicator);
//     with r > 0: ncclReduce of r elements to local rank L-1;
//  2. cudaMemcpy device-to-host of the shard into a malloc'd (pageable) buffer: s elements,
//     s + r on local rank L-1, the L GPUs of a host copying at once over their PCIe paths;
//  3. MPI_Allreduce of that host buffer on the cross-host communicator of local rank i (one rank
//     per host), the L communicators at once, sharing each host's NICs; MPI reduces on the CPU;
//  4. cudaMemcpy host-to-device of the shard;
//  5. ncclAllGather of s x L elements; with r > 0: ncclBroadcast of r elements from L-1.
// The phases run one after the other (each waits for the previous one on the host).
//
// Priced with:
//  - the NCCL price path (sim::NcclPricer) of one host's L GPUs for the NCCL calls: NCCL's pick,
//    priced by colltune's ring reduce-scatter and allgather on the step model's machine;
//  - colltune's ring cost hint for MPI_Allreduce across hosts (MPI picks its own algorithm;
//    Open MPI runs a ring for large messages) with the inter-host alpha/beta of the topology,
//    each host's NIC capacity shared by the L communicators, and the host CPUs' reduction rate
//    shared by the L processes;
//  - the copies at each GPU's share of its PCIe path to its nearest CPU (links used by several of
//    the host's GPUs are shared) x the PCIe efficiency (StepCosts) x the pageable-copy
//    efficiency below (docs/tune-runtimes.md gives the sources).
#include <cstddef>
#include <memory>
#include <string>

#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/step_costs.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

class NcclPricer;

// The phases of one buffer, us.
struct HorovodHierarchicalPhases {
  std::size_t shard_elems = 0;      // s
  std::size_t remainder_elems = 0;  // r
  double reduce_scatter_us = 0;     // NCCL reduce-scatter (+ reduce of the remainder)
  double to_host_us = 0;            // device-to-host copy
  double cross_host_us = 0;         // MPI_Allreduce across hosts
  double to_device_us = 0;          // host-to-device copy
  double allgather_us = 0;          // NCCL allgather (+ broadcast of the remainder)
  std::string nccl_reduce_scatter;  // NCCL's choice, "Ring/Simple"
  std::string nccl_allgather;
  double total_us() const { return reduce_scatter_us + to_host_us + cross_host_us + to_device_us + allgather_us; }
};

// Horovod copies each shard to a malloc'd (pageable) host buffer and back; the CUDA driver stages
// such copies through a pinned buffer, a host memcpy then the DMA. The fraction of the PCIe rate
// they get: 0.5, the two stages at equal rates and not overlapped (an assumption, not a
// measurement: docs/tune-runtimes.md).
inline constexpr double kPageableCopyEfficiency = 0.5;

class HorovodHierarchical {
 public:
  // Throws colltune::Error when the machine does not fit: one host, hosts with different GPU
  // counts (Horovod's non-homogeneous path is not modelled), or NCCL's model does not describe
  // one host (GPUs without a compute capability).
  // `nccl`: the user's NCCL settings, under which NCCL picks its reduce-scatter and allgather
  // inside a host.
  HorovodHierarchical(const topo::Topology& topology, const StepCosts& costs = {},
                      double pageable_copy_efficiency = kPageableCopyEfficiency, const NcclOptions& nccl = {});
  ~HorovodHierarchical();
  HorovodHierarchical(HorovodHierarchical&&) noexcept;

  // One buffer of `bytes` (`elem_size`-byte elements) holding `tensors` tensors.
  HorovodHierarchicalPhases phases(std::size_t bytes, std::size_t elem_size, std::size_t tensors) const;
  double time_us(std::size_t bytes, std::size_t elem_size, std::size_t tensors) const {
    return phases(bytes, elem_size, tensors).total_us();
  }
  // GB/s at which one GPU copies to or from pageable host memory while the host's other GPUs do too.
  double host_copy_gbps() const { return host_copy_gbps_; }
  int hosts() const { return hosts_; }
  int ranks_per_host() const { return local_; }

 private:
  int hosts_ = 0;
  int local_ = 0;
  double host_copy_gbps_ = 0;
  double alpha_inter_us_ = 0;
  double beta_inter_us_per_byte_ = 0;
  double beta_host_us_per_byte_ = 0;   // a host's NICs together
  double cpu_reduce_us_per_byte_ = 0;  // one MPI process's share of the host CPUs
  std::unique_ptr<NcclPricer> local_nccl_;

  double nccl_us(int coll, std::size_t bytes, std::string* label) const;
  double cross_host_us(std::size_t elems, std::size_t elem_size) const;
};

// The Horovod fusion-buffer padding unit in elements (FUSION_BUFFER_ATOMIC_UNIT in
// horovod/common/common.h).
inline constexpr std::size_t kHorovodAtomicUnit = 64;

}  // namespace colltune::sim
