// The figures of an utterance from its chunk arrival times, and the speech graph's shape.
#include "pipeline/prebuilt/speech_graph.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {
namespace {

constexpr int32_t kRate = 1000;  // 1 sample = 1 ms: easy arithmetic

TEST(SpeechTimeline, SteadyStreamAheadOfPlaybackNeverUnderruns) {
  SpeechTimeline t(kRate);
  // 100 ms of audio every 50 ms from t = 0.2 s: faster than real time.
  for (int i = 0; i < 10; ++i) t.chunk_at(0.2 + 0.05 * i, 100);
  const auto f = t.figures();
  EXPECT_DOUBLE_EQ(f.ttfa_s, 0.2);
  EXPECT_DOUBLE_EQ(f.audio_s, 1.0);
  EXPECT_NEAR(f.rtf, 0.65, 1e-9);  // last chunk at 0.65 s for 1 s of audio
  EXPECT_EQ(f.underruns, 0);
  EXPECT_DOUBLE_EQ(f.prebuffer_s, 0.0);
  EXPECT_EQ(f.chunks, 10);
}

TEST(SpeechTimeline, LateChunksUnderrunAndSetThePrebuffer) {
  SpeechTimeline t(kRate);
  t.chunk_at(0.1, 100);  // plays 0.1 .. 0.2
  t.chunk_at(0.3, 100);  // 0.1 s late: underrun, plays 0.3 .. 0.4
  t.chunk_at(0.35, 50);  // in time: plays 0.4 .. 0.45
  t.chunk_at(0.6, 100);  // 0.15 s late again
  const auto f = t.figures();
  EXPECT_EQ(f.underruns, 2);
  EXPECT_NEAR(f.stall_s, 0.25, 1e-9);
  // Without stalls chunk 4 is due at 0.1 + 0.25 = 0.35 and comes at 0.6: 0.25 s of
  // prebuffer makes every chunk come in time.
  EXPECT_NEAR(f.prebuffer_s, 0.25, 1e-9);
  EXPECT_NEAR(f.rtf, 0.6 / 0.35, 1e-9);
}

TEST(SpeechFigureSet, PercentilesByNearestRank) {
  EXPECT_EQ(percentile({}, 0.5), 0.0);
  EXPECT_EQ(percentile({3, 1, 2}, 0.5), 2.0);
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(percentile(v, 0.95), 95.0);
  SpeechFigureSet set;
  for (int i = 1; i <= 20; ++i) {
    SpeechTimeline::Figures f;
    f.ttfa_s = i * 0.01;
    set.add(f);
  }
  const auto j = set.summary_json();
  EXPECT_EQ(j["n"], 20);
  EXPECT_NEAR(j["ttfa_s"]["p50"].get<double>(), 0.10, 1e-12);
  EXPECT_NEAR(j["ttfa_s"]["p95"].get<double>(), 0.19, 1e-12);
  EXPECT_NE(set.metrics_text().find("edge_tts_ttfa_s{quantile=\"0.95\"} 0.19"), std::string::npos)
      << set.metrics_text();
}

TEST(SpeechGraph, TextToTalkerToVocoderToAudio) {
  const auto dir = std::filesystem::temp_directory_path() / "edge_speech_graph_test";
  std::filesystem::create_directories(dir);
  const std::string voc = (dir / "v.gguf").string();
  std::ofstream(voc) << std::string(1000, 'x');
  SpeechGraphOptions o;
  o.talker_model = "t.gguf", o.vocoder_model = voc, o.vocoder_placement = Placement::kWorker;
  auto p = speech_pipeline(o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_EQ(p->stages.size(), 2u);
  EXPECT_EQ(p->stages[0].contract.str(), "speech.codes@2");
  EXPECT_EQ(p->stages[1].contract.str(), "audio.pcm@1");
  EXPECT_EQ(p->stages[1].placement, Placement::kWorker);
  EXPECT_EQ(p->stages[1].reservation_bytes, 2000 + (256LL << 20));
  ASSERT_EQ(p->routes.size(), 4u);
  EXPECT_EQ(p->routes[1].str(), "input.voice -> talker.voice");
  EXPECT_EQ(p->routes[3].str(), "vocoder.pcm -> output.audio");
  EXPECT_TRUE(validate_pipeline(*p).ok()) << validate_pipeline(*p).to_string();
  EXPECT_EQ(speech_inputs("hi", "{}").at("voice").text, "{}");
  o.vocoder_model = (dir / "missing.gguf").string();
  EXPECT_FALSE(speech_pipeline(o).ok());
  std::filesystem::remove_all(dir);
}

// A Qwen3-TTS checkpoint folder gives the speech.codes@3 -> audio.pcm@2 graph, its codec
// taken from speech_tokenizer/ unless named; a GGUF file stays OuteTTS.
TEST(SpeechGraph, AQwen3TtsFolderGivesTheFrameGraph) {
  const auto dir = std::filesystem::temp_directory_path() / "edge_speech_graph_q3";
  std::filesystem::create_directories(dir / "speech_tokenizer");
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen3_tts"})";
  std::ofstream(dir / "model.safetensors") << std::string(100, 'x');
  std::ofstream(dir / "speech_tokenizer" / "model.safetensors") << std::string(1000, 'x');
  EXPECT_EQ(speech_family(dir.string()), SpeechFamily::kQwen3Tts);
  EXPECT_EQ(speech_family((dir / "model.safetensors").string()), SpeechFamily::kQwen3Tts);
  EXPECT_EQ(speech_family((dir / "config.json").string()), SpeechFamily::kOuteTts);
  EXPECT_EQ(speech_family("t.gguf"), SpeechFamily::kOuteTts);
  SpeechGraphOptions o;
  o.talker_model = dir.string();
  auto p = speech_pipeline(o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_EQ(p->stages.size(), 2u);
  EXPECT_EQ(p->stages[0].kind->name, std::string("qwen3_tts_talker"));
  EXPECT_EQ(p->stages[0].contract.str(), "speech.codes@3");
  EXPECT_EQ(p->stages[0].artifacts[0].path, (dir / "model.safetensors").string());
  EXPECT_EQ(p->stages[1].kind->name, std::string("qwen3_tts_codec"));
  EXPECT_EQ(p->stages[1].contract.str(), "audio.pcm@2");
  EXPECT_EQ(p->stages[1].artifacts[0].path, (dir / "speech_tokenizer" / "model.safetensors").string());
  EXPECT_EQ(p->stages[1].reservation_bytes, 1500 + (64LL << 20));
  ASSERT_EQ(p->routes.size(), 5u);
  EXPECT_EQ(p->routes[2].str(), "input.language -> talker.language");
  EXPECT_TRUE(validate_pipeline(*p).ok()) << validate_pipeline(*p).to_string();
  EXPECT_EQ(speech_inputs("hi", "vivian", "english").at("language").text, "english");
  // A codec folder without its weights is named.
  o.vocoder_model = (dir / "nowhere").string();
  auto missing = speech_pipeline(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nowhere: no model.safetensors"), std::string::npos)
      << missing.status().to_string();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace edge::pipeline
