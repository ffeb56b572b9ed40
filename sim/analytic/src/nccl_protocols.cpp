// NCCL's protocols as colltune's schedules pay them, and the machine figures calibration fits
// (nccl_price.hpp): per-call and per-message latencies from NCCL's own tables (the release's
// baseLat and hwLat, as NcclModel::latency_parts combines them), payload efficiencies, and the
// colltune schedule of each of NCCL's algorithms.
#include <algorithm>
#include <cmath>

#include "colltune/sim/nccl_price.hpp"

namespace colltune::sim {
namespace {

double us_per_byte(double gbps) { return gbps > 0 && std::isfinite(gbps) ? 1e-3 / gbps : 0.0; }
double gbps_of(double us_per_byte) { return us_per_byte > 0 ? 1e-3 / us_per_byte : 0.0; }

// The fastest link's time per byte of a machine's levels (0: no link priced).
double fastest_us_per_byte(const coll::LevelCosts& l) {
  const double intra = l.beta_intra_us_per_byte, inter = l.beta_inter_us_per_byte;
  if (intra > 0 && inter > 0) return std::min(intra, inter);
  return std::max(intra, inter);
}

}  // namespace

ProtocolCost protocol_cost(const NcclModel& nccl, NcclColl coll, NcclAlgo algo, NcclProto proto,
                           const ProtocolEfficiency& efficiency) {
  const NcclLatencyParts cell = nccl.latency_parts(coll, algo, proto);
  // The wire's own latency per step is what Ring/LL pays: LL writes 8-byte lines with their
  // flag, so a step costs the link's latency and no fence; the machine's alpha stands for it.
  const NcclLatencyParts wire = nccl.latency_parts(coll, NcclAlgo::ring, NcclProto::ll);
  ProtocolCost c;
  c.call_us = cell.base_us;
  c.hop_intra_us = std::max(0.0, cell.intra_us - wire.intra_us);
  c.hop_inter_us = std::max(0.0, cell.inter_us - wire.inter_us);
  c.intra_steps = cell.intra_steps;
  c.inter_steps = cell.inter_steps;
  c.efficiency = efficiency.of(proto);
  // NVLS and NVLSTree move their bytes inside a host with the switch's multimem loads and stores,
  // which NCCL's model grants a fraction of the link (nvlsEfficiency); their schedules price the
  // traffic at line rate, so they take that fraction.
  c.intra_fraction = nccl.nvls_link_fraction(algo);
  return c;
}

double latency_us(const ProtocolCost& cost, const coll::LevelCosts& machine) {
  return cost.call_us + cost.intra_steps * (machine.alpha_intra_us + cost.hop_intra_us) +
         cost.inter_steps * (machine.alpha_inter_us + cost.hop_inter_us);
}

coll::LevelCosts bandwidth_levels(const coll::LevelCosts& machine, const ProtocolCost& cost) {
  coll::LevelCosts l = machine;
  l.alpha_intra_us = l.alpha_inter_us = l.alpha_near_us = l.switch_alpha_us = 0;
  l.beta_intra_us_per_byte /= cost.efficiency * cost.intra_fraction;
  l.beta_inter_us_per_byte /= cost.efficiency;
  l.beta_host_us_per_byte /= cost.efficiency;
  // NCCL's kernels reduce the bytes as they stream them (recvReduceSend: load what arrived, add
  // the local input, store to the next peer, in one pass; src/device/prims_simple.h), so a
  // reduction costs only what it takes beyond the transfer it rides on. The schedules charge it
  // after each transfer; here at most the fastest link's time per byte is hidden (exact where
  // the reduction rides on that link, conservative where it rides on a slower one).
  const double fastest = fastest_us_per_byte(l);
  l.gamma_us_per_byte = std::max(0.0, l.gamma_us_per_byte - fastest);
  return l;
}

MachineFigures figures_of(const coll::LevelCosts& levels, const ProtocolEfficiency& efficiency) {
  MachineFigures f;
  f.alpha_intra_us = levels.alpha_intra_us;
  f.intra_gbps = gbps_of(levels.beta_intra_us_per_byte);
  f.alpha_inter_us = levels.alpha_inter_us;
  f.inter_gbps = gbps_of(levels.beta_inter_us_per_byte);
  f.reduce_gbps = gbps_of(levels.gamma_us_per_byte);
  f.efficiency = efficiency;
  return f;
}

coll::LevelCosts with_figures(const coll::LevelCosts& base, const MachineFigures& f) {
  coll::LevelCosts l = base;
  l.alpha_intra_us = f.alpha_intra_us;
  l.beta_intra_us_per_byte = us_per_byte(f.intra_gbps);
  l.alpha_inter_us = f.alpha_inter_us;
  l.beta_inter_us_per_byte = us_per_byte(f.inter_gbps);
  if (base.beta_inter_us_per_byte > 0)
    l.beta_host_us_per_byte = base.beta_host_us_per_byte * (l.beta_inter_us_per_byte / base.beta_inter_us_per_byte);
  if (base.alpha_intra_us > 0) l.switch_alpha_us = base.switch_alpha_us * (f.alpha_intra_us / base.alpha_intra_us);
  // A near route's latency scales with the worst one's: calibration scales the latency of every
  // link off the hosts alike (calibrate_output.cpp).
  if (base.alpha_inter_us > 0) l.alpha_near_us = base.alpha_near_us * (f.alpha_inter_us / base.alpha_inter_us);
  l.gamma_us_per_byte = us_per_byte(f.reduce_gbps);
  return l;
}

std::optional<std::string> nccl_schedule_of(NcclColl coll, NcclAlgo algo, int hosts, std::string* why) {
  const auto none = [&](const std::string& reason) -> std::optional<std::string> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const std::string what = "NCCL's " + std::string(nccl_env_name(algo)) + " " + std::string(to_string(coll));
  if (algo == NcclAlgo::ring) {
    if (coll == NcclColl::allreduce) return "nccl_ring";
    if (coll == NcclColl::reduce_scatter) return "reduce_scatter_ring";
    if (coll == NcclColl::allgather) return "allgather_ring";
    return none(what + ": no colltune schedule");
  }
  if (coll != NcclColl::allreduce) return none(what + ": no colltune schedule");
  switch (algo) {
    case NcclAlgo::tree: return "nccl_tree";
    case NcclAlgo::nvls:
      if (hosts > 1) return none(what + " across hosts (NVLS with CollNet): no colltune schedule");
      return "nccl_nvls";
    case NcclAlgo::nvls_tree: return "nccl_nvls_tree";
    case NcclAlgo::collnet_direct: return "nccl_collnet";
    default: return none(what + ": no colltune schedule");
  }
}

std::string NcclPrice::label() const {
  const std::string cell = std::string(nccl_env_name(nccl.algo)) + "/" + std::string(nccl_env_name(nccl.proto));
  return cell + (schedule.empty() ? " (NCCL's model)" : " (" + schedule + ")");
}

}  // namespace colltune::sim
