// Speech with Qwen3-TTS end to end: `make-model --arch qwen3-tts` writes a checkpoint with its
// speech_tokenizer/; `edge-infer tts -m DIR` speaks it with a named voice and a language;
// `serve --speech-model DIR --vocoder-worker` answers the official openai client (the same
// script as the OuteTTS server, and the named-voice one), with the 12 Hz codec in a worker.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "formats/wav.h"
#include "server_process.h"
#include "test_support.h"

namespace edge::e2e {
namespace {

using json = nlohmann::json;

// Written once per test run: a small checkpoint of Qwen's layout and its codec.
const std::string& qwen3_tts_dir() {
  static const std::string dir = [] {
    const std::string d = server_tmp_dir() + "/qwen3-tts";
    std::filesystem::remove_all(d);
    const CommandResult r = run_command(std::string(EDGE_BINARY) +
                                        " make-model --arch qwen3-tts -o " + d + " 2>&1");
    return r.code == 0 ? d : std::string();
  }();
  return dir;
}

TEST(Qwen3SpeechCli, TtsSpeaksANamedVoiceAndRefusesAnUnknownOne) {
  ASSERT_FALSE(qwen3_tts_dir().empty());
  EXPECT_TRUE(std::filesystem::exists(qwen3_tts_dir() + "/speech_tokenizer/model.safetensors"));
  const std::string wav = server_tmp_dir() + "/q3.wav";
  const std::string base = std::string(EDGE_BINARY) + " tts -m " + qwen3_tts_dir() +
                           " -p 'Good morning.' --threads 2 ";
  const CommandResult r =
      run_command(base + "--voice vivian --language english --json -o " + wav + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const json f = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(f.is_object()) << r.out;
  EXPECT_GT(f["samples"].get<int64_t>(), 0);
  EXPECT_EQ(f["samples"].get<int64_t>() % 1920, 0);
  const std::string bytes = read_file(wav);
  auto pcm = decode_wav16(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_TRUE(pcm.ok()) << pcm.status().to_string();
  const CommandResult bad = run_command(base + "--voice nobody -o " + wav + " 2>&1");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("voice 'nobody' is not a speaker of this model"), std::string::npos)
      << bad.out;
  const CommandResult profile =
      run_command(base + "--speaker " + server_tmp_dir() + "/none.json -o " + wav + " 2>&1");
  EXPECT_NE(profile.code, 0);
  EXPECT_NE(profile.out.find("--speaker takes an OuteTTS profile"), std::string::npos)
      << profile.out;
  const CommandResult bench = run_command(std::string(EDGE_BINARY) + " bench-tts -m " +
                                          qwen3_tts_dir() + " -r 2 -p 'Hi.' 2>/dev/null");
  ASSERT_EQ(bench.code, 0) << bench.out;
  const json b = json::parse(bench.out, nullptr, false);
  ASSERT_TRUE(b.is_object()) << bench.out;
  EXPECT_EQ(b["family"], "qwen3-tts");
  EXPECT_EQ(b["summary"]["n"], 2);
}

class Qwen3SpeechServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tiny_model().empty());
    ASSERT_FALSE(qwen3_tts_dir().empty());
    ASSERT_TRUE(server_.start(tiny_model(), {"--speech-model", qwen3_tts_dir(), "--vocoder-worker"}));
  }
  ServerProcess server_;
};

TEST_F(Qwen3SpeechServer, OpenAIClientWithNamedVoicesAndTheCodecInAWorker) {
  if (!have_node_openai())
    EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  const CommandResult voices = run_node("server_voices.mjs", server_.url());
  EXPECT_EQ(voices.code, 0) << voices.out << "\n--- server log ---\n" << server_.log();
  const CommandResult speech = run_node("server_speech.mjs", server_.url());
  EXPECT_EQ(speech.code, 0) << speech.out << "\n--- server log ---\n" << server_.log();
  EXPECT_NE(server_.log().find("in a worker"), std::string::npos) << server_.log();
  const std::string metrics = run_command("curl -sS " + server_.url() + "/metrics").out;
  EXPECT_NE(metrics.find("edge_tts_ttfa_s{quantile=\"0.95\"}"), std::string::npos);
  EXPECT_EQ(server_.stop(), 0) << server_.log();
}

}  // namespace
}  // namespace edge::e2e
