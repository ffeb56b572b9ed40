// The shared concurrency helpers: OnceMap computes each key once however many threads ask, and
// gives every asker the value or the exception; parallel_map gives a serial loop's result.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "colltune/common/once_map.hpp"
#include "colltune/common/parallel.hpp"

namespace colltune {
namespace {

TEST(OnceMap, EachKeyComputedOnceUnderContention) {
  OnceMap<int, long> memo(1024);
  std::atomic<int> computed{0};
  std::vector<std::jthread> threads;
  std::vector<long> seen(16 * 8, 0);
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int key = 0; key < 8; ++key)
        seen[static_cast<std::size_t>(t * 8 + key)] = memo.get(key, [&] {
          ++computed;
          std::this_thread::yield();  // let the others arrive while this one computes
          return 1000L * key;
        });
    });
  threads.clear();  // joined
  EXPECT_EQ(computed.load(), 8);
  for (int t = 0; t < 16; ++t)
    for (int key = 0; key < 8; ++key) EXPECT_EQ(seen[static_cast<std::size_t>(t * 8 + key)], 1000L * key);
}

TEST(OnceMap, EveryAskerGetsTheException) {
  OnceMap<std::string, int> memo(16);
  int computed = 0;
  const auto fail = [&]() -> int {
    ++computed;
    throw std::runtime_error("no price");
  };
  EXPECT_THROW(memo.get("x", fail), std::runtime_error);
  EXPECT_THROW(memo.get("x", fail), std::runtime_error);
  EXPECT_EQ(computed, 1);
}

TEST(OnceMap, StartsOverWhenFull) {
  OnceMap<int, int> memo(4);
  int computed = 0;
  for (int key = 0; key < 10; ++key) EXPECT_EQ(memo.get(key, [&] { return ++computed, key * 2; }), key * 2);
  EXPECT_LE(memo.size(), 4U);
  EXPECT_EQ(memo.get(9, [&] { return ++computed, -1; }), 18);  // still held: not computed again
  EXPECT_EQ(computed, 10);
}

TEST(OnceMap, ClearForgetsEveryKey) {
  OnceMap<int, int> memo(8);
  int computed = 0;
  EXPECT_EQ(memo.get(1, [&] { return ++computed, 10; }), 10);
  memo.clear();
  EXPECT_EQ(memo.size(), 0U);
  EXPECT_EQ(memo.get(1, [&] { return ++computed, 11; }), 11);  // computed again
  EXPECT_EQ(computed, 2);
}

TEST(ParallelMap, ValuesInIndexOrderOnAnyNumberOfThreads) {
  for (std::size_t threads : {1U, 2U, 7U}) {
    const std::vector<std::size_t> out = parallel_map(100, [](std::size_t i) { return i * i; }, threads);
    ASSERT_EQ(out.size(), 100U);
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], i * i);
  }
  EXPECT_TRUE(parallel_map(0, [](std::size_t i) { return i; }, 4).empty());
}

TEST(ParallelMap, RaisesTheLowestIndexError) {
  for (std::size_t threads : {1U, 4U}) {
    try {
      parallel_map(50, [](std::size_t i) -> int {
        if (i == 17 || i == 33) throw std::runtime_error("index " + std::to_string(i));
        return 0;
      }, threads);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "index 17");
    }
  }
}

}  // namespace
}  // namespace colltune
