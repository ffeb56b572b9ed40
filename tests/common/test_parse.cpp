// The one grammar of numbers, units and specs (common/parse.hpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "common/expect_error.hpp"

namespace colltune::parse {
namespace {

using test::expect_error;

TEST(ParseInteger, WholeDecimalTokensOnly) {
  EXPECT_EQ(integer<int>("42", "--n"), 42);
  EXPECT_EQ(integer<int>("-7", "--n"), -7);
  EXPECT_EQ(integer<int>("010", "--n"), 10);  // decimal, not octal
  for (const char* bad : {"", " 1", "1 ", "+1", "0x10", "1e3", "1.0", "12abc", "-", "--1", "\xef\xbc\x91"})
    EXPECT_FALSE(try_integer<int>(bad)) << bad;
  expect_error([] { integer<int>("0x10", "--iters"); }, "--iters: '0x10' is not a decimal integer");
  expect_error([] { integer<int>("+3", "--iters"); }, "--iters: '+3' is not a decimal integer");
}

TEST(ParseInteger, RangeAndOverflow) {
  expect_error([] { integer<int>("0", "--steps", 1, 1000); }, "--steps: '0' must be an integer in 1..1000");
  expect_error([] { integer<int>("-1", "--steps", 1, 1000); }, "--steps: '-1' must be an integer in 1..1000");
  expect_error([] { integer<int>("2147483648", "--n"); }, "'2147483648' must be an integer in -2147483648..2147483647");
  expect_error([] { integer<std::uint64_t>("36893488147419103232", "-f"); },
               "-f: '36893488147419103232' must be an integer in 0..18446744073709551615");
  expect_error([] { integer<unsigned>("-1", "--chunk"); }, "--chunk: '-1' must not be negative");
  EXPECT_EQ(integer_problem<int>("5", 1, 9), "");
  EXPECT_EQ(integer_problem<int>("0x5", 1, 9), "'0x5' is not a decimal integer");
  EXPECT_EQ(integer<std::uint64_t>("18446744073709551615", "--seed"), std::numeric_limits<std::uint64_t>::max());
}

TEST(ParseNumber, FiniteDecimalOnly) {
  EXPECT_DOUBLE_EQ(number("0.9", "x"), 0.9);
  EXPECT_DOUBLE_EQ(number("-2.5e-3", "x"), -2.5e-3);
  EXPECT_DOUBLE_EQ(number(".5", "x"), 0.5);
  // strtod's extras (a '+', leading blanks, hex, inf, nan) are what made `--slow 3:0x2x` read as 2x.
  for (const char* bad : {"", "+0.9", " 1", "1 ", "0x2", "0x1p3", "inf", "-inf", "nan", "1e400", "1,5", "1.5.", "e5"})
    EXPECT_FALSE(try_number(bad)) << bad;
  expect_error([] { number("0x2", "--slow 3"); }, "--slow 3: '0x2' is not a finite decimal number");
  EXPECT_EQ(number_problem("1e-320", Bounds::closed(1e-6, 1e6)), "'1e-320' must be in [1e-06, 1e+06]");
  EXPECT_EQ(number_problem("2"), "");
}

TEST(ParseNumber, Bounds) {
  EXPECT_EQ(Bounds::positive().text(), "> 0");
  EXPECT_EQ(Bounds::non_negative().text(), ">= 0");
  EXPECT_EQ(Bounds::closed(0, 1).text(), "in [0, 1]");
  EXPECT_EQ(Bounds::above(0, 1e6).text(), "in (0, 1e+06]");
  expect_error([] { number("0", "--x", Bounds::positive()); }, "--x: '0' must be > 0");
  expect_error([] { number("1.5", "--x", Bounds::closed(0, 1)); }, "--x: '1.5' must be in [0, 1]");
  EXPECT_DOUBLE_EQ(number("1", "--x", Bounds::closed(0, 1)), 1.0);
}

TEST(ParseRate, UnitsAndPhysicalRange) {
  EXPECT_DOUBLE_EQ(rate_gbps("2", "--storage-gbps"), 2.0);
  EXPECT_DOUBLE_EQ(rate_gbps("2GB/s", "r"), 2.0);
  EXPECT_DOUBLE_EQ(rate_gbps("400Gb/s", "r"), 50.0);
  EXPECT_DOUBLE_EQ(rate_gbps("400Gbit/s", "r"), 50.0);
  EXPECT_DOUBLE_EQ(rate_gbps("500MB/s", "r"), 0.5);
  EXPECT_DOUBLE_EQ(rate_gbps("3TB/s", "r"), 3000.0);
  expect_error([] { rate_gbps("1e-320", "--storage-gbps"); }, "--storage-gbps: '1e-320' must be within 1e-06..1e+06 GB/s");
  expect_error([] { rate_gbps("0", "r"); }, "must be within");
  expect_error([] { rate_gbps("5furlongs", "r"); }, "has an unknown unit");
}

TEST(ParseSpec, SplitsNameAndItems) {
  const Spec s = split_spec("ps:servers=4,colocated", "--runtime", Flags::allowed);
  EXPECT_EQ(s.name, "ps");
  ASSERT_EQ(s.items.size(), 2u);
  EXPECT_EQ(s.items[0].key, "servers");
  EXPECT_EQ(s.items[0].value, "4");
  EXPECT_TRUE(s.items[1].flag);
  EXPECT_EQ(s.text(), "ps:servers=4,colocated");
  EXPECT_TRUE(split_spec("dgx-h100", "x").items.empty());
  EXPECT_EQ(split_spec("flat:ranks=", "x").items[0].value, "");
}

TEST(ParseSpec, RefusesDuplicatesEmptiesAndBareItems) {
  expect_error([] { split_spec("ps:servers=4,servers=8", "--runtime ps", Flags::allowed); },
               "--runtime ps: 'servers' is given twice");
  expect_error([] { split_spec("flat:ranks=4,,nodes=2", "preset flat"); }, "has an empty item");
  expect_error([] { split_spec("flat:ranks=4,", "preset flat"); }, "has an empty item");
  expect_error([] { split_spec("flat:ranks", "preset flat"); }, "preset flat: 'ranks' is not key=value");
  expect_error([] { split_items("=4", "x", Flags::allowed, "valid: a, b"); }, "x: '=4' is not key=value (valid: a, b)");
}

TEST(ParseSpec, FilePathsMayHoldColons) {
  const Spec s = split_file_spec("/data/a:b/server.json:nodes=4", "--topology");
  EXPECT_EQ(s.name, "/data/a:b/server.json");
  ASSERT_EQ(s.items.size(), 1u);
  EXPECT_EQ(s.items[0].value, "4");
  EXPECT_EQ(split_file_spec("/data/a:b/server.json", "x").name, "/data/a:b/server.json");
  Spec t = split_file_spec("dgx-h100:nodes=2", "x");
  t.set("nodes", "4");
  t.set("nic_gbit", "400");
  EXPECT_EQ(t.text(), "dgx-h100:nodes=4,nic_gbit=400");
}

TEST(ParseShown, ControlBytesEscaped) {
  EXPECT_EQ(shown(std::string_view("a\0b\n", 4)), "a\\x00b\\x0a");
  EXPECT_EQ(shown(std::string(200, 'x')).size(), 123u);
  expect_error([] { number(std::string_view("1\0", 2), "--x"); }, "--x: '1\\x00' is not a finite decimal number");
}

}  // namespace
}  // namespace colltune::parse
