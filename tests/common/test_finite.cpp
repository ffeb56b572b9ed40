// The finite-answer checks of the output boundary (common/finite.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "colltune/common/finite.hpp"

namespace colltune::finite {
namespace {

using nlohmann::json;

std::string problem(const json& doc) {
  try {
    check_json(doc, "x");
    return "";
  } catch (const InternalError& e) {
    return e.what();
  }
}

TEST(FiniteJson, NonFiniteNumbersAreABug) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(problem(json{{"rows", json::array({json{{"busbw_gbps", 1.5}}, json{{"busbw_gbps", std::nan("")}}})}}),
            "x: /rows/1/busbw_gbps: nan is not finite");
  EXPECT_EQ(problem(json{{"step_time_ms", inf}}), "x: /step_time_ms: inf is not finite");
  EXPECT_EQ(problem(json::array({-inf})), "x: /0: -inf is not finite");
  EXPECT_EQ(problem(json{{"a", 1}, {"b", "inf"}, {"c", nullptr}}), "");  // strings and null are not numbers
  EXPECT_THROW(json_text(json{{"t", inf}}, 2, "x"), InternalError);
  EXPECT_EQ(json_text(json{{"t", 1.5}}, -1, "x"), "{\"t\":1.5}");
}

TEST(FiniteJson, TimesSizesAndRatesAreNotNegative) {
  EXPECT_EQ(problem(json{{"time_us", -1.0}}), "x: /time_us: -1.000000 is negative");
  EXPECT_EQ(problem(json{{"chunk_bytes", -4}}), "x: /chunk_bytes: -4 is negative");
  EXPECT_EQ(problem(json{{"algbw_gbps", -0.5}}), "x: /algbw_gbps: -0.500000 is negative");
  EXPECT_EQ(problem(json{{"loss_s", -2.0}}), "");     // a difference
  EXPECT_EQ(problem(json{{"offset", -2.0}}), "");     // not a physical quantity by name
  EXPECT_EQ(problem(json{{"rank", -1}}), "");
}

TEST(FiniteText, FindsWhatPrintfAndYamlPrint) {
  for (const char* text : {"step time inf s", "busbw -nan", "inf ms (+inf%)", "speedup infx", "x: .inf",
                           "a,nan,b", "(NaN)", "\t-inf\n", "inf", "time=inf", "\"inf\""})
    EXPECT_TRUE(non_finite_token(text)) << text;
  EXPECT_EQ(*non_finite_token("step time 1.2 ms, then inf% more"), "inf%");
  for (const char* text : {"info", "InfiniBand", "nano", "inf.json", "/data/nan/x", "NCCL_INFO", "infinite",
                           "finance", "1e-9", "Nanjing", "banana", "nan1"})
    EXPECT_FALSE(non_finite_token(text)) << text;
  try {
    check_text("ok\nstep time inf s\nmore", "report.html");
    FAIL();
  } catch (const InternalError& e) {
    EXPECT_STREQ(e.what(), "report.html: non-finite number 'inf' in: step time inf s");
  }
}

}  // namespace
}  // namespace colltune::finite
