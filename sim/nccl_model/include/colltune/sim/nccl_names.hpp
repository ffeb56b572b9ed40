#pragma once
// NCCL's algorithms, protocols and collective types, numbered as NCCL numbers them (the index
// order of its tables and of the tuner plugin's cost table), with their spellings:
//  - to_string: the tuner-plugin CSV spelling of NCCL's example tuner (tree, ring,
//    collnet_direct, collnet_chain, nvls, nvls_tree, pat; ll, ll128, simple; broadcast, reduce,
//    allgather, reduce_scatter, allreduce);
//  - nccl_env_name: the spelling of NCCL_ALGO / NCCL_PROTO and of NCCL's logs (ncclAlgoStr,
//    ncclProtoStr, ncclFuncStr in src/init.cc: Tree, Ring, CollNetDirect, CollNetChain, NVLS,
//    NVLSTree, PAT; LL, LL128, Simple; Broadcast, Reduce, AllGather, ReduceScatter, AllReduce).
// parse_* accept either spelling, case-insensitively, and throw colltune::Error listing the
// valid names otherwise.
#include <array>
#include <string_view>

namespace colltune::sim {

// NCCL_ALGO_* (src/include/device.h): the row order of the cost table.
enum class NcclAlgo { tree = 0, ring = 1, collnet_direct = 2, collnet_chain = 3, nvls = 4, nvls_tree = 5, pat = 6 };
// NCCL_PROTO_*: the column order of the cost table.
enum class NcclProto { ll = 0, ll128 = 1, simple = 2 };
// ncclFunc_t, the tuner plugin's collType.
enum class NcclColl { broadcast = 0, reduce = 1, allgather = 2, reduce_scatter = 3, allreduce = 4 };

inline constexpr int kNcclNumAlgos = 7;
inline constexpr int kNcclNumProtos = 3;
inline constexpr int kNcclNumColls = 5;

inline constexpr std::array<NcclAlgo, kNcclNumAlgos> kNcclAlgos{NcclAlgo::tree,          NcclAlgo::ring,
                                                                 NcclAlgo::collnet_direct, NcclAlgo::collnet_chain,
                                                                 NcclAlgo::nvls,          NcclAlgo::nvls_tree,
                                                                 NcclAlgo::pat};
inline constexpr std::array<NcclProto, kNcclNumProtos> kNcclProtos{NcclProto::ll, NcclProto::ll128,
                                                                   NcclProto::simple};
inline constexpr std::array<NcclColl, kNcclNumColls> kNcclColls{NcclColl::broadcast, NcclColl::reduce,
                                                                NcclColl::allgather, NcclColl::reduce_scatter,
                                                                NcclColl::allreduce};

inline constexpr int index_of(NcclAlgo a) { return static_cast<int>(a); }
inline constexpr int index_of(NcclProto p) { return static_cast<int>(p); }
inline constexpr int index_of(NcclColl c) { return static_cast<int>(c); }

std::string_view to_string(NcclAlgo algo);
std::string_view to_string(NcclProto proto);
std::string_view to_string(NcclColl coll);
std::string_view nccl_env_name(NcclAlgo algo);
std::string_view nccl_env_name(NcclProto proto);
std::string_view nccl_env_name(NcclColl coll);

NcclAlgo parse_nccl_algo(std::string_view name);
NcclProto parse_nccl_proto(std::string_view name);
NcclColl parse_nccl_coll(std::string_view name);

}  // namespace colltune::sim
