// Speech out, end to end on random weights: an OuteTTS-shaped LM and a WavTokenizer
// decoder made here. The reliability probes of issue 12 over the speech graph (slow
// consumer, abort mid-utterance, vocoder worker killed mid-stream), `edge-infer tts` and
// `bench-tts`, and /v1/audio/speech through curl and the official openai npm client.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "convert/random_model.h"
#include "convert/random_vocoder.h"
#include "formats/wav.h"
#include "harness/probe.h"
#include "pipeline/prebuilt/speech_graph.h"
#include "server_process.h"
#include "test_support.h"
#include "tokenizer/outetts_tokens.h"

namespace edge::e2e {
namespace {

using nlohmann::json;
using pipeline::PipelineRuntime;
using pipeline::StageEvent;
using Clock = std::chrono::steady_clock;

// Written once per test run: a tiny OuteTTS 0.2 LM and a 4096-code vocoder.
const std::pair<std::string, std::string>& speech_pair() {
  static const std::pair<std::string, std::string> paths = [] {
    const std::string lm = server_tmp_dir() + "/outetts.gguf",
                      voc = server_tmp_dir() + "/wavtok.gguf";
    RandomModelOptions o;
    o.arch = "qwen2", o.outetts = "0.2";
    o.n_layer = 2, o.n_embd = 64, o.n_head = 4, o.n_head_kv = 2, o.n_vocab = 512, o.ctx = 4096;
    RandomVocoderOptions v;
    v.n_vocab = kOuteTtsCodebook;
    if (!write_random_model(o, lm).ok() || !write_random_vocoder(v, voc).ok())
      return std::make_pair(std::string(), std::string());
    return std::make_pair(lm, voc);
  }();
  return paths;
}

constexpr const char* kText = "The quick brown fox jumps over the lazy dog near 42 green hills.";

class Speech : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(speech_pair().first.empty()) << "making the speech pair failed";
  }

  // The graph with a windowed vocoder (many chunks per utterance).
  void start(pipeline::Placement vocoder = pipeline::Placement::kInProcess, int32_t window = 16,
             bool codes_out = false) {
    pipeline::SpeechGraphOptions o;
    o.talker_model = speech_pair().first, o.vocoder_model = speech_pair().second;
    o.capacity = 1, o.vocoder_placement = vocoder;
    o.vocoder.window = window, o.vocoder.context = window / 2, o.vocoder.lookahead = window / 4;
    auto spec = pipeline::speech_pipeline(o);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    if (codes_out)
      spec->routes.push_back(pipeline::Route{{"talker", "codes"}, {"output", "codes"}});
    // Declared reservations: these tests are about the process, not the plan's estimate,
    // which a sanitizer's shadow memory exceeds several times over (a worker whose RSS
    // passes its reservation is stopped: under ASan the vocoder worker reached ~380 MiB
    // against a planned 257 MiB while the slow consumer held it).
    for (auto& s : spec->stages) s.reservation_bytes = int64_t{2} << 30;
    pipeline::PipelineRunOptions ro;
    ro.ctx = 4096, ro.worker_binary = EDGE_BINARY, ro.n_threads = 2;
    auto rt = PipelineRuntime::start(*spec, ledger_, ro);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    rt_ = std::move(*rt);
  }
  std::vector<float> speak_all() {
    std::vector<float> pcm;
    auto f = pipeline::speak(*rt_, kText, "", [&](const std::vector<float>& c) {
      pcm.insert(pcm.end(), c.begin(), c.end());
      return true;
    });
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    return pcm;
  }
  pipeline::PipelineHandle submit() {
    auto h = rt_->submit(pipeline::speech_inputs(kText));
    EXPECT_TRUE(h.ok()) << h.status().to_string();
    return *h;
  }
  // The next audio event (skipping empty ones); the end of the request is returned too.
  StageEvent next_audio(const pipeline::PipelineHandle& h) {
    for (;;) {
      auto e = rt_->next(h, std::chrono::seconds(60));
      EXPECT_TRUE(e.ok()) << e.status().to_string();
      if (!e.ok() || e->end_of_request || !e->value.samples.empty())
        return e.ok() ? *e : StageEvent{};
    }
  }

