// write_file_atomically: the file appears whole or not at all, and the temp file never stays.
#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace edge {
namespace {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("edge_atomic_file_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "out.bin").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string path_;
};

TEST_F(AtomicFile, WritesThroughTheTempFileAndRenames) {
  Status st = write_file_atomically(path_, [&](std::FILE* f) -> Status {
    // While the body runs, only the temp file exists.
    EXPECT_TRUE(fs::exists(path_ + ".tmp"));
    EXPECT_FALSE(fs::exists(path_));
    std::fputs("hello", f);
    return Status();
  });
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(read_all(path_), "hello");
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
}

TEST_F(AtomicFile, AFailedBodyLeavesTheOldFileAndNoTempFile) {
  ASSERT_TRUE(write_file_atomically(path_, [](std::FILE* f) -> Status {
                std::fputs("old", f);
                return Status();
              }).ok());
  Status st = write_file_atomically(path_, [](std::FILE* f) -> Status {
    std::fputs("half of the new", f);
    return Status::io_error("disk full");
  });
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_EQ(st.message(), path_ + ": disk full");  // prefixed with the path
  EXPECT_EQ(read_all(path_), "old");
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
}

TEST_F(AtomicFile, UnopenableTempFileIsNamedAndTheBodyNeverRuns) {
  const std::string inside_missing_dir = (dir_ / "no_such_dir" / "out.bin").string();
  bool ran = false;
  Status st = write_file_atomically(inside_missing_dir, [&](std::FILE*) -> Status {
    ran = true;
    return Status();
  });
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_FALSE(ran);
  EXPECT_EQ(st.message().rfind(inside_missing_dir + ".tmp: ", 0), 0u) << st.message();
}

TEST_F(AtomicFile, ARenameOntoADirectoryFailsAndRemovesTheTempFile) {
  fs::create_directories(path_);  // rename(2) cannot put a file over a directory (EISDIR)
  Status st = write_file_atomically(path_, [](std::FILE* f) -> Status {
    std::fputs("x", f);
    return Status();
  });
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find(": rename: "), std::string::npos) << st.message();
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
  EXPECT_TRUE(fs::is_directory(path_));
}

}  // namespace
}  // namespace edge
