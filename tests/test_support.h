// What a test does when something it needs from outside the tree is missing (node, the npm
// test packages, a tool the test builds). On a developer's machine it is skipped with the
// reason; where the suite is meant to be complete (scripts/run-tests.sh and CI set
// EDGE_REQUIRE_ALL_TESTS=1, after installing everything) the same condition is a failure:
// a suite that skips what it could not set up would pass without testing.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace edge::testing {

inline bool require_all_tests() {
  const char* v = std::getenv("EDGE_REQUIRE_ALL_TESTS");
  return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
}

// A new empty file named `prefix` + six random characters in the test's temp directory
// (the run's scratch directory: tests/test_main.cpp), so nothing is left behind in /tmp.
inline std::string make_temp_file(const std::string& prefix) {
  std::string path = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  const int fd = mkstemp(path.data());
  EXPECT_GE(fd, 0) << "mkstemp failed for " << path;
  if (fd >= 0) close(fd);
  return path;
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
