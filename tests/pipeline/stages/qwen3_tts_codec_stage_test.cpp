// The audio.pcm@2 stage on the Qwen3-TTS 12 Hz codec decoder inside a graph: the PCM reaching
// output.audio is the codec's whole-utterance decode bit for bit (the decoder is causal, so
// the stage streams without a window), a partial last frame and an out-of-range code end the
// request with an error naming them.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "convert/random_qwen3_tts_codec.h"
#include "model/qwen3_tts_codec_decoder.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/executor.h"

namespace edge::pipeline {
namespace {

class Qwen3TtsCodecStage : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("edge_q3codec_stage_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    RandomQwen3TtsCodecOptions o;
    o.hp = small_qwen3_tts_codec_hparams();
    ASSERT_TRUE(write_random_qwen3_tts_codec(o, dir_.string()).ok());
    hash_ = *sha256_file((dir_ / "model.safetensors").string());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  PipelineSpec spec() {
    auto p = parse_pipeline(
        "pipeline: codec\nstages:\n  - name: codec\n    kind: qwen3_tts_codec\n"
        "    contract: audio.pcm@2\n    reservation: 64MiB\n"
        "    artifacts: [{role: model, path: model.safetensors, sha256: " +
            hash_ +
            "}]\n"
            "routes: [input.codes -> codec.codes, codec.pcm -> output.audio]\n",
        dir_.string());
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return *p;
  }
  std::vector<float> run(PipelineRuntime& rt, const std::vector<int32_t>& codes, Status* st) {
    std::vector<float> pcm;
    PortValue in;
    in.tokens = codes;
    *st = rt.run({{"codes", in}}, [&](const StageEvent& e) {
      EXPECT_EQ(e.port, "audio");
      pcm.insert(pcm.end(), e.value.samples.begin(), e.value.samples.end());
    });
    return pcm;
  }

  std::filesystem::path dir_;
  std::string hash_;
};

TEST_F(Qwen3TtsCodecStage, TheGraphsPcmIsTheCodecsDecode) {
  auto c = Qwen3TtsCodec::load(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  std::vector<int32_t> codes;
  for (int i = 0; i < 5 * 16; ++i) codes.push_back((i * 37 + 5) % 64);
  auto want = (*c)->decode(codes);
  ASSERT_TRUE(want.ok());
  RamLedger ledger(int64_t{4} << 30, "test");
  {
    auto rt = PipelineRuntime::start(spec(), ledger);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    Status st;
    const std::vector<float> pcm = run(**rt, codes, &st);
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_EQ(pcm.size(), want->size());
    EXPECT_EQ(std::memcmp(pcm.data(), want->data(), pcm.size() * 4), 0);
    codes.pop_back();  // 15 codes into the last frame
    run(**rt, codes, &st);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("15 codes into a frame of 16"), std::string::npos)
        << st.to_string();
    run(**rt, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 9999}, &st);
    EXPECT_NE(st.message().find("codebook 15: code 9999"), std::string::npos) << st.to_string();
  }
  EXPECT_EQ(ledger.reserved(), 0);
}

}  // namespace
}  // namespace edge::pipeline
