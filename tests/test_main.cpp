// The main of every test binary. Each run gets its own scratch directory and TMPDIR and
// TEST_TMPDIR point into it, so std::filesystem::temp_directory_path(), testing::TempDir()
// and edge::testing::make_temp_file() all land there; it is removed when the run ends, so a
// test that forgets its files (or fails before its own clean-up) leaves nothing in /tmp.
// Processes a test starts inherit the variables and write their scratch files there too.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

std::string make_scratch_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/edge-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return {};  // keep the inherited TMPDIR
  return buf.data();
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string scratch = make_scratch_dir();
  if (!scratch.empty()) {
    setenv("TMPDIR", scratch.c_str(), 1);
    setenv("TEST_TMPDIR", scratch.c_str(), 1);
  }
  const int rc = RUN_ALL_TESTS();
  if (!scratch.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
    if (ec) std::fprintf(stderr, "test scratch %s not removed: %s\n", scratch.c_str(), ec.message().c_str());
  }
  return rc;
}
