// NCCL's names (tuner CSV and environment spellings), the versioned constants table, and the
// NCCL_ALGO / NCCL_PROTO grammar.
#include <gtest/gtest.h>

#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/nccl_constants.hpp"
#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/nccl_names.hpp"

namespace {

using namespace colltune;
using namespace colltune::sim;

// The message of the Error `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NcclNames, IndexOrderIsNccls) {
  // src/include/device.h: NCCL_ALGO_TREE 0 ... NCCL_ALGO_PAT 6; NCCL_PROTO_LL 0, LL128 1,
  // SIMPLE 2; ncclFunc_t Broadcast 0 ... AllReduce 4.
  EXPECT_EQ(index_of(NcclAlgo::tree), 0);
  EXPECT_EQ(index_of(NcclAlgo::ring), 1);
  EXPECT_EQ(index_of(NcclAlgo::nvls_tree), 5);
  EXPECT_EQ(index_of(NcclAlgo::pat), 6);
  EXPECT_EQ(index_of(NcclProto::simple), 2);
  EXPECT_EQ(index_of(NcclColl::allreduce), 4);
}

TEST(NcclNames, CsvAndEnvSpellingsRoundTrip) {
  for (NcclAlgo a : kNcclAlgos) {
    EXPECT_EQ(parse_nccl_algo(to_string(a)), a);
    EXPECT_EQ(parse_nccl_algo(nccl_env_name(a)), a);
  }
  for (NcclProto p : kNcclProtos) {
    EXPECT_EQ(parse_nccl_proto(to_string(p)), p);
    EXPECT_EQ(parse_nccl_proto(nccl_env_name(p)), p);
  }
  for (NcclColl c : kNcclColls) {
    EXPECT_EQ(parse_nccl_coll(to_string(c)), c);
    EXPECT_EQ(parse_nccl_coll(nccl_env_name(c)), c);
  }
  EXPECT_EQ(to_string(NcclAlgo::collnet_direct), "collnet_direct");
  EXPECT_EQ(nccl_env_name(NcclAlgo::nvls_tree), "NVLSTree");
  EXPECT_EQ(nccl_env_name(NcclProto::simple), "Simple");
  EXPECT_EQ(parse_nccl_algo("nvlstree"), NcclAlgo::nvls_tree);  // case-insensitive, as NCCL
  EXPECT_EQ(parse_nccl_proto("SIMPLE"), NcclProto::simple);
}

TEST(NcclNames, UnknownNamesListTheValidOnes) {
  const std::string algo = error_of([] { parse_nccl_algo("rhd"); });
  EXPECT_NE(algo.find("'rhd'"), std::string::npos) << algo;
  EXPECT_NE(algo.find("tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat"), std::string::npos) << algo;
  EXPECT_NE(error_of([] { parse_nccl_proto("ll64"); }).find("ll, ll128, simple"), std::string::npos);
  EXPECT_NE(error_of([] { parse_nccl_coll("alltoall"); }).find("reduce_scatter"), std::string::npos);
  EXPECT_NE(error_of([] { parse_nccl_cpu("zen9"); }).find("intel_srp"), std::string::npos);
}

TEST(NcclVersion, ParsesKnownReleases) {
  EXPECT_EQ(NcclVersion::parse("2.28").to_string(), "2.28");
  EXPECT_EQ(NcclVersion::parse("2.28.9").to_string(), "2.28");
  EXPECT_EQ(NcclVersion::parse("2.28.9-1").to_string(), "2.28");
  EXPECT_EQ(NcclVersion::parse("2.21.5-1").to_string(), "2.21");
  EXPECT_EQ(NcclVersion::known().front().to_string(), "2.21");
  EXPECT_EQ(NcclVersion::newest().to_string(), "2.30");
}

TEST(NcclVersion, RejectsUnknownAndMalformedWithTheKnownList) {
  for (const char* bad : {"2.26", "3.0", "2", "two.28", "2.28.", "2.28.9-", "2.28x", ""}) {
    const std::string msg = error_of([&] { NcclVersion::parse(bad); });
    const std::string quoted = std::string("'").append(bad).append("'");
    EXPECT_NE(msg.find(quoted), std::string::npos) << msg;
    EXPECT_NE(msg.find("known: 2.21, 2.28, 2.30"), std::string::npos) << msg;
  }
}

