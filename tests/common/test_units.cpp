#include <gtest/gtest.h>

#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"

using colltune::Error;
using colltune::parse_size;
using colltune::parse_time_us;

TEST(Units, ParsesSizes) {
  EXPECT_EQ(parse_size("0", "x"), 0u);
  EXPECT_EQ(parse_size("4096", "x"), 4096u);
  EXPECT_EQ(parse_size("4096B", "x"), 4096u);
  EXPECT_EQ(parse_size("64KiB", "x"), 64u * 1024);
  EXPECT_EQ(parse_size("64MiB", "x"), 64u << 20);
  EXPECT_EQ(parse_size("1GiB", "x"), 1u << 30);
  EXPECT_EQ(parse_size("1.5MiB", "x"), 3u << 19);
  EXPECT_EQ(parse_size("64MB", "x"), 64000000u);
  EXPECT_EQ(parse_size("8M", "x"), 8u << 20);
}

TEST(Units, RejectsBadSizes) {
  EXPECT_THROW(parse_size("", "x"), Error);
  EXPECT_THROW(parse_size("abc", "x"), Error);
  EXPECT_THROW(parse_size("-1", "x"), Error);
  EXPECT_THROW(parse_size("12parsecs", "x"), Error);
  EXPECT_THROW(parse_size("0.3B", "x"), Error);
  EXPECT_THROW(parse_size("99999999TiB", "x"), Error);
  try {
    parse_size("12parsecs", "--bytes");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--bytes"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("12parsecs"), std::string::npos);
  }
}

TEST(Units, ParsesTimes) {
  EXPECT_DOUBLE_EQ(parse_time_us("250us", "t"), 250.0);
  EXPECT_DOUBLE_EQ(parse_time_us("0", "t"), 0.0);
  EXPECT_DOUBLE_EQ(parse_time_us("5ms", "t"), 5000.0);
  EXPECT_DOUBLE_EQ(parse_time_us("0.1ms", "t"), 100.0);
  EXPECT_DOUBLE_EQ(parse_time_us("2s", "t"), 2e6);
  EXPECT_THROW(parse_time_us("5 fortnights", "t"), Error);
  EXPECT_THROW(parse_time_us("-5ms", "t"), Error);
  EXPECT_THROW(parse_time_us("1e300s", "t"), Error);
}

// A bare number where it could mean any unit is refused, naming the units; 0 needs none.
TEST(Units, RequiresAUnitWhereOneMatters) {
  using colltune::BareNumber;
  EXPECT_EQ(parse_size("64", "x"), 64u);  // -b/-e, --bytes: bytes by name
  EXPECT_EQ(parse_size("64MiB", "--fusion-threshold", BareNumber::refused), 64u << 20);
  EXPECT_EQ(parse_size("0", "--fusion-threshold", BareNumber::refused), 0u);
  try {
    parse_size("64", "--fusion-threshold", BareNumber::refused);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--fusion-threshold: '64' needs a unit (B, KiB, MiB"), std::string::npos)
        << e.what();
  }
  try {
    parse_time_us("5", "--cycle-time");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--cycle-time: '5' needs a unit (ns, us, ms or s)"), std::string::npos)
        << e.what();
  }
}

TEST(Units, Formats) {
  EXPECT_EQ(colltune::format_ratio(1.75602), "1.76");
  EXPECT_EQ(colltune::format_ratio(12.3456), "12.3");
  EXPECT_EQ(colltune::format_ratio(0.000976562), "0.000977");
  EXPECT_EQ(colltune::format_bytes(0), "0 B");
  EXPECT_EQ(colltune::format_bytes(64u << 20), "64 MiB");
  EXPECT_EQ(colltune::format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(colltune::format_time_us(12.34), "12.3 us");
  EXPECT_EQ(colltune::format_time_us(4560), "4.56 ms");
  EXPECT_DOUBLE_EQ(colltune::gbps(1000000000, 1e6), 1.0);
  EXPECT_DOUBLE_EQ(colltune::gbps(10, 0), 0.0);
}
