// Audio in through the CLI: make-model writes a random ultravox projector whose output
// width is the LM's, and `generate --mmproj P --audio FILE -p TEXT` splices the clip's rows
// before the text; bad clips and mismatched files are errors naming the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e/server_process.h"
#include "formats/wav.h"

namespace edge::e2e {
namespace {

std::string bin() {
  return std::string(EDGE_BINARY);
}

// A random ultravox projector for the tiny LM (n_embd 64), written once per run.
const std::string& tiny_audio_projector() {
  static const std::string path = [] {
    const std::string p = server_tmp_dir() + "/ultravox_mmproj.gguf";
    const CommandResult r = run_command(bin() +
                                        " make-model --arch clip-ultravox --dim 32 --layers 1 "
                                        "--heads 4 --proj-dim 64 -o " +
                                        p + " 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    return p;
  }();
  return path;
}

// 1 s of a 440 Hz tone, stereo at 44.1 kHz (resampled and mixed down on the way in).
std::string tone_wav() {
  const std::string p = server_tmp_dir() + "/tone.wav";
  std::vector<float> pcm(2 * 44100);
  for (size_t i = 0; i < pcm.size(); ++i)
    pcm[i] = 0.4f * std::sin(2.0f * 3.14159265f * 440.0f * static_cast<float>(i / 2) / 44100.0f);
  const std::vector<uint8_t> b =
      encode_wav16(pcm.data(), static_cast<int64_t>(pcm.size()), 44100, 2);
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return p;
}

TEST(AudioCli, GenerateWithAClipSplicesItsRows) {
  const std::string lm = tiny_model(), proj = tiny_audio_projector();
  ASSERT_FALSE(lm.empty());
  const CommandResult r =
      run_command(bin() + " generate -m " + lm + " --mmproj " + proj + " --audio " + tone_wav() +
                  " -p 'what is this' -n 4 --temp 0 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  // 30 s of mel frames (3000) -> 1500 positions -> 375 rows of 4 stacked.
  EXPECT_EQ(j["audio"]["tokens"], 375);
  EXPECT_GT(j["prompt_ids"].size(), 375u);
  EXPECT_EQ(j["generated_ids"].size(), 4u);
}

TEST(AudioCli, BadClipsAndMismatchedFilesAreNamed) {
  const std::string lm = tiny_model(), proj = tiny_audio_projector();
  const std::string not_wav = server_tmp_dir() + "/not.wav";
  std::ofstream(not_wav) << "this is not audio";
  CommandResult r = run_command(bin() + " generate -m " + lm + " --mmproj " + proj + " --audio " +
                                not_wav + " -p hi -n 1 2>&1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("not a WAV file"), std::string::npos) << r.out;
  r = run_command(bin() + " generate -m " + lm + " --audio " + tone_wav() + " -p hi -n 1 2>&1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--mmproj"), std::string::npos) << r.out;
  const std::string wide = server_tmp_dir() + "/wide_mmproj.gguf";
  ASSERT_EQ(run_command(bin() +
                        " make-model --arch clip-qwen2a --dim 32 --layers 1 --heads 4 "
                        "--proj-dim 96 -o " +
                        wide + " 2>&1")
                .code,
            0);
  r = run_command(bin() + " generate -m " + lm + " --mmproj " + wide + " --audio " + tone_wav() +
                  " -p hi -n 1 2>&1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("projector output width 96"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace edge::e2e
