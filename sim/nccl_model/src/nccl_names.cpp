// Spellings of NCCL's algorithms, protocols and collectives (see nccl_names.hpp).
#include "colltune/sim/nccl_names.hpp"

#include <string>

#include "colltune/common/error.hpp"

namespace colltune::sim {
namespace {

constexpr std::array<std::string_view, kNcclNumAlgos> kAlgoCsv{"tree", "ring",      "collnet_direct", "collnet_chain",
                                                               "nvls", "nvls_tree", "pat"};
constexpr std::array<std::string_view, kNcclNumAlgos> kAlgoEnv{"Tree", "Ring",     "CollNetDirect", "CollNetChain",
                                                               "NVLS", "NVLSTree", "PAT"};
constexpr std::array<std::string_view, kNcclNumProtos> kProtoCsv{"ll", "ll128", "simple"};
constexpr std::array<std::string_view, kNcclNumProtos> kProtoEnv{"LL", "LL128", "Simple"};
constexpr std::array<std::string_view, kNcclNumColls> kCollCsv{"broadcast", "reduce", "allgather", "reduce_scatter",
                                                               "allreduce"};
constexpr std::array<std::string_view, kNcclNumColls> kCollEnv{"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                                               "AllReduce"};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Index of `name` in either spelling table, or throws naming `what` and every valid name.
template <std::size_t N>
int find_name(std::string_view name, const std::array<std::string_view, N>& csv,
              const std::array<std::string_view, N>& env, std::string_view what) {
  for (std::size_t i = 0; i < N; ++i)
    if (iequal(name, csv[i]) || iequal(name, env[i])) return static_cast<int>(i);
  std::string valid;
  for (std::size_t i = 0; i < N; ++i) valid += (i ? ", " : "") + std::string(csv[i]);
  throw Error("unknown NCCL " + std::string(what) + " '" + std::string(name) + "' (valid: " + valid +
              "; NCCL's own spellings such as " + std::string(env[0]) + " are accepted too)");
}

}  // namespace

std::string_view to_string(NcclAlgo algo) { return kAlgoCsv[static_cast<std::size_t>(algo)]; }
std::string_view to_string(NcclProto proto) { return kProtoCsv[static_cast<std::size_t>(proto)]; }
std::string_view to_string(NcclColl coll) { return kCollCsv[static_cast<std::size_t>(coll)]; }
std::string_view nccl_env_name(NcclAlgo algo) { return kAlgoEnv[static_cast<std::size_t>(algo)]; }
std::string_view nccl_env_name(NcclProto proto) { return kProtoEnv[static_cast<std::size_t>(proto)]; }
std::string_view nccl_env_name(NcclColl coll) { return kCollEnv[static_cast<std::size_t>(coll)]; }

NcclAlgo parse_nccl_algo(std::string_view name) {
  return static_cast<NcclAlgo>(find_name(name, kAlgoCsv, kAlgoEnv, "algorithm"));
}
NcclProto parse_nccl_proto(std::string_view name) {
  return static_cast<NcclProto>(find_name(name, kProtoCsv, kProtoEnv, "protocol"));
}
NcclColl parse_nccl_coll(std::string_view name) {
  return static_cast<NcclColl>(find_name(name, kCollCsv, kCollEnv, "collective"));
}

}  // namespace colltune::sim
