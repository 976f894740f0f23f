// edge-infer make-model --arch wavtokenizer-dec and edge-infer vocode: real processes,
// a real WAV file, exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "formats/wav.h"

namespace edge {
namespace {

std::string dir() {
  static const std::string d = [] {
    std::string p = testing::TempDir() + "/edge_vocode_" + std::to_string(::getpid());
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}

int run(const std::string& args) {
  const std::string cmd =
      std::string(EDGE_BINARY) + " " + args + " >" + dir() + "/out.txt 2>" + dir() + "/err.txt";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

std::string err_text() {
  std::ifstream f(dir() + "/err.txt");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(VocodeCli, WritesA24kHzWavOfHopSamplesPerCode) {
  const std::string voc = dir() + "/voc.gguf", wav = dir() + "/out.wav";
  ASSERT_EQ(run("make-model --arch wavtokenizer-dec --dim 32 --layers 2 --vocab 64 -o " + voc), 0)
      << err_text();
  ASSERT_EQ(run("vocode --vocoder " + voc + " --codes 1,2,3,60,7 -o " + wav), 0) << err_text();
  std::ifstream f(wav, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
  auto w = decode_wav16(bytes.data(), bytes.size());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->sample_rate, 24000);
  EXPECT_EQ(w->channels, 1);
  EXPECT_EQ(w->samples.size(), 5u * 320u);
  int nonzero = 0;
  for (int16_t s : w->samples) nonzero += s != 0;
  EXPECT_GT(nonzero, 1000);
  // The windowed (streaming) decode writes the same length.
  ASSERT_EQ(run("vocode --vocoder " + voc + " --codes 1,2,3,60,7 --window 2 --context 2 -o " + wav),
            0)
      << err_text();
}

TEST(VocodeCli, BadCodeOrFileIsAnErrorNotACrash) {
  const std::string voc = dir() + "/voc2.gguf";
  ASSERT_EQ(run("make-model --arch wavtokenizer-dec --vocab 64 -o " + voc), 0) << err_text();
  EXPECT_NE(run("vocode --vocoder " + voc + " --codes 1,64 -o " + dir() + "/x.wav"), 0);
  EXPECT_NE(err_text().find("outside [0, 64)"), std::string::npos) << err_text();
  EXPECT_NE(run("vocode --vocoder " + dir() + "/nope.gguf --codes 1 -o " + dir() + "/x.wav"), 0);
  EXPECT_NE(err_text().find("error"), std::string::npos) << err_text();
}

}  // namespace
}  // namespace edge
