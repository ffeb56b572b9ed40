// The rules every command follows (cli/options.cpp): integer options read plain decimals and
// unsigned ones refuse a minus sign, real ones finite decimals; exceptions map to the
// documented exit statuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "options.hpp"

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

TEST(CliRules, ExitStatuses) {
  using namespace colltune::cli;
  EXPECT_EQ(exit_status(colltune::CheckFailure("3 wrong values")), kExitCheckFailed);
  EXPECT_EQ(exit_status(colltune::Error("bad input")), kExitBadInput);
  EXPECT_EQ(exit_status(colltune::TimeoutError("peer 3")), kExitBadInput);
  EXPECT_EQ(exit_status(std::logic_error("a bug")), kExitInternal);
  EXPECT_EQ(exit_status(std::bad_alloc()), kExitInternal);
  EXPECT_EQ(kExitCheckFailed, 1);
  EXPECT_EQ(kExitBadInput, 2);
  EXPECT_EQ(kExitInternal, 3);
}

}  // namespace