  pipeline::RamLedger ledger_{INT64_MAX, "test"};
  std::unique_ptr<PipelineRuntime> rt_;
};

// The speech probe (harness/probe.h) over a vocoder in a worker: a client that stops
// reading after its first chunk gets the same samples (nothing lost or repeated, the queue
// held at its mark); an abort mid-utterance is quick and final and the next request is
// unchanged; the vocoder worker killed mid-stream ends the request with an error naming
// generation 1, its reservation released, and the next utterance (generation 2) is the same.
TEST_F(Speech, ProbeSlowConsumerAbortAndKilledVocoder) {
  // Small windows: more events than the request's queue, the route and the worker's
  // credits hold together, so the worker is still decoding when it is killed.
  start(pipeline::Placement::kWorker, 8);
  ProbeReport report;
  SpeechProbeOptions o;
  o.slow_consumer_pause = std::chrono::seconds(2);
  speech_probe(*rt_, o, report);
  for (const char* name :
       {"speech.baseline", "speech.slow_consumer", "speech.abort", "speech.vocoder_killed"}) {
    const ProbeCheck* c = report.check(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->result, "pass") << name << ": " << c->detail;
  }
  EXPECT_TRUE(report.passed()) << report.to_json().dump(2);
  EXPECT_GT(report.check("speech.baseline")->figures["samples"].get<int64_t>(), 24000 / 2)
      << "a sentence should give more than half a second";
  EXPECT_EQ(report.check("speech.abort")->figures["samples_after_abort"], 0);
  EXPECT_EQ(rt_->state_json()["stages"][1]["worker_generation"], 2);
}

// The first audio comes out before the talker's last code (its terminal event on the
// graph's "codes" output): the vocoder starts on the first codes, in process and in a worker
// (whose codes stream in within input credits).
TEST_F(Speech, FirstAudioBeforeTheLastCode) {
  std::vector<float> in_process;
  for (auto placement : {pipeline::Placement::kInProcess, pipeline::Placement::kWorker}) {
    rt_.reset();
    start(placement, 16, /*codes_out=*/true);
    const auto h = submit();
    std::vector<float> pcm;
    int64_t audio_before_last_code = 0, codes = 0;
    bool talker_done = false;
    for (;;) {
      auto e = rt_->next(h, std::chrono::seconds(60));
      ASSERT_TRUE(e.ok()) << e.status().to_string();
      if (e->end_of_request) {
        ASSERT_TRUE(e->error.ok()) << e->error.to_string();
        break;
      }
      if (e->port == "codes") {
        codes += static_cast<int64_t>(e->value.tokens.size());
        talker_done = talker_done || e->terminal;
      } else {
        if (!talker_done) audio_before_last_code += static_cast<int64_t>(e->value.samples.size());
        pcm.insert(pcm.end(), e->value.samples.begin(), e->value.samples.end());
      }
    }
    EXPECT_TRUE(talker_done);
    if (placement == pipeline::Placement::kInProcess) {
      in_process = pcm;
    } else {  // the same samples, through the worker's shared buffers
      EXPECT_EQ(pcm, in_process);
      EXPECT_GT(rt_->state_json()["stages"][1]["transport"]["audio_buffers_mapped"].get<int>(), 0);
    }
    EXPECT_GT(codes, 100);
    EXPECT_GT(audio_before_last_code, 0) << pipeline::placement_name(placement);
  }
}

