// Reads a crash reproducer kept under tests/fuzz/regressions/<target>/ (found by the fuzz
// target fuzz_<target>), for the unit test that pins its fix.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace edge::testing_util {

inline std::string fuzz_regression_path(const std::string& target, const std::string& name) {
  return std::string(EDGE_SOURCE_DIR) + "/tests/fuzz/regressions/" + target + "/" + name;
}

inline std::vector<uint8_t> fuzz_regression(const std::string& target, const std::string& name) {
  const std::string path = fuzz_regression_path(target, name);
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing reproducer " << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::string fuzz_regression_text(const std::string& target, const std::string& name) {
  const std::vector<uint8_t> b = fuzz_regression(target, name);
  return std::string(b.begin(), b.end());
}

// A seed input of the corpus tests/fuzz/corpus/<target>/ (real files: chat templates, ...).
inline std::string fuzz_seed_text(const std::string& target, const std::string& name) {
  const std::string path =
      std::string(EDGE_SOURCE_DIR) + "/tests/fuzz/corpus/" + target + "/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing seed " << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace edge::testing_util
