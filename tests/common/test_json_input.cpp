// The JSON front end: nesting bounded before parsing, and every failure a located, plain line.
#include <gtest/gtest.h>

#include <string>

#include "colltune/common/error.hpp"
#include "colltune/common/json_input.hpp"

namespace {

namespace ji = colltune::json_input;
using colltune::Error;

std::string error_of(const std::string& text) {
  try {
    ji::parse(text, "f.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonInput, DeepNestingIsRefusedWithItsPlace) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(error_of(deep), "f.json: line 1, column 65: nesting deeper than 64 levels (the limit; the formats nest far "
                            "less; deeper input is not a topology or trace)");
  EXPECT_EQ(error_of(std::string(64, '[') + std::string(64, ']')), "");  // the limit itself is fine
  EXPECT_EQ(error_of("[\"" + std::string(1000, '[') + "\"]"), "");        // brackets in strings do not nest
}

TEST(JsonInput, SyntaxErrorsAndNumberRangeAreLocated) {
  EXPECT_EQ(error_of("[1,\n 1e400]"), "f.json: line 2, column 6: number 1e400 is out of range (a double holds "
                                      "magnitudes up to 1.8e308)");
  EXPECT_EQ(error_of("{\"a\": 1} x"), "f.json: line 1, column 10: syntax error: unexpected text after the end of the "
                                      "JSON document");
  EXPECT_NE(error_of("{\"a\": }").find("f.json: line 1, column 7: syntax error"), std::string::npos);
  EXPECT_NE(error_of("").find("f.json: line 1, column 1: syntax error"), std::string::npos);
}

TEST(JsonInput, CutShortInputIsTold) {
  ji::SyntaxError error;
  EXPECT_FALSE(ji::try_parse("[{\"a\": 1}, {\"b\"", "f.json", error));
  EXPECT_TRUE(error.at_end);
  EXPECT_FALSE(ji::try_parse("[{\"a\": 1}] junk", "f.json", error));
  EXPECT_FALSE(error.at_end);
}

TEST(JsonInput, LibraryExceptionsBecomePlainWords) {
  const nlohmann::json doc = ji::parse(R"({"ph": 1})", "t.json");
  try {
    (void)doc.value("ph", std::string());
    FAIL();
  } catch (const nlohmann::json::exception& e) {
    EXPECT_EQ(ji::describe(e), "expected a string, got a number");
    try {
      ji::rethrow(e, "t.json", "event 0");
    } catch (const Error& wrapped) {
      EXPECT_EQ(std::string(wrapped.what()), "t.json: event 0: expected a string, got a number");
    }
  }
  EXPECT_EQ(ji::shown(nlohmann::json(std::string(100, 'x'))).size(), 60u);
}

}  // namespace