TEST(SpeechCli, TtsWritesAWavAndBenchPrintsFigures) {
  const auto& [lm, voc] = speech_pair();
  ASSERT_FALSE(lm.empty());
  const std::string wav = server_tmp_dir() + "/tts.wav";
  const CommandResult r = run_command(std::string(EDGE_BINARY) + " tts -m " + lm + " --vocoder " +
                                      voc + " -p 'Hello there, 7 apples.' -o " + wav + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string bytes = read_file(wav);
  auto w = decode_wav16(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->sample_rate, 24000);
  EXPECT_EQ(w->channels, 1);
  const json f = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(f.is_object()) << r.out;
  EXPECT_EQ(f["samples"].get<size_t>(), w->samples.size());
  EXPECT_GT(f["ttfa_s"].get<double>(), 0.0);
  const CommandResult b =
      run_command(std::string(EDGE_BINARY) + " bench-tts -m " + lm + " --vocoder " + voc +
                  " -p 'One two three.' -r 3 --window 16 --context 8 --lookahead 4");
  ASSERT_EQ(b.code, 0) << b.out;
  const json j = json::parse(b.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << b.out;
  EXPECT_EQ(j["runs"].size(), 3u);
  for (const char* k : {"ttfa_s", "rtf", "underruns", "prebuffer_s"}) {
    EXPECT_TRUE(j["summary"][k].contains("p50")) << k;
    EXPECT_TRUE(j["summary"][k].contains("p95")) << k;
  }
  EXPECT_GT(j["runs"][0]["chunks"].get<int>(), 1);  // windowed: more than one chunk
}

// A speaker profile of two words (OuteTTS JSON), written once.
const std::string& speaker_file() {
  static const std::string path = [] {
    json words = json::array();
    for (const char* w : {"hello", "there"}) {
      std::vector<int> codes;
      for (int i = 0; i < 15; ++i) codes.push_back((i * 271 + static_cast<int>(w[0])) % 4096);
      words.push_back({{"word", w}, {"duration", 0.2}, {"codes", codes}});
    }
    const std::string p = server_tmp_dir() + "/narrator.json";
    std::ofstream(p) << json{{"text", "hello there"}, {"words", words}}.dump();
    std::ofstream(server_tmp_dir() + "/broken.json")
        << R"({"words": [{"word": "x", "codes": [99999], "duration": 1}]})";
    return p;
  }();
  return path;
}

TEST(SpeechCli, ASpeakerProfileChangesTheVoiceAndABadOneIsRefused) {
  const auto& [lm, voc] = speech_pair();
  ASSERT_FALSE(lm.empty());
  const std::string base =
      std::string(EDGE_BINARY) + " tts -m " + lm + " --vocoder " + voc + " -p 'Good morning.' -o ";
  ASSERT_EQ(run_command(base + server_tmp_dir() + "/plain.wav").code, 0);
  ASSERT_EQ(run_command(base + server_tmp_dir() + "/voiced.wav --speaker " + speaker_file()).code,
            0);
  EXPECT_NE(read_file(server_tmp_dir() + "/plain.wav"),
            read_file(server_tmp_dir() + "/voiced.wav"));
  const CommandResult bad = run_command(base + server_tmp_dir() + "/bad.wav --speaker " +
                                        server_tmp_dir() + "/broken.json 2>&1");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("not one of the model's"), std::string::npos) << bad.out;
}

class SpeechServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tiny_model().empty());
    ASSERT_FALSE(speech_pair().first.empty());
    const std::string voices = std::filesystem::path(speaker_file()).parent_path().string();
    ASSERT_TRUE(server_.start(
        tiny_model(),
        {"--speech-model", speech_pair().first, "--vocoder", speech_pair().second, "--voices",
         voices, "--vocoder-window", "32", "--vocoder-context", "16", "--vocoder-lookahead", "8"}));
  }
  CommandResult post(const std::string& body, const std::string& out) {
    return run_command("curl -sS -o " + out +
                       " -w '%{http_code}' -H 'Content-Type: application/json' -d '" + body + "' " +
                       server_.url() + "/v1/audio/speech");
  }
  ServerProcess server_;
};

