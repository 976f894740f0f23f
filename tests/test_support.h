// What a test does when something it needs from outside the tree is missing (node, the npm
// test packages, a tool the test builds). On a developer's machine it is skipped with the
// reason; where the suite is meant to be complete (scripts/run-tests.sh and CI set
// EDGE_REQUIRE_ALL_TESTS=1, after installing everything) the same condition is a failure:
// a suite that skips what it could not set up would pass without testing.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace edge::testing {

inline bool require_all_tests() {
  const char* v = std::getenv("EDGE_REQUIRE_ALL_TESTS");
  return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
}

}  // namespace edge::testing

// Skips (or, with EDGE_REQUIRE_ALL_TESTS, fails) the current test with `msg`.
#define EDGE_SKIP_UNLESS_REQUIRED(msg)                                                         \
  do {                                                                                         \
    if (::edge::testing::require_all_tests())                                                  \
      GTEST_FAIL() << msg << " [EDGE_REQUIRE_ALL_TESTS: a missing prerequisite is a failure]"; \
    else                                                                                       \
      GTEST_SKIP() << msg;                                                                     \
  } while (0)
