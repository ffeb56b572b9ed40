#include <gtest/gtest.h>

#include "colltune/common/error.hpp"
#include "colltune/common/rank_layout.hpp"

using colltune::RankLayout;

TEST(RankLayout, Uniform) {
  const RankLayout l = RankLayout::uniform(3, 4);
  EXPECT_EQ(l.nranks(), 12);
  EXPECT_EQ(l.nhosts(), 3);
  EXPECT_EQ(l.host_of(5), 1);
  EXPECT_EQ(l.local_rank(5), 1);
  EXPECT_EQ(l.ranks_on_host(2), (std::vector<int>{8, 9, 10, 11}));
  EXPECT_TRUE(l.is_uniform());
}

TEST(RankLayout, Irregular) {
  const RankLayout l({0, 1, 0, 1, 1});
  EXPECT_EQ(l.ranks_on_host(0), (std::vector<int>{0, 2}));
  EXPECT_EQ(l.ranks_on_host(1), (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(l.local_rank(4), 2);
  EXPECT_FALSE(l.is_uniform());
  EXPECT_EQ(l.max_ranks_per_host(), 3);
  EXPECT_EQ(l.min_ranks_per_host(), 2);
}

TEST(RankLayout, RejectsBadLayouts) {
  EXPECT_THROW(RankLayout(std::vector<int>{}), colltune::Error);
  EXPECT_THROW(RankLayout({0, 2}), colltune::Error);  // host 1 empty
  EXPECT_THROW(RankLayout({0, -1}), colltune::Error);
  EXPECT_THROW(RankLayout({-2}), colltune::Error);  // every host negative: no size_t wrap-around
  EXPECT_THROW(RankLayout({-1, -3}), colltune::Error);
  EXPECT_THROW(RankLayout::uniform(0, 4), colltune::Error);
  EXPECT_THROW(RankLayout::uniform(2, 0), colltune::Error);
}
