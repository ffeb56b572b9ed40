// Matching and applying rows, through every cost-table interface (v3..v6) as NCCL calls them:
// sizes inside, between and outside the rows with inclusive bounds, job shape, protocol
// wildcard, unusable cells, channels, numPipeOps and regBuff.
#include "plugin_fixture.hpp"

namespace colltune::nccl_plugin::test {
namespace {

using abi::kAllGather;
using abi::kAllReduce;

// Two allreduce ranges with a gap between them, for a 2-node, 16-rank job.
const char* const kTwoRanges =
    "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n"
    "allreduce,1024,4096,ring,simple,-1,2,16,-1,-1\n"
    "allreduce,8192,65536,tree,ll,-1,2,16,-1,-1\n";

TEST_P(PluginTest, SizesInsideTheRowsChooseTheRowsCell) {
  void* ctx = load(kTwoRanges);
  for (std::size_t bytes : {1024, 2048, 4096}) expect_chosen(ask_allreduce(ctx, bytes), abi::kRing, abi::kSimple);
  for (std::size_t bytes : {8192, 30000, 65536}) expect_chosen(ask_allreduce(ctx, bytes), abi::kTree, abi::kLL);
}

TEST_P(PluginTest, SizesBetweenAndOutsideTheRowsLeaveNcclAlone) {
  void* ctx = load(kTwoRanges);
  // Just outside each inclusive bound, in the gap, below the first and above the last row.
  for (std::size_t bytes : {0ul, 1023ul, 4097ul, 6000ul, 8191ul, 65537ul, 1ul << 40})
    expect_untouched(ask(ctx, kAllReduce, bytes, 1, 0, {}, /*channels_in=*/12345), {}, 12345);
}

TEST_P(PluginTest, OtherCollectivesLeaveNcclAlone) {
  void* ctx = load(kTwoRanges);
  for (int coll : {abi::kBroadcast, abi::kReduce, abi::kAllGather, abi::kReduceScatter})
    expect_untouched(ask(ctx, coll, 2048));
}

TEST_P(PluginTest, RowsForAnotherJobShapeNeverMatch) {
  const std::string csv = kTwoRanges;
  for (auto [ranks, nodes] : {std::pair<std::size_t, std::size_t>{16, 4}, {8, 2}, {32, 4}, {16, 1}}) {
    void* ctx = load(csv, ranks, nodes);
    expect_untouched(ask(ctx, kAllReduce, 2048, 1, 0, {}, 12345), {}, 12345);
  }
  // A table made for another job shape is a warning (it silently did nothing, logged at INFO),
  // one per communicator, saying how many rows fit it.
  const auto warnings = logged(abi::kLogWarn);
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_NE(warnings.back().find("0 apply to nNodes=1 nRanks=16: the table was made for another job shape"),
            std::string::npos)
      << warnings.back();
}

TEST_P(PluginTest, WildcardShapeMatchesAnyJob) {
  const char* csv = "allreduce,0,1048576,tree,simple,-1,-1,-1\n";  // the 8-field form
  for (auto [ranks, nodes] : {std::pair<std::size_t, std::size_t>{16, 2}, {8, 1}, {1024, 128}})
    expect_chosen(ask_allreduce(load(csv, ranks, nodes), 4096), abi::kTree, abi::kSimple);
}

TEST_P(PluginTest, TheFirstMatchingRowWins) {
  void* ctx = load(
      "allreduce,0,1000,tree,simple,-1,-1,-1\n"
      "allreduce,0,1000000,ring,ll128,-1,-1,-1\n");
  expect_chosen(ask_allreduce(ctx, 1000), abi::kTree, abi::kSimple);
  expect_chosen(ask_allreduce(ctx, 1001), abi::kRing, abi::kLL128);
}

TEST_P(PluginTest, ProtocolWildcardTakesTheCheapestUsableProtocol) {
  void* ctx = load("allreduce,0,1000000,ring,-1,-1,2,16\n");
  Costs costs;
  costs.cell[abi::kRing][abi::kLL] = 7.0f;
  costs.cell[abi::kRing][abi::kLL128] = 5.0f;
  costs.cell[abi::kRing][abi::kSimple] = 6.0f;
  expect_chosen(ask(ctx, kAllReduce, 100, 1, 0, costs), abi::kRing, abi::kLL128, costs);
  // The cheapest is unusable: the cheapest usable one instead, never the -1 cell.
  costs.cell[abi::kRing][abi::kLL128] = abi::kIgnoredCost;
  expect_chosen(ask(ctx, kAllReduce, 100, 1, 0, costs), abi::kRing, abi::kSimple, costs);
  // No usable protocol for ring: NCCL keeps its choice.
  costs.cell[abi::kRing][abi::kLL] = costs.cell[abi::kRing][abi::kSimple] = abi::kIgnoredCost;
  expect_untouched(ask(ctx, kAllReduce, 100, 1, 0, costs), costs);
}

TEST_P(PluginTest, AnUnusableCellIsNeverEnabledAndNothingElseChanges) {
  void* ctx = load(
      "allreduce,0,4096,ring,ll128,8,2,16\n"
      "allreduce,4097,1000000,nvls,simple,8,2,16\n"
      "allreduce,0,1000000,tree,simple,-1,2,16\n");
  Costs costs;
  costs.cell[abi::kRing][abi::kLL128] = abi::kIgnoredCost;
  for (int p = 0; p < abi::kNumProtocols; ++p) costs.cell[abi::kNvls][p] = abi::kIgnoredCost;
  // The matching row's cell is -1: no cell, no channel count, and no fall-through to later rows.
  expect_untouched(ask(ctx, kAllReduce, 100, 1, 0, costs), costs);
  expect_untouched(ask(ctx, kAllReduce, 5000, 1, 0, costs), costs);
  // A disabled cell stays -1 whatever was chosen.
  const Outcome o = ask(ctx, kAllReduce, 100, 1, 0, costs);
  EXPECT_EQ(o.costs.cell[abi::kRing][abi::kLL128], abi::kIgnoredCost);
}

TEST_P(PluginTest, ChannelsAreSetOnlyByARowThatSetsThem) {
  void* ctx = load(
      "allreduce,0,4096,ring,simple,4,2,16\n"
      "allreduce,4097,8192,ring,simple,-1,2,16\n"
      "allreduce,8193,16384,-1,-1,6,2,16\n");
  const Outcome set = ask_allreduce(ctx, 100);
  expect_chosen(set, abi::kRing, abi::kSimple);
  EXPECT_EQ(set.channels, 4);
  // channels -1: NCCL's value (0 as NCCL passes it, or any preset) stays.
  EXPECT_EQ(ask(ctx, kAllReduce, 5000, 1, 0, {}, 0).channels, 0);
  EXPECT_EQ(ask(ctx, kAllReduce, 5000, 1, 0, {}, 12345).channels, 12345);
  // algorithm -1: the cost table is NCCL's, only the channel count is the row's.
  const Outcome only_channels = ask_allreduce(ctx, 10000);
  EXPECT_TRUE(only_channels.costs == Costs{});
  EXPECT_EQ(only_channels.channels, 6);
  // No row: untouched.
  EXPECT_EQ(ask(ctx, kAllReduce, 20000, 1, 0, {}, 12345).channels, 12345);
}

TEST_P(PluginTest, NumPipeOpsMustMatchWhereTheRowSaysSo) {
  void* ctx = load("allgather,0,1000000,ring,ll,-1,2,16,4\n");
  expect_chosen(ask(ctx, kAllGather, 100, /*pipe_ops=*/4), abi::kRing, abi::kLL);
  expect_untouched(ask(ctx, kAllGather, 100, /*pipe_ops=*/1));
}

TEST_P(PluginTest, RegBuffMustMatchWhereTheInterfacePassesIt) {
  void* ctx = load(
      "allreduce,0,1000000,ring,ll,-1,2,16,-1,1\n"
      "allreduce,0,1000000,tree,simple,-1,2,16,-1,-1\n");
  if (tuner_.passes_reg_buff()) {
    expect_chosen(ask(ctx, kAllReduce, 100, 1, /*reg_buff=*/1), abi::kRing, abi::kLL);
    expect_chosen(ask(ctx, kAllReduce, 100, 1, /*reg_buff=*/0), abi::kTree, abi::kSimple);
  } else {
    // v3 does not say whether buffers are registered: a row that requires it cannot match.
    expect_chosen(ask(ctx, kAllReduce, 100, 1), abi::kTree, abi::kSimple);
  }
}

TEST_P(PluginTest, AnAlgorithmOutsideAnOlderNcclsTableIsLeftAlone) {
  void* ctx = load("allgather,0,1000000,pat,simple,2,2,16\n");
  // NCCL 2.21 and 2.22 pass 6 algorithm rows: PAT (index 6) is not in their table.
  Costs costs;
  int channels = 0;
  EXPECT_EQ(tuner_.call(ctx, kAllGather, 100, costs, &channels, 1, 0, /*num_algo=*/6), abi::kSuccess);
  EXPECT_TRUE(costs == Costs{});
  EXPECT_EQ(channels, 0);
  // With 7 rows it applies.
  expect_chosen(ask(ctx, kAllGather, 100), abi::kPat, abi::kSimple);
}

TEST_P(PluginTest, EachRowsFirstDecisionIsLoggedAtInfo) {
  void* ctx = load(
      "allreduce,1024,4096,ring,simple,-1,2,16,-1,-1\n"
      "allreduce,8192,65536,tree,ll,8,2,16,-1,-1\n"
      "allreduce,65537,99999,ring,ll128,-1,2,16,-1,-1\n");
  Costs no_ll128;
  no_ll128.cell[abi::kRing][abi::kLL128] = abi::kIgnoredCost;
  ask_allreduce(ctx, 2048);
  ask_allreduce(ctx, 3000);
  ask_allreduce(ctx, 10000);
  ask(ctx, kAllReduce, 70000, 1, 0, no_ll128);
  std::vector<std::string> decisions;
  for (const auto& l : captured_log())
    if (l.level == abi::kLogInfo && l.text.find("bytes ->") != std::string::npos) {
      EXPECT_EQ(l.flags, 0x40ul) << "decisions are logged under NCCL_DEBUG_SUBSYS=TUNING";
      decisions.push_back(l.text);
    }
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions[0], "colltune tuner: allreduce 2048 bytes -> line 1: ring/simple preferred, NCCL's channels");
  EXPECT_EQ(decisions[1], "colltune tuner: allreduce 10000 bytes -> line 2: tree/ll preferred, 8 channels");
  EXPECT_EQ(decisions[2],
            "colltune tuner: allreduce 70000 bytes -> line 3: ring/ll128 not usable here, NCCL keeps its choice, "
            "NCCL's channels");
  EXPECT_EQ(logged(abi::kLogTrace).size(), 4u);  // every decision at TRACE
  EXPECT_TRUE(logged(abi::kLogWarn).empty());
}

INSTANTIATE_TEST_SUITE_P(EveryCostTableVersion, PluginTest, ::testing::Values(3, 4, 5, 6), version_name);

}  // namespace
}  // namespace colltune::nccl_plugin::test