TEST(NcclVersion, InstalledIsAKnownTable) {
  const NcclVersion v = NcclVersion::installed();
  EXPECT_NO_THROW(nccl_constants(v));
#if defined(COLLTUNE_TEST_NCCL_MAJOR)
  // The nccl.h found at configure time (2.28.9 on the build machines) maps to its table.
  EXPECT_LE(v, (NcclVersion{COLLTUNE_TEST_NCCL_MAJOR, COLLTUNE_TEST_NCCL_MINOR}));
#endif
}

// Figures read from each tag's src/graph/tuning.cc, search.cc, device.h.
TEST(NcclConstants, TablesDifferWhereNcclChanged) {
  const NcclConstants& v21 = nccl_constants({2, 21});
  const NcclConstants& v28 = nccl_constants({2, 28});
  const NcclConstants& v30 = nccl_constants({2, 30});
  const auto tree = static_cast<std::size_t>(index_of(NcclAlgo::tree));
  const auto simple = static_cast<std::size_t>(index_of(NcclProto::simple));
  EXPECT_EQ(v21.base_lat[tree][simple], 0.0);
  EXPECT_EQ(v28.base_lat[tree][simple], 8.4);
  EXPECT_EQ(v21.hw_lat[0][tree][simple], 28.0);
  EXPECT_EQ(v28.hw_lat[0][tree][simple], 4.0);
  EXPECT_FALSE(v21.rules.pat);
  EXPECT_TRUE(v28.rules.pat);
  EXPECT_EQ(v21.max_channels, 32);
  EXPECT_EQ(v28.max_channels, 64);
  EXPECT_EQ(v28.per_ch_max_ring_ll128_bw[3][1], 34.6);  // Blackwell, 2 nodes
  EXPECT_EQ(v30.per_ch_max_ring_ll128_bw[3][1], 40.0);
  EXPECT_EQ(v28.speeds_sm90.intra.front(), 60.0f);
  EXPECT_EQ(v28.speeds_pre_sm90.inter.front(), 48.0f);
  EXPECT_EQ(v28.nccl_steps, 8);
  EXPECT_EQ(v28.buffsize[simple], 1L << 22);
  EXPECT_EQ(v28.nvls_efficiency[2], 0.85f);
  EXPECT_EQ(v28.ll_max_bw[2][0], 141.0);
}

TEST(NcclEnv, AlgoAndProtoListsFollowNcclsGrammar) {
  const topo::Topology t = topo::load_topology("dgx-h100");
  NcclOptions o;
  o.algo_env = "Ring";
  NcclModel ring_only(t, o);
  EXPECT_EQ(ring_only.choose(NcclColl::allreduce, 1 << 30).algo, NcclAlgo::ring);
  o.algo_env = "^NVLS";
  EXPECT_NE(NcclModel(t, o).choose(NcclColl::allreduce, 1 << 30).algo, NcclAlgo::nvls);
  o.algo_env = "allreduce:Tree;broadcast:Ring";
  const NcclModel per_coll(t, o);
  EXPECT_EQ(per_coll.choose(NcclColl::allreduce, 1 << 30).algo, NcclAlgo::tree);
  o.algo_env.clear();
  o.proto_env = "Simple";
  EXPECT_EQ(NcclModel(t, o).choose(NcclColl::allreduce, 1024).proto, NcclProto::simple);
}

TEST(NcclEnv, BadListsAreOneClearError) {
  const topo::Topology t = topo::load_topology("dgx-h100");
  NcclOptions o;
  o.algo_env = "Ring,Rhd";
  EXPECT_NE(error_of([&] { NcclModel(t, o); }).find("NCCL_ALGO='Ring,Rhd': unknown NCCL algorithm 'Rhd'"),
            std::string::npos);
  o.algo_env = "Ring;Tree";
  EXPECT_NE(error_of([&] { NcclModel(t, o); }).find("needs a collective prefix"), std::string::npos);
  o.algo_env = "alltoall:Ring";
  EXPECT_NE(error_of([&] { NcclModel(t, o); }).find("unknown NCCL collective 'alltoall'"), std::string::npos);
  o.algo_env = "NVLS";  // no NVLS on an A100
  const NcclModel a100(topo::load_topology("dgx-a100"), o);
  EXPECT_NE(error_of([&] { a100.choose(NcclColl::allreduce, 1 << 20); }).find("NCCL_ALGO=NVLS"), std::string::npos);
}

}  // namespace
