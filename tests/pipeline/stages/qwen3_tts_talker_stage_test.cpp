// The Qwen3-TTS speech graph (qwen3_tts_talker speech.codes@3 -> qwen3_tts_codec
// audio.pcm@2) on a random checkpoint of Qwen's layout: the PCM at output.audio is the codec's
// decode of the frames the talker generates with the stage's settings (seed 1, Qwen's
// sampling, F16 KV), each frame of 16 codes is decoded into its own 1920 samples as it
// arrives, and a voice or language the model lacks, or a cancelled request, ends the
// request with an error naming it while the graph keeps serving.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "convert/random_qwen3_tts.h"
#include "convert/random_qwen3_tts_codec.h"
#include "model/arch/qwen3_tts_talker.h"
#include "model/qwen3_tts_codec_decoder.h"
#include "pipeline/graph/executor.h"
#include "pipeline/prebuilt/speech_graph.h"

namespace edge::pipeline {
namespace {

namespace fs = std::filesystem;

class Qwen3TtsSpeechGraph : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("edge_q3tts_graph_" + std::to_string(::getpid())));
    RandomQwen3TtsOptions t;  // small: 2 + 2 layers, width 64, codebook 64, 16 groups
    ASSERT_TRUE(write_random_qwen3_tts(t, dir_->string()).ok());
    RandomQwen3TtsCodecOptions c;
    c.hp = small_qwen3_tts_codec_hparams();
    c.hp.codebook_size = t.codebook;
    ASSERT_TRUE(write_random_qwen3_tts_codec(c, (*dir_ / "speech_tokenizer").string()).ok());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  // The graph, with the talker's codes also routed out when `codes_out`.
  std::unique_ptr<PipelineRuntime> start(bool codes_out = false) {
    SpeechGraphOptions o;
    o.talker_model = dir_->string();
    o.capacity = 1;
    auto p = speech_pipeline(o);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    if (codes_out) p->routes.push_back(Route{{"talker", "codes"}, {"output", "codes"}});
    PipelineRunOptions ro;
    ro.ctx = o.talker_ctx;
    auto rt = PipelineRuntime::start(*p, ledger_, ro);
    EXPECT_TRUE(rt.ok()) << rt.status().to_string();
    return rt.ok() ? std::move(*rt) : nullptr;
  }

  // What the stage should produce: the talker's frames with its settings, decoded whole.
  std::vector<float> expected_pcm(const std::string& text, const std::string& speaker) {
    auto t = Qwen3TtsTalker::load(dir_->string());
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    Qwen3TtsGenerateOptions g;
    g.seed = 1;
    g.kv_type = KvType::kF16;
    const int64_t n_text = static_cast<int64_t>((*t)->tokenizer()->encode(text, false).size());
    g.max_frames = static_cast<int32_t>(25 + 8 * n_text);
    auto frames = (*t)->generate(text, speaker, "auto", g);
    EXPECT_TRUE(frames.ok()) << frames.status().to_string();
    auto codec = Qwen3TtsCodec::load((*dir_ / "speech_tokenizer").string());
    EXPECT_TRUE(codec.ok()) << codec.status().to_string();
    auto pcm = (*codec)->decode(frames->codes);
    EXPECT_TRUE(pcm.ok()) << pcm.status().to_string();
    return *pcm;
  }

  static fs::path* dir_;
  RamLedger ledger_{int64_t{4} << 30, "test"};
};

fs::path* Qwen3TtsSpeechGraph::dir_ = nullptr;

TEST_F(Qwen3TtsSpeechGraph, TheAudioIsTheCodecsDecodeOfTheTalkersFrames) {
  auto rt = start();
  ASSERT_NE(rt, nullptr);
  auto t = Qwen3TtsTalker::load(dir_->string());
  ASSERT_TRUE(t.ok());
  const std::string speaker = (*t)->config().speakers.at(1).name;
  for (const std::string& voice : {std::string(), speaker}) {
    std::vector<float> pcm;
    auto f = speak(*rt, "Good morning, edge.", voice, [&](const std::vector<float>& chunk) {
      pcm.insert(pcm.end(), chunk.begin(), chunk.end());
      return true;
    });
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    // "" speaks with the first speaker.
    const auto want = expected_pcm("Good morning, edge.",
                                   voice.empty() ? (*t)->config().speakers.front().name : voice);
    ASSERT_EQ(pcm.size(), want.size()) << voice;
    EXPECT_EQ(std::memcmp(pcm.data(), want.data(), pcm.size() * 4), 0) << voice;
    EXPECT_EQ(f->samples % 1920, 0);
    EXPECT_GT(f->chunks, 1);
  }
}

// The codec decodes each frame as it arrives: one audio event of 1920 samples per frame of
// 16 codes (decoding at the end would give one event). Whether audio overtakes the talker's
// last frame on the output queue depends on timing (a random small talker finishes in
// microseconds), so the e2e speech tests check streaming by arrival instead.
TEST_F(Qwen3TtsSpeechGraph, EveryFrameIsDecodedAsItArrives) {
  auto rt = start(/*codes_out=*/true);
  ASSERT_NE(rt, nullptr);
  auto h = rt->submit(speech_inputs("A longer sentence so that there are many frames.", "", "auto"));
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  int64_t audio_events = 0, frames = 0;
  bool talker_done = false;
  for (;;) {
    auto e = rt->next(*h, std::chrono::seconds(60));
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    if (e->end_of_request) {
      ASSERT_TRUE(e->error.ok()) << e->error.to_string();
      break;
    }
    if (e->port == "codes") {
      if (!e->terminal) EXPECT_EQ(e->value.tokens.size(), 16u);
      frames += e->terminal ? 0 : 1;
      talker_done = talker_done || e->terminal;
    } else if (!e->value.samples.empty()) {
      EXPECT_EQ(e->value.samples.size(), 1920u);
      ++audio_events;
    }
  }
  EXPECT_TRUE(talker_done);
  EXPECT_GT(frames, 2);
  EXPECT_EQ(audio_events, frames);
}

TEST_F(Qwen3TtsSpeechGraph, UnknownVoiceLanguageAndCancelEndTheRequestNamed) {
  auto rt = start();
  ASSERT_NE(rt, nullptr);
  auto none = [](const std::vector<float>&) { return true; };
  auto bad = speak(*rt, "Hello.", "nobody", none);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("voice 'nobody' is not a speaker of this model"),
            std::string::npos)
      << bad.status().to_string();
  bad = speak(*rt, "Hello.", "", none, nullptr, "klingon");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("language 'klingon' is not one of auto"), std::string::npos)
      << bad.status().to_string();
  // Cancelled after the first chunk: kCancelled, and the next utterance is whole.
  int chunks = 0;
  auto cut = speak(*rt, "Hello there, this is cut short.", "",
                   [&](const std::vector<float>&) { return ++chunks < 2; });
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kCancelled) << cut.status().to_string();
  auto ok = speak(*rt, "Good morning, edge.", "", none);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_GT(ok->samples, 0);
}

}  // namespace
}  // namespace edge::pipeline