TEST_F(SpeechServer, ErrorsAre4xxAndTheServerKeepsServing) {
  const std::string out = server_tmp_dir() + "/speech_err.json";
  const std::string big(5000, 'a');
  for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
           {R"({"model":"tts-1","input":"","voice":"alloy"})", "input"},
           {R"({"model":"tts-1","input":")" + big + R"(","voice":"alloy"})", "input"},
           {R"({"model":"tts-1","input":"?!","voice":"alloy"})", "input"},
           {R"({"model":"tts-1","input":"hi","voice":"robot"})", "voice"},
           {R"({"model":"tts-1","input":"hi","voice":"alloy","response_format":"mp3"})",
            "response_format"},
           {R"({"model":"tts-1","input":"hi","voice":"alloy","speed":9})", "speed"},
           {R"({"input":"hi","voice":"alloy"})", "model"}}) {
    const CommandResult r = post(body, out);
    EXPECT_EQ(r.out, "400") << body.substr(0, 80);
    const json e = json::parse(read_file(out), nullptr, false);
    EXPECT_EQ(e["error"]["param"], param) << read_file(out);
  }
  // A voice from --voices speaks with its profile; a profile that does not parse is a 400.
  EXPECT_EQ(post(R"({"model":"tts-1","input":"Still here.","voice":"narrator"})",
                 server_tmp_dir() + "/n.wav")
                .out,
            "200");
  EXPECT_EQ(post(R"({"model":"tts-1","input":"hi","voice":"../narrator"})", out).out, "400");
  EXPECT_EQ(post(R"({"model":"tts-1","input":"hi","voice":"broken"})", out).out, "400");
  EXPECT_NE(read_file(out).find("not one of the model's"), std::string::npos) << read_file(out);
  const CommandResult ok = post(R"({"model":"tts-1","input":"Still here.","voice":"alloy"})",
                                server_tmp_dir() + "/ok.wav");
  EXPECT_EQ(ok.out, "200") << server_.log();
  const std::string bytes = read_file(server_tmp_dir() + "/ok.wav");
  EXPECT_TRUE(decode_wav16(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()).ok());
  const std::string metrics = run_command("curl -sS " + server_.url() + "/metrics").out;
  EXPECT_NE(read_file(server_tmp_dir() + "/n.wav"), bytes) << "the narrator's voice is its own";
  EXPECT_NE(metrics.find("edge_tts_requests 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("edge_tts_ttfa_s{quantile=\"0.95\"}"), std::string::npos);
  EXPECT_NE(metrics.find("edge_tts_prebuffer_s{quantile=\"0.5\"}"), std::string::npos);
  EXPECT_EQ(server_.stop(), 0) << server_.log();
}

// Through the API: a client that stops reading for 3 s after its first chunk of a stream
// gets every byte, the same as the whole file's; and one that hangs up mid-stream does not
// stop the server from serving the next request the same.
TEST_F(SpeechServer, SlowAndVanishingStreamClients) {
  const std::string body = std::string(R"({"model":"tts-1","input":")") + kText +
                           R"(","voice":"alloy","response_format":"pcm")";
  const std::string whole_file = server_tmp_dir() + "/whole.pcm";
  ASSERT_EQ(post(body + "}", whole_file).out, "200");
  const std::string whole = read_file(whole_file);
  ASSERT_GT(whole.size(), 48000u);
  const std::string curl = "curl -sS -N -H 'Content-Type: application/json' -d '" + body +
                           R"(,"stream_format":"audio"}' )" + server_.url() + "/v1/audio/speech";
  FILE* p = popen(curl.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string got(4096, '\0');
  got.resize(std::fread(got.data(), 1, got.size(), p));
  ASSERT_FALSE(got.empty());
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the server stalls meanwhile
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) got.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  EXPECT_EQ(got.size(), whole.size());
  EXPECT_TRUE(got == whole) << "the slow client's bytes differ";
  // A client that goes away after its first bytes.
  p = popen((curl + " 2>/dev/null").c_str(), "r");
  ASSERT_NE(p, nullptr);
  EXPECT_GT(std::fread(buf, 1, 1024, p), 0u);
  pclose(p);  // closes the pipe: curl dies of SIGPIPE and its connection closes
  ASSERT_EQ(post(body + "}", whole_file).out, "200");
  EXPECT_TRUE(read_file(whole_file) == whole);
  EXPECT_EQ(server_.stop(), 0) << server_.log();
}

// `edge-infer probe --server` on a server that speaks runs the speech checks over HTTP: a
// slow reader gets the baseline's bytes, a hang-up is cancelled in the pipeline
// (edge_tts_cancelled_total), the next utterance is unchanged.
TEST_F(SpeechServer, ProbeOverHttpRunsTheSpeechChecks) {
  const CommandResult r =
      run_command(std::string(EDGE_BINARY) + " probe --server " + server_.url() +
                  " --n 2 --stream-tokens 600 --slow-consumer-ms 1500");
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  std::map<std::string, json> checks;
  for (const json& c : j["checks"]) checks[c["name"].get<std::string>()] = c;
  for (const char* name :
       {"speech.baseline", "speech.slow_consumer", "speech.abort", "speech.after_abort"}) {
    ASSERT_TRUE(checks.count(name)) << name << " missing: " << r.out;
    EXPECT_EQ(checks[name]["result"], "pass") << checks[name].dump();
  }
  EXPECT_GT(checks["speech.baseline"]["figures"]["bytes"].get<int64_t>(), 48000);
  EXPECT_EQ(checks["speech.vocoder_killed"]["result"], "skipped");
  const std::string metrics = run_command("curl -sS " + server_.url() + "/metrics").out;
  EXPECT_NE(metrics.find("edge_tts_cancelled_total 1"), std::string::npos)
      << metrics.substr(0, 400);
  EXPECT_EQ(server_.stop(), 0) << server_.log();
}

