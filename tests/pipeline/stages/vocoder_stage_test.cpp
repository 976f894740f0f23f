// The audio.pcm@1 stage on our vocoder inside a graph: the PCM reaching output.audio is the
// vocoder's own decode of the codes (exact mode: one terminal event at the end of the
// utterance; windowed mode: several events, equal to the windowed decode), and bad codes
// end the request with the vocoder's error.
#include <gtest/gtest.h>

#include <filesystem>

#include "convert/random_vocoder.h"
#include "model/vocoder.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/executor.h"

namespace edge::pipeline {
namespace {

class VocoderStage : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("edge_vocoder_stage_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "voc.gguf").string();
    ASSERT_TRUE(write_random_vocoder(RandomVocoderOptions{}, path_).ok());
    hash_ = *sha256_file(path_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  PipelineSpec spec(const std::string& streaming) {
    auto p = parse_pipeline(
        "pipeline: voc\nstages:\n  - name: voc\n    kind: vocoder\n    contract: audio.pcm@1\n"
        "    reservation: 64MiB\n" + streaming +
            "    artifacts: [{role: model, path: voc.gguf, sha256: " + hash_ + "}]\n"
            "routes: [input.codes -> voc.codes, voc.pcm -> output.audio]\n",
        dir_.string());
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return *p;
  }
  // Runs the codes through the graph: the PCM and the number of events that carried some.
  std::vector<float> run(PipelineRuntime& rt, const std::vector<int32_t>& codes, int* events,
                         Status* st) {
    std::vector<float> pcm;
    *events = 0;
    PortValue in;
    in.tokens = codes;
    *st = rt.run({{"codes", in}}, [&](const StageEvent& e) {
      EXPECT_EQ(e.port, "audio");
      if (!e.value.samples.empty()) ++*events;
      pcm.insert(pcm.end(), e.value.samples.begin(), e.value.samples.end());
    });
    return pcm;
  }

  std::filesystem::path dir_;
  std::string path_, hash_;
};

std::vector<int32_t> codes_of(int n) {
  std::vector<int32_t> c;
  for (int i = 0; i < n; ++i) c.push_back((i * 37 + 5) % 64);
  return c;
}

TEST_F(VocoderStage, TheGraphsPcmIsTheVocodersDecode) {
  auto v = Vocoder::load(path_);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  const std::vector<int32_t> codes = codes_of(40);
  auto want = (*v)->decode(codes);
  ASSERT_TRUE(want.ok());
  RamLedger ledger(int64_t{4} << 30, "test");
  {
    auto rt = PipelineRuntime::start(spec(""), ledger);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    int events = 0;
    Status st;
    const std::vector<float> pcm = run(**rt, codes, &events, &st);
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_EQ(pcm.size(), want->size());
    for (size_t i = 0; i < pcm.size(); ++i) ASSERT_FLOAT_EQ(pcm[i], (*want)[i]) << i;
    EXPECT_EQ(events, 1) << "exact mode: the utterance at its end";
    // A code outside the vocoder's vocabulary ends the request with its error.
    run(**rt, {1, 2, 9999}, &events, &st);
    EXPECT_FALSE(st.ok());
  }
  EXPECT_EQ(ledger.reserved(), 0);
}

TEST_F(VocoderStage, WindowedModeStreamsTheWindowedDecode) {
  auto v = Vocoder::load(path_);
  ASSERT_TRUE(v.ok());
  VocoderStreamOptions so;
  so.window = 8, so.context = 4, so.lookahead = 2;
  const std::vector<int32_t> codes = codes_of(40);
  auto want = (*v)->decode_windowed(codes, so);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  RamLedger ledger(int64_t{4} << 30, "test");
  auto rt = PipelineRuntime::start(spec("    window: 8\n    context: 4\n    lookahead: 2\n"),
                                   ledger);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  int events = 0;
  Status st;
  const std::vector<float> pcm = run(**rt, codes, &events, &st);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_EQ(pcm.size(), want->size());
  for (size_t i = 0; i < pcm.size(); ++i) ASSERT_NEAR(pcm[i], (*want)[i], 1e-6) << i;
  EXPECT_GT(events, 1) << "windowed mode streams";
}

}  // namespace
}  // namespace edge::pipeline
