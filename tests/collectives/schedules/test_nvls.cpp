// nccl_nvls (algorithms/nccl_nvls.cpp): L GPU ranks and the NVSwitch as the last rank, a helper.
// Validated symbolically and run on integer data by the reference interpreter, bit for bit, for
// L = 1..8 and uneven counts; its bytes and steps as the file states; one host only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "colltune/collectives/algorithms/algorithms.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "in_switch_util.hpp"
#include "reference.hpp"

using namespace colltune;
using namespace colltune::coll;
using ::testing::HasSubstr;

using test::chunked;
using test::received_by;
using test::sent_by;

TEST(NcclNvls, ExactForOneToEightGpusAndUnevenCounts) {
  for (int gpus = 1; gpus <= 8; ++gpus) {
    const RankLayout layout = RankLayout::single_host(gpus + 1);
    const auto l = static_cast<std::size_t>(gpus);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, l - 1, l + 1, std::size_t{7}, std::size_t{1001},
                              std::size_t{65537}, std::size_t{300007}}) {
      for (std::size_t chunk : {std::size_t{0}, std::size_t{3}, std::size_t{1000}}) {
        if (chunk == 3 && count > 1001) continue;  // tens of thousands of chunks add nothing but time
        SCOPED_TRACE("L=" + std::to_string(gpus) + " count=" + std::to_string(count) +
                     " chunk=" + std::to_string(chunk));
        const Schedule s = build_schedule("nccl_nvls", layout, count, chunked(chunk));
        ASSERT_NO_THROW(validate(s));
        EXPECT_EQ(s.helpers, 1);
        EXPECT_EQ(s.data_ranks(), gpus);
        EXPECT_EQ(test::check_data(s, test::run_data(s)), "");
      }
    }
  }
}

TEST(NcclNvls, EveryGpuLinkCarriesTheBufferEachWay) {
  // n up and n down per GPU; the switch receives L n and sends L n.
  for (int gpus : {2, 3, 8}) {
    const std::size_t n = 10007;
    const Schedule s = build_schedule("nccl_nvls", RankLayout::single_host(gpus + 1), n, chunked(100));
    for (int g = 0; g < gpus; ++g) {
      EXPECT_EQ(sent_by(s, g), n) << g;
      EXPECT_EQ(received_by(s, g), n) << g;
    }
    EXPECT_EQ(sent_by(s, gpus), gpus * n);
    EXPECT_EQ(received_by(s, gpus), gpus * n);
    // R rounds of the largest shard, plus one for the last sums coming down.
    const std::size_t rounds = (n / gpus + (n % gpus != 0) + 99) / 100;
    EXPECT_EQ(s.steps(0).size(), rounds + 1);
  }
}

TEST(NcclNvls, DefaultPipelineIsSixteenRoundsOfLargeShards) {
  const int gpus = 8;
  const std::size_t big = 8 * algo::kNvlsRounds * algo::kNvlsMinChunk * 4;  // shards of 64 min chunks
  EXPECT_EQ(build_schedule("nccl_nvls", RankLayout::single_host(gpus + 1), big).steps(0).size(), algo::kNvlsRounds + 1);
  // A small buffer: one chunk up, one down.
  EXPECT_EQ(build_schedule("nccl_nvls", RankLayout::single_host(gpus + 1), 4096).steps(0).size(), 2U);
}

TEST(NcclNvls, OneHostOnlyAndFacts) {
  const Algorithm& a = find_algorithm("nccl_nvls");
  EXPECT_THAT(a.not_applicable(RankLayout::uniform(2, 9), 100, {}).value_or(""), HasSubstr("single-node NVLS only"));
  EXPECT_FALSE(a.not_applicable(RankLayout::single_host(9), 100, {}).has_value());
  EXPECT_THAT([&] { build_schedule("nccl_nvls", RankLayout::uniform(2, 3), 10); },
              ::testing::ThrowsMessage<Error>(HasSubstr("not applicable")));
  EXPECT_TRUE(a.in_switch);
  EXPECT_EQ(a.summation_depth(RankLayout::single_host(9), {}), 1);
  EXPECT_TRUE(a.nccl_name.empty());
  EXPECT_TRUE(a.runs_on(Runtime::colltune));
  EXPECT_FALSE(a.runs_on(Runtime::nccl));
}
