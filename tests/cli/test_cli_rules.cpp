// The rules every command follows (cli/options/options.cpp): integer options read plain decimals and
// unsigned ones refuse a minus sign, real ones finite decimals; exceptions map to the
// documented exit statuses.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "options/options.hpp"
#include "options/output_guard.hpp"

namespace {

using colltune::cli::apply_option_rules;

struct Parsed {
  std::size_t count = 7;
  int delta = 7;
  double rate = 7;
  std::string error;
};

Parsed parse(std::vector<std::string> args) {
  Parsed out;
  CLI::App app;
  CLI::App* sub = app.add_subcommand("cmd");
  sub->add_option("--count", out.count);
  sub->add_option("--delta", out.delta);
  sub->add_option("--rate", out.rate);
  apply_option_rules(app);
  args.insert(args.begin(), "cmd");
  std::reverse(args.begin(), args.end());  // CLI11 takes them reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    out.error = e.what();
  }
  return out;
}

TEST(CliRules, UnsignedOptionsRefuseNegativeValues) {
  EXPECT_EQ(parse({"--count", "-1"}).error, "--count: '-1' must not be negative");
  EXPECT_EQ(parse({"--count", "18"}).count, 18u);
  EXPECT_EQ(parse({"--delta", "-3"}).delta, -3);
}

TEST(CliRules, IntegersAreDecimal) {
  EXPECT_EQ(parse({"--count", "010"}).count, 10u);  // not octal 8
  EXPECT_EQ(parse({"--delta", "-007"}).delta, -7);
  EXPECT_EQ(parse({"--count", "0"}).count, 0u);
  EXPECT_EQ(parse({"--count", "0x10"}).error, "--count: '0x10' is not a decimal integer");
  EXPECT_EQ(parse({"--delta", "1e3"}).error, "--delta: '1e3' is not a decimal integer");
  EXPECT_EQ(parse({"--delta", "-"}).error, "--delta: '-' is not a decimal integer");
  EXPECT_EQ(parse({"--delta", "+3"}).error, "--delta: '+3' is not a decimal integer");
  // 2^65 once went through (`-f 36893488147419103232`).
  EXPECT_EQ(parse({"--count", "36893488147419103232"}).error,
            "--count: '36893488147419103232' must be an integer in 0..18446744073709551615");
}

TEST(CliRules, RealsAreFiniteDecimals) {
  EXPECT_DOUBLE_EQ(parse({"--rate", "2.5e1"}).rate, 25.0);
  EXPECT_EQ(parse({"--rate", "0x1p3"}).error, "--rate: '0x1p3' is not a finite decimal number");
  EXPECT_EQ(parse({"--rate", "inf"}).error, "--rate: 'inf' is not a finite decimal number");
  EXPECT_EQ(parse({"--rate", "1e400"}).error, "--rate: '1e400' is not a finite decimal number");
}

// What reaches file descriptor 1 while `body` prints under a StdoutGuard, and what it withheld.
std::pair<std::string, std::optional<std::string>> guarded(void (*body)()) {
  const std::string path = ::testing::TempDir() + "colltune_guard_out.txt";
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, STDOUT_FILENO);
  ::close(fd);
  std::optional<std::string> withheld;
  {
    colltune::cli::StdoutGuard guard;
    body();
    withheld = guard.finish();
  }
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return {text.str(), withheld};
}

// Every printed line goes through the finite check, from printf and std::cout in their order; a
// line with a non-finite number is withheld with all after it (main() then exits 3).
TEST(CliRules, StdoutCarriesNoNonFiniteNumber) {
  auto [clean, none] = guarded([] {
    std::printf("a 1.5 ms\n");
    std::cout << "b InfiniBand info\n";
    std::printf("c");
  });
  EXPECT_EQ(clean, "a 1.5 ms\nb InfiniBand info\nc");
  EXPECT_FALSE(none);
  auto [cut, line] = guarded([] {
    std::cout << "step time 1.0 ms\n";
    std::printf("step time %.2f s\n", 1.0 / 0.0);
    std::cout << "after\n";
  });
  EXPECT_EQ(cut, "step time 1.0 ms\n");
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "step time inf s");
  // A JSON document checked as one (its strings may say anything) passes unread.
  auto [json, ok] = guarded([] { colltune::cli::print_checked_json("{\"host\": \"nan\"}"); });
  EXPECT_EQ(json, "{\"host\": \"nan\"}\n");
  EXPECT_FALSE(ok);
}

TEST(CliRules, ExitStatuses) {
  using namespace colltune::cli;
  EXPECT_EQ(exit_status(colltune::CheckFailure("3 wrong values")), kExitCheckFailed);
  EXPECT_EQ(exit_status(colltune::Error("bad input")), kExitBadInput);
  EXPECT_EQ(exit_status(colltune::TimeoutError("peer 3")), kExitBadInput);
  EXPECT_EQ(exit_status(std::logic_error("a bug")), kExitInternal);
  EXPECT_EQ(exit_status(std::bad_alloc()), kExitBadInput);  // out of memory: a run that failed, one line
  EXPECT_EQ(kExitCheckFailed, 1);
  EXPECT_EQ(kExitBadInput, 2);
  EXPECT_EQ(kExitInternal, 3);
}

}  // namespace
