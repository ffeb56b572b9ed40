// NcclModel queries: the time of one cell (src/graph/tuning.cc, ncclTopoGetAlgoTime), the
// cost table handed to a tuner plugin (src/enqueue.cc, updateCollCostTable) and NCCL's pick
// with its channel count (topoGetAlgoInfo), and why an algorithm is not on the table.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "nccl_tuning.hpp"

namespace colltune::sim {
namespace {

template <typename Table>
auto cell(const Table& t, NcclColl c, NcclAlgo a, NcclProto p) {
  return t[static_cast<std::size_t>(index_of(c))][static_cast<std::size_t>(index_of(a))][static_cast<std::size_t>(index_of(p))];
}

}  // namespace

float NcclModel::bandwidth(NcclColl coll, NcclAlgo algo, NcclProto proto) const { return cell(bw_, coll, algo, proto); }
float NcclModel::latency(NcclColl coll, NcclAlgo algo, NcclProto proto) const { return cell(lat_, coll, algo, proto); }
NcclLatencyParts NcclModel::latency_parts(NcclColl coll, NcclAlgo algo, NcclProto proto) const {
  return cell(lat_parts_, coll, algo, proto);
}

double NcclModel::nvls_link_fraction(NcclAlgo algo) const {
  if (algo != NcclAlgo::nvls && algo != NcclAlgo::nvls_tree) return 1.0;
  if (!constants_->rules.nvls_efficiency) return 5.0 / 6.0;
  const int nch = channels(algo).channels;
  const double efficiency = constants_->nvls_efficiency[static_cast<std::size_t>(nccl::comp_cap_index(system_.cc_min))];
  if (nch < 2 || efficiency <= 0) return 1.0;  // NCCL runs no NVLS there
  return efficiency * (nch - 1) / nch;
}

std::size_t NcclModel::nvls_chunk_bytes(NcclAlgo algo, std::size_t bytes, int channels) const {
  if (algo != NcclAlgo::nvls && algo != NcclAlgo::nvls_tree) return 0;
  const NcclConstants& k = *constants_;
  // concurrentOps: every channel runs a chunk for every head at once.
  const auto ops = static_cast<std::uint64_t>(std::max(channels, 1)) *
                   static_cast<std::uint64_t>(std::max(this->channels(NcclAlgo::nvls).channels, 1));
  const auto n = static_cast<std::uint64_t>(bytes);
  auto chunk = static_cast<std::uint64_t>(k.nvls_chunk_size);
  // Shrinks the chunk to `to` while the buffer is under `times` rounds of every op's chunk.
  const auto shrink = [&](std::uint64_t times, std::uint64_t to) {
    if (n < times * ops * chunk && chunk > to) chunk = to;
  };
  if (algo == NcclAlgo::nvls) {
    // (Across nodes with an NVLS bandwidth under 150 GB/s NCCL caps it at 32 KiB; colltune
    // prices no multi-node NVLS, NCCL's own time stands in there.)
    shrink(64, 65536);
    shrink(8, 32768);
    shrink(2, 16384);
  } else {
    if (system_.nnodes >= k.nvls_tree_small_chunk_nodes) chunk = std::min<std::uint64_t>(chunk, 65536);
    shrink(32, 262144);
    shrink(16, 131072);
    shrink(4, 65536);
    shrink(1, 32768);
  }
  return static_cast<std::size_t>(chunk);
}

// ncclTopoGetAlgoTime for one operation: -1 when the cell is off.
float NcclModel::algo_time(NcclColl coll, NcclAlgo algo, NcclProto proto, std::size_t bytes) const {
  float bw = bandwidth(coll, algo, proto);
  float lat = latency(coll, algo, proto);
  if (bw == 0) return -1.0f;
  const NcclModelRules& rules = constants_->rules;
  const long log_size = nccl::nccl_log2i(static_cast<long>(bytes >> 6), rules.log2i_zero_is_minus_one);
  const auto& corr = constants_->tree_correction[static_cast<std::size_t>(index_of(proto))];
  const bool allreduce = coll == NcclColl::allreduce;
  if (algo == NcclAlgo::tree && allreduce && log_size >= 0 && log_size < 23) bw *= static_cast<float>(corr[static_cast<std::size_t>(log_size)]);
  if (rules.nvls_tree_correction_sm100 && algo == NcclAlgo::nvls_tree && allreduce && log_size >= 0 && log_size < 24 &&
      system_.cc_min >= 100)
    bw *= static_cast<float>(corr[static_cast<std::size_t>(log_size)]);
  if (algo == NcclAlgo::ring && proto == NcclProto::simple && system_.nnodes > 1 && allreduce &&
      bytes / static_cast<std::size_t>(system_.comm_channels * system_.nranks) >= 64)
    lat *= static_cast<float>(system_.cc_min < 80 ? constants_->ring_plateau_pre_sm80 : constants_->ring_plateau_sm80);
  return lat * 1 + static_cast<float>(bytes) / (1000 * bw);
}

// The algorithms updateCollCostTable (topoGetAlgoInfo in 2.21) asks about at all.
bool NcclModel::offered(NcclColl coll, NcclAlgo algo) const {
  const NcclSystem& s = system_;
  const int max_local = constants_->max_direct_arity + 1;
  const bool collnet = algo == NcclAlgo::collnet_direct || algo == NcclAlgo::collnet_chain;
  if (collnet && (!s.collnet_support || s.ranks_per_node > max_local)) return false;
  const bool nvls = algo == NcclAlgo::nvls || algo == NcclAlgo::nvls_tree;
  if (nvls && (!s.nvls_support || (coll != NcclColl::allreduce && s.ranks_per_node > constants_->max_nvls_arity)))
    return false;
  if (algo == NcclAlgo::nvls && !s.collnet_support && s.nnodes > 1) return false;
  const bool ag_rs = coll == NcclColl::allgather || coll == NcclColl::reduce_scatter;
  if (algo == NcclAlgo::nvls && ag_rs && s.nnodes > 1 && !constants_->rules.nvls_ag_rs_multinode) return false;
  return true;
}

NcclCostTable NcclModel::cost_table(NcclColl coll, std::size_t bytes) const {
  NcclCostTable table;
  for (auto& row : table) row.fill(-1.0f);  // NCCL_ALGO_PROTO_IGNORE
  if (system_.nranks == 1) {
    table[static_cast<std::size_t>(index_of(NcclAlgo::ring))][static_cast<std::size_t>(index_of(NcclProto::simple))] = 0;
    return table;
  }
  for (NcclAlgo a : kNcclAlgos) {
    if (!offered(coll, a)) continue;
    for (NcclProto p : kNcclProtos)
      table[static_cast<std::size_t>(index_of(a))][static_cast<std::size_t>(index_of(p))] = algo_time(coll, a, p, bytes);
  }
  return table;
}

double NcclModel::time_us(NcclAlgo algo, NcclProto proto, NcclColl coll, std::size_t bytes) const {
  const float t = cost_table(coll, bytes)[static_cast<std::size_t>(index_of(algo))][static_cast<std::size_t>(index_of(proto))];
  return t < 0 ? std::numeric_limits<double>::infinity() : static_cast<double>(t);
}

NcclChoice NcclModel::choose(NcclColl coll, std::size_t bytes) const {
  const NcclCostTable table = cost_table(coll, bytes);
  float best = 3600000000.0f;
  int algo = -1, proto = -1;
  for (int a = 0; a < kNcclNumAlgos; ++a)
    for (int p = 0; p < kNcclNumProtos; ++p) {
      const float t = table[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
      if (t >= 0 && t < best) {
        best = t;
        algo = a;
        proto = p;
      }
    }
  if (algo < 0)
    throw Error("NCCL would find no algorithm/protocol for " + std::string(to_string(coll)) +
                (options_.algo_env.empty() ? "" : " with NCCL_ALGO=" + options_.algo_env) +
                (options_.proto_env.empty() ? "" : " with NCCL_PROTO=" + options_.proto_env));
  NcclChoice c;
  c.algo = static_cast<NcclAlgo>(algo);
  c.proto = static_cast<NcclProto>(proto);
  c.channels = channels_for(c.algo, c.proto, bytes);
  c.time_us = best;
  return c;
}

// topoGetAlgoInfo: fewer channels while each thread would get less than its threshold of bytes.
int NcclModel::channels_for(NcclAlgo algo, NcclProto proto, std::size_t bytes) const {
  const auto a = static_cast<std::size_t>(index_of(algo)), p = static_cast<std::size_t>(index_of(proto));
  const auto n = static_cast<std::int64_t>(bytes);
  std::int64_t nc = system_.comm_channels;
  const std::int64_t nt = max_threads_[a][p];
  std::int64_t threshold = thread_threshold_[a][p];
  if (algo == NcclAlgo::collnet_direct) {
    const std::int64_t heads = collnet_heads_;
    bool more = true;
    for (std::int64_t sw = 16; sw >= 1 && more; sw /= 2) {
      while ((more = n < nc * nt * heads * threshold) && nc > sw) {
        if (nc == sw + sw / 2) threshold /= 2;
        --nc;
      }
    }
    return static_cast<int>(nc);
  }
  if (algo == NcclAlgo::nvls || algo == NcclAlgo::nvls_tree) {
    const bool capped = constants_->rules.nvls_multinode_channel_cap && system_.nnodes > 1 && algo == NcclAlgo::nvls;
    return capped ? std::min(system_.nvls_channels, system_.comm_channels) : system_.nvls_channels;
  }
  while (n < nc * nt * threshold && nc >= 2) --nc;
  return static_cast<int>(nc);
}

bool NcclModel::env_allows(NcclColl coll, NcclAlgo algo) const {
  return algo_on_[static_cast<std::size_t>(index_of(coll))][static_cast<std::size_t>(index_of(algo))] != 0;
}

bool NcclModel::env_allows(NcclColl coll, NcclProto proto) const {
  return proto_on_[static_cast<std::size_t>(index_of(coll))][static_cast<std::size_t>(index_of(proto))] != 0;
}

namespace {

std::string compute_capability(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

// CollNet (NCCL_COLLNET_ENABLE) needs SHARP switches and several nodes; nullopt when it runs.
std::optional<std::string> collnet_missing(const NcclSystem& s, const NcclOptions& o) {
  if (!o.collnet) return "CollNet is off (NCCL_COLLNET_ENABLE=1 turns it on)";
  if (s.nnodes < 2) return "CollNet needs more than one node";
  if (!s.network_reduces) return "no network switch reduces (SHARP: no net_switch has switch_reduction \"sharp\")";
  if (!s.collnet_support) return "NCCL's CollNet channel search finds no channel";
  return std::nullopt;
}

// NVLS and NVLSTree: an NVSwitch that reduces (NVLink SHARP), Hopper or newer, two GPUs a node.
std::optional<std::string> nvls_missing(const NcclSystem& s) {
  if (s.nvswitches == 0) return "the node has no NVSwitch";
  if (!s.switch_reduces)
    return "the node's NVSwitch does not reduce in the switch (NVLink SHARP: its switch_reduction is not \"nvls\")";
  if (s.cc_min < 90) return "NVLS needs compute capability 9.0 or newer, the GPUs have " + compute_capability(s.cc_min);
  if (s.ranks_per_node < 2) return "NVLS needs at least two GPUs per node";
  if (!s.nvls_support) return "NCCL's NVLS channel search finds no channel";
  return std::nullopt;
}

}  // namespace

// The conditions of offered(), computed() (nccl_tuning.cpp) and algo_disabled(), in words.
std::optional<std::string> NcclModel::unavailable(NcclColl coll, NcclAlgo algo) const {
  const NcclSystem& s = system_;
  const bool ag_rs = coll == NcclColl::allgather || coll == NcclColl::reduce_scatter;
  if (s.nranks == 1) return algo == NcclAlgo::ring ? std::nullopt : std::optional<std::string>("one rank: NCCL only copies");
  if ((coll == NcclColl::broadcast || coll == NcclColl::reduce) && algo != NcclAlgo::ring)
    return "NCCL runs broadcast and reduce with Ring only";
  switch (algo) {
    case NcclAlgo::ring: return std::nullopt;
    case NcclAlgo::tree:
      if (ag_rs) return "NCCL runs no allgather or reduce-scatter with Tree";
      return std::nullopt;
    case NcclAlgo::pat:
      if (!constants_->rules.pat) return "PAT exists from NCCL 2.23 on, this model is NCCL " + constants_->version.to_string();
      if (!ag_rs) return "PAT runs allgather and reduce-scatter only";
      if (s.cc_min < 60) return "PAT needs compute capability 6.0 or newer";
      if (s.nnodes != s.nranks) return "PAT needs one GPU per node, the nodes have " + std::to_string(s.ranks_per_node);
      return std::nullopt;
    case NcclAlgo::nvls:
    case NcclAlgo::nvls_tree: {
      if (auto why = nvls_missing(s)) return why;
      if (algo == NcclAlgo::nvls_tree && s.nnodes == 1) return "NVLSTree needs more than one node (one node runs NVLS)";
      if (algo == NcclAlgo::nvls_tree && ag_rs) return "NCCL runs no allgather or reduce-scatter with NVLSTree";
      if (algo == NcclAlgo::nvls && s.nnodes > 1)
        if (auto why = collnet_missing(s, options_)) return "across nodes it needs CollNet: " + *why;
      if (coll != NcclColl::allreduce && s.ranks_per_node > constants_->max_nvls_arity)
        return "more GPUs per node than NVLS takes (" + std::to_string(constants_->max_nvls_arity) + ")";
      return std::nullopt;
    }
    case NcclAlgo::collnet_direct:
    case NcclAlgo::collnet_chain:
      if (auto why = collnet_missing(s, options_)) return why;
      if (ag_rs && algo == NcclAlgo::collnet_chain) return "NCCL runs no allgather or reduce-scatter with CollNetChain";
      if (s.ranks_per_node > constants_->max_direct_arity + 1)
        return "CollNet takes at most " + std::to_string(constants_->max_direct_arity + 1) + " GPUs per node";
      if (algo == NcclAlgo::collnet_direct && s.nvswitches == 0) return "CollNetDirect needs an NVSwitch in the node";
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace colltune::sim
