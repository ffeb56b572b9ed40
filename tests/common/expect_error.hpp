#pragma once
// expect_error(f, part): f must throw colltune::Error whose message contains `part`; no
// exception, or a message without it, fails the calling test (one helper for the test files
// that check bad input by calling the API).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "colltune/common/error.hpp"

namespace colltune::test {

inline void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error, expected one containing '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace colltune::test
