#pragma once
// NCCL priced: who picks, and what it costs (docs/nccl-model.md, "NCCL priced").
//
// Two roles, never mixed:
//  - what NCCL picks: NCCL's own model (sim::NcclModel: its constants per release, NCCL_ALGO,
//    NCCL_PROTO, CollNet) on the machine *as measured* (a calibrated topology's measured link
//    figures), so calibration never changes NCCL's mind;
//  - what it costs: the picked algorithm's colltune schedule (nccl_ring, nccl_tree, nccl_nvls,
//    nccl_nvls_tree, nccl_collnet; reduce_scatter_ring, allgather_ring) priced by the analytic
//    model on the machine as priced (link figures as collectives achieve them, or as calibrated)
//    with the protocol's costs (ProtocolCost): NCCL's latency formula at the machine's
//    latencies plus the protocol's overheads, and the schedule's bandwidth at the protocol's
//    payload efficiency.
// Where NCCL picks an algorithm colltune has no schedule of (CollNetChain, PAT, multi-node NVLS,
// broadcast and reduce), NCCL's own time stands in and NcclPrice::fallback says so.
//
// Every command that predicts NCCL (simulate --algo nccl, step, tune, sweep, compare, calibrate,
// bench --predict) prices through NcclPricer.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "colltune/collectives/registry.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

// The payload fraction of the bytes NCCL's LL and LL128 put on the wire: nominal 4 of every 8
// bytes (LL: a flag per 4-byte word) and 120 of 128 (LL128: a flag word per 128-byte line), or
// what a calibration fitted (its "values": ll_efficiency, ll128_efficiency). Simple carries
// only payload.
struct ProtocolEfficiency {
  double ll = 0.5;
  double ll128 = 120.0 / 128.0;
  double of(NcclProto proto) const { return proto == NcclProto::ll ? ll : proto == NcclProto::ll128 ? ll128 : 1.0; }
};

// What NCCL's algorithm and protocol cost beyond the bytes (docs/nccl-model.md has the table).
// A call is priced in two parts:
//  - latency: NCCL's own formula for the cell (NcclModel::latency_parts: the steps NCCL counts
//    inside and across nodes), each step at the machine's latency for its level (alpha, which
//    the lightest protocol pays: Ring with LL writes 8-byte lines with their flag, no fence)
//    plus the protocol's overhead (NCCL's per-step latency of the cell minus Ring/LL's at that
//    level, never below 0), and NCCL's base latency once per call (kernel launch and setup);
//  - bandwidth: the colltune schedule priced with no latency (every transfer, port share,
//    NIC share and reduction of the schedule), its bandwidths divided by the protocol's payload
//    efficiency, its reductions charged only beyond the fastest link's time per byte (NCCL's
//    kernels reduce the bytes as they forward them, one pass, where the schedule charges a
//    reduction after its transfer); NVLS's and NVLS-Tree's transfers inside a host also by the fraction of the
//    NVLink NCCL's model grants NVLS (NcclModel::nvls_link_fraction: the multimem loads and
//    stores do not run at a copy's rate), their schedules in NCCL's chunks
//    (NcclModel::nvls_chunk_bytes).
// NCCL's kernels keep up to NCCL_STEPS transfers in flight, so a step's latency is paid once
// along the pipeline, not once per chunk as the schedule's rendezvous steps would pay it.
struct ProtocolCost {
  double call_us = 0;
  double hop_intra_us = 0;
  double hop_inter_us = 0;
  double intra_steps = 0;
  double inter_steps = 0;
  double efficiency = 1;
  double intra_fraction = 1;  // NVLS's share of the NVLink rate (inside a host only)
};
ProtocolCost protocol_cost(const NcclModel& nccl, NcclColl coll, NcclAlgo algo, NcclProto proto,
                           const ProtocolEfficiency& efficiency);
// The latency part on a machine (its alpha_intra_us, alpha_inter_us).
double latency_us(const ProtocolCost& cost, const coll::LevelCosts& machine);
// The machine for the bandwidth part: no latencies, every bandwidth (links, host NICs) divided
// by the protocol's efficiency, the bandwidth inside a host also by intra_fraction, the
// reduction's time per byte less the fastest link's (never below 0).
coll::LevelCosts bandwidth_levels(const coll::LevelCosts& machine, const ProtocolCost& cost);

// The figures of a machine that calibration fits (calibrate/), as the pricer applies them to
// each of its machines' level costs: latency and bandwidth inside a host and between hosts, the
// reduction rate, the protocol efficiencies.
struct MachineFigures {
  double alpha_intra_us = 0;
  double intra_gbps = 0;
  double alpha_inter_us = 0;
  double inter_gbps = 0;
  double reduce_gbps = 0;
  ProtocolEfficiency efficiency;
};
MachineFigures figures_of(const coll::LevelCosts& levels, const ProtocolEfficiency& efficiency = {});
// `base` with `f` in place: the host-NIC share keeps its ratio to the inter-host bandwidth, a
// switch's one-link latency its ratio to the intra-host latency (the link figures that produce
// `f`, as calibrate writes them, scale that way).
coll::LevelCosts with_figures(const coll::LevelCosts& base, const MachineFigures& f);

// The colltune schedule of NCCL's algorithm for a collective on a machine of `hosts` hosts
// (registry id), or nullopt with `why` set.
std::optional<std::string> nccl_schedule_of(NcclColl coll, NcclAlgo algo, int hosts, std::string* why = nullptr);

// One NCCL call priced.
struct NcclPrice {
  NcclChoice nccl;        // NCCL's pick (or the cell asked for): algorithm, protocol, channels, NCCL's own time
  std::string schedule;   // the colltune schedule that priced it; empty where NCCL's time stands in
  std::string fallback;   // why NCCL's own time stands in ("" where colltune priced it)
  double time_us = 0;     // colltune's time (NCCL's own where fallback); +infinity: cannot run
  std::string label() const;  // "Ring/LL128 (nccl_ring)", "CollNetChain/Simple (NCCL's model)"
};

class NcclPricer {
 public:
  // `priced`: the machine the schedules are priced on (every link as collectives achieve it:
  // sim::priced_machine, step_costs.hpp). `measured`: the same machine as measured, which NCCL's
  // model reads (sim::measured_machine, calibration.hpp). They must have the same ranks.
  // Throws colltune::Error where NCCL's model does not fit the machine (NcclModel's reasons).
  // `efficiency`: the protocols' payload fractions (a calibration's, or nominal).
  NcclPricer(topo::Topology priced, const topo::Topology& measured, const NcclOptions& options,
             const ProtocolEfficiency& efficiency = {});
  ~NcclPricer();
  NcclPricer(const NcclPricer&) = delete;
  NcclPricer& operator=(const NcclPricer&) = delete;

  const NcclModel& model() const;
  int nranks() const;
  // The priced machine's own figures (protocol efficiencies: the calibrated ones, or nominal).
  const MachineFigures& figures() const;

  // NCCL's pick for the call, priced. `figures` (calibration) replaces the machine's.
  // Throws colltune::Error where NCCL runs nothing (NCCL_ALGO/NCCL_PROTO rule out every cell).
  NcclPrice price(NcclColl coll, std::size_t bytes, std::size_t elem_size = 4,
                  const MachineFigures* figures = nullptr) const;
  // One cell (the tuner's candidates; rows whose log names the algorithm and protocol); time
  // +infinity where NCCL would not run it here.
  NcclPrice price(NcclColl coll, NcclAlgo algo, NcclProto proto, std::size_t bytes, std::size_t elem_size = 4,
                  const MachineFigures* figures = nullptr) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace colltune::sim