TEST_F(SpeechServer, OpenAIClientAudioSpeechCreate) {
  if (!have_node_openai())
    EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  const CommandResult r = run_node("server_speech.mjs", server_.url());
  EXPECT_EQ(r.code, 0) << r.out << "\n--- server log ---\n" << server_.log();
  const json summary = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_GT(summary["samples"].get<int64_t>(), 0);
  EXPECT_EQ(server_.stop(), 0) << server_.log();
}

// The worker child of `parent` (an `edge-infer worker`), -1 if none.
pid_t worker_child(pid_t parent) {
  std::error_code ec;
  for (const auto& t :
       std::filesystem::directory_iterator("/proc/" + std::to_string(parent) + "/task", ec)) {
    std::ifstream in(t.path() / "children");
    for (pid_t c; in >> c;)
      if (read_file("/proc/" + std::to_string(c) + "/cmdline").find("worker") != std::string::npos)
        return c;
  }
  return -1;
}

// Through the API: the vocoder worker killed mid-stream ends an SSE stream with an explicit
// error event within 1 s; the server goes on and the next request is served (generation 2).
TEST(SpeechServerWorker, VocoderKilledMidStreamIsAnErrorEventAndTheNextRequestSucceeds) {
  ASSERT_FALSE(tiny_model().empty());
  ASSERT_FALSE(speech_pair().first.empty());
  ServerProcess server;
  ASSERT_TRUE(server.start(
      tiny_model(),
      {"--speech-model", speech_pair().first, "--vocoder", speech_pair().second, "--vocoder-worker",
       "--vocoder-window", "8", "--vocoder-context", "4", "--vocoder-lookahead", "2"}));
  const pid_t worker = worker_child(server.pid());
  ASSERT_GT(worker, 0) << "no worker child of the server";
  const std::string body = std::string(R"({"model":"tts-1","input":")") + kText +
                           R"(","voice":"alloy","response_format":"pcm","stream_format":"sse"})";
  FILE* p = popen(("curl -sS -N -H 'Content-Type: application/json' -d '" + body + "' " +
                   server.url() + "/v1/audio/speech")
                      .c_str(),
                  "r");
  ASSERT_NE(p, nullptr);
  char line[1 << 16];
  std::string last;
  bool killed = false;
  Clock::time_point t_kill;
  while (std::fgets(line, sizeof(line), p)) {
    if (std::strncmp(line, "data: ", 6) != 0) continue;
    last = line + 6;
    if (!killed) {
      ASSERT_NE(last.find("speech.audio.delta"), std::string::npos) << last;
      ASSERT_EQ(kill(worker, SIGKILL), 0);
      killed = true, t_kill = Clock::now();
    }
  }
  const auto took = Clock::now() - t_kill;
  pclose(p);
  ASSERT_TRUE(killed);
  EXPECT_LT(took, std::chrono::seconds(1));
  const json end = json::parse(last, nullptr, false);
  EXPECT_EQ(end["type"], "error") << last;
  EXPECT_NE(end.dump().find("generation 1"), std::string::npos) << last;
  const CommandResult next = run_command(
      "curl -sS -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "
      "'{\"model\":\"tts-1\",\"input\":\"Again.\",\"voice\":\"alloy\"}' " +
      server.url() + "/v1/audio/speech");
  EXPECT_EQ(next.out, "200") << server.log();
  const pid_t second = worker_child(server.pid());
  EXPECT_GT(second, 0);
  EXPECT_NE(second, worker) << "a new generation serves the next request";
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace edge::e2e
