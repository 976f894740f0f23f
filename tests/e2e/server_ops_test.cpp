// Operations of a real `edge-infer serve` process on a real (tiny, random) model: a client
// that hangs up on a non-streaming request cancels it in the engine; SIGTERM drains
// (in-flight streams finish, new requests are refused, exit 0; after --drain-timeout they
// are cancelled and still end cleanly); the health probes, served-model-name aliases and
// per-client limits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "harness/raw_http.h"
#include "server_process.h"

namespace edge::e2e {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A request on a raw socket (harness/raw_http.h: the test decides when to read and when
// to hang up).
int raw_request(int port, const std::string& method, const std::string& path,
                const std::string& body, const std::string& headers = "", int rcvbuf = 0) {
  return raw_http_request("127.0.0.1", std::to_string(port), method, path, body, headers, rcvbuf);
}

class ServerOps : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tiny_model().empty()) << "make-model failed: the server cannot be tested";
  }
  std::string curl(const std::string& args) { return run_command("curl -sS " + args).out; }
  // A value of /metrics (-1 if absent). The key is the one ProbesAliasesAndPerClientLimits
  // sets (ignored by a server without one).
  double metric(const std::string& name) {
    const std::string m = curl("-H 'Authorization: Bearer k' " + server_.url() + "/metrics");
    const size_t p = m.find("\n" + name + " ");
    return p == std::string::npos ? -1 : std::atof(m.c_str() + p + name.size() + 2);
  }
  template <typename F>
  bool eventually(F&& f, double seconds) {
    const auto t0 = Clock::now();
    while (seconds_since(t0) < seconds) {
      if (f()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return f();
  }
  // A stream of n choices that the test does not read: it fills the socket and stays in flight.
  int stalled_stream(int n, const std::string& headers = "") {
    const json body = {{"prompt", "hello"},  {"max_tokens", 900}, {"n", n},
                       {"ignore_eos", true}, {"stream", true},    {"temperature", 0}};
    return raw_request(server_.port(), "POST", "/v1/completions", body.dump(), headers, 8192);
  }
  ServerProcess server_;
};

TEST_F(ServerOps, NonStreamingClientDisconnectCancelsInTheEngine) {
  // Every step of this model is slow enough (8 layers of 512) that 3000 tokens take
  // seconds; a client that hangs up after ~0.3 s must not leave them running.
  const std::string model = made_model(
      "slow_qwen3", "--layers 8 --dim 512 --heads 8 --kv-heads 4 --vocab 512 --ctx 4096 --seed 3");
  ASSERT_FALSE(model.empty());
  ASSERT_TRUE(server_.start(model, {"--ctx", "4096", "--max-seqs", "1", "-t", "1"}));
  const json body = {
      {"prompt", "hello"}, {"max_tokens", 3000}, {"ignore_eos", true}, {"temperature", 0}};
  const int fd = raw_request(server_.port(), "POST", "/v1/completions", body.dump());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(eventually([&] { return metric("edge_kv_blocks_used") > 0; }, 30)) << server_.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  close(fd);
  const auto closed = Clock::now();
  EXPECT_TRUE(eventually([&] { return metric("edge_engine_requests_cancelled_total") >= 1; }, 5));
  const double cancel_s = seconds_since(closed);
  EXPECT_TRUE(eventually([&] { return metric("edge_kv_blocks_used") == 0; }, 2));
  EXPECT_EQ(metric("edge_requests_cancelled_total"), 1);
  const double generated = metric("edge_generated_tokens_total");
  EXPECT_LT(generated, 1500) << "the request ran on after its client left";
  EXPECT_LT(cancel_s, 2.0);
  std::printf("cancelled %.2f s after the hang-up, %.0f of 3000 tokens generated\n", cancel_s,
              generated);
  EXPECT_EQ(server_.stop(), 0) << server_.log();
}

TEST_F(ServerOps, SigtermLetsAStreamFinishRefusesNewRequestsAndExitsZero) {
  ASSERT_TRUE(server_.start(tiny_model(), {"--max-seqs", "16", "--drain-timeout", "60"}));
  const int fd = stalled_stream(16);
  ASSERT_GE(fd, 0);
  // Generous: under a sanitizer on a loaded 2-core machine the tiny model needs longer to
  // fill the socket buffers (the stream cannot finish first: 16 x 900 tokens).
  ASSERT_TRUE(eventually([&] { return metric("edge_requests_paused") > 0; }, 60))
      << "the stream never stalled";
  server_.terminate();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(server_.alive()) << "exited with a stream in flight:\n" << server_.log();
  // A new request is refused: 503 while the listener is still open, or no connection.
  const std::string again = curl("-w '\\n%{http_code}' " + server_.url() + "/health/ready");
  EXPECT_TRUE(again.find("503") != std::string::npos || again.find("\n000") != std::string::npos)
      << again;
  const auto t0 = Clock::now();
  const std::string got = read_to_end(fd);
  EXPECT_NE(got.find("data: [DONE]\n\n\r\n0\r\n\r\n"), std::string::npos)
      << "the stream did not end cleanly";
  EXPECT_EQ(got.find("shutting down"), std::string::npos)
      << "cancelled although within the drain timeout";
  size_t finished = 0;
  for (size_t p = 0; (p = got.find("\"finish_reason\":\"length\"", p)) != std::string::npos; ++p)
    ++finished;
  EXPECT_EQ(finished, 16u);
  EXPECT_EQ(server_.wait_exit(10), 0) << server_.log();
  std::printf("drained: the stream took %.2f s more, then exit 0\n", seconds_since(t0));
}

TEST_F(ServerOps, SigtermCancelsWhatOutlivesTheDrainTimeout) {
  ASSERT_TRUE(server_.start(tiny_model(), {"--max-seqs", "16", "--drain-timeout", "1"}));
  const int fd = stalled_stream(16);
  ASSERT_GE(fd, 0);
  // Generous: under a sanitizer on a loaded 2-core machine the tiny model needs longer to
  // fill the socket buffers (the stream cannot finish first: 16 x 900 tokens).
  ASSERT_TRUE(eventually([&] { return metric("edge_requests_paused") > 0; }, 60))
      << "the stream never stalled";
  const auto t0 = Clock::now();
  server_.terminate();
  std::this_thread::sleep_for(
      std::chrono::milliseconds(1500));  // past the deadline, still not reading
  const std::string got = read_to_end(fd);
  EXPECT_NE(got.find("shutting down"), std::string::npos)
      << got.substr(got.size() > 400 ? got.size() - 400 : 0);
  EXPECT_NE(got.find("data: [DONE]\n\n\r\n0\r\n\r\n"), std::string::npos)
      << "the stream did not end cleanly";
  EXPECT_EQ(server_.wait_exit(10), 0) << server_.log();
  EXPECT_LT(seconds_since(t0), 8.0);
}

TEST_F(ServerOps, ProbesAliasesAndPerClientLimits) {
  ASSERT_TRUE(
      server_.start(tiny_model(), {"--api-key", "k", "--served-model-name", "tiny", "gpt-4o-mini",
                                   "--max-seqs", "16", "--max-client-requests", "1"}));
  const std::string url = server_.url();
  // Probes need no key; /health keeps working (readiness).
  for (const char* p : {"/health/live", "/health/ready", "/health"})
    EXPECT_EQ(curl("-o /dev/null -w '%{http_code}' " + url + p), "200") << p;
  const std::string auth = "-H 'Authorization: Bearer k' ";
  const json models = json::parse(curl(auth + url + "/v1/models"), nullptr, false);
  ASSERT_TRUE(models.is_object());
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(models["data"][1]["id"], "gpt-4o-mini");
  const std::string req =
      R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":3})";
  const std::string post =
      auth + "-H 'Content-Type: application/json' -d '" + req + "' " + url + "/v1/chat/completions";
  const json ok = json::parse(curl(post), nullptr, false);
  EXPECT_EQ(ok["model"], "tiny") << ok.dump();
  // One request in flight per client: a second gets 429 with Retry-After.
  const int fd = stalled_stream(16, "Authorization: Bearer k\r\n");
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(eventually([&] { return metric("edge_requests_paused") > 0; }, 60))
      << "the stream never stalled";
  const std::string limited = curl("-i " + post);
  EXPECT_NE(limited.find("HTTP/1.1 429"), std::string::npos) << limited;
  EXPECT_NE(limited.find("Retry-After: 1"), std::string::npos) << limited;
  EXPECT_NE(limited.find("\"rate_limit_exceeded\""), std::string::npos) << limited;
  close(fd);
  EXPECT_EQ(server_.stop(), 0) << server_.log();
}

// The same prompt twice: the second reuses the first's blocks, unless --no-prefix-cache
// (the switch a benchmark uses to measure without the cache) turns reuse off.
TEST_F(ServerOps, NoPrefixCacheRecomputesARepeatedPrompt) {
  std::string prompt;
  for (int i = 0; i < 8; ++i) prompt += "the same system prompt again ";
  const json body = {{"prompt", prompt}, {"max_tokens", 2}, {"temperature", 0}};
  for (const bool cache : {true, false}) {
    std::vector<std::string> flags = {"--ctx", "1024"};
    if (!cache) flags.push_back("--no-prefix-cache");
    ASSERT_TRUE(server_.start(tiny_model(), flags));
    for (int i = 0; i < 2; ++i) {
      const std::string out = curl("-H 'Content-Type: application/json' -d '" + body.dump() + "' " +
                                   server_.url() + "/v1/completions");
      ASSERT_NE(out.find("\"choices\""), std::string::npos) << out;
    }
    const double hits = metric("edge_prefix_cache_hit_tokens_total");
    if (cache)
      EXPECT_GT(hits, 0) << server_.log();
    else
      EXPECT_EQ(hits, 0) << server_.log();
    EXPECT_EQ(server_.stop(), 0) << server_.log();
  }
}

// `serve --spec ngram`: a repetitive prompt's greedy completion is the text of the server
// without drafts; /metrics counts the drafts verified and taken, and the response's usage
// gives the request's own (completion_tokens_details: accepted / rejected prediction tokens).
TEST_F(ServerOps, SpeculativeServingGivesThePlainTextAndCountsDrafts) {
  std::string prompt;
  for (int i = 0; i < 6; ++i) prompt += "one two three four five six ";
  const json body = {
      {"prompt", prompt}, {"max_tokens", 64}, {"temperature", 0}, {"ignore_eos", true}};
  std::string texts[2];
  for (const bool spec : {false, true}) {
    std::vector<std::string> flags = {"--ctx", "1024"};
    if (spec) flags.insert(flags.end(), {"--spec", "ngram", "--draft-max", "3"});
    ASSERT_TRUE(server_.start(tiny_model(), flags));
    const std::string out = curl("-H 'Content-Type: application/json' -d '" + body.dump() + "' " +
                                 server_.url() + "/v1/completions");
    const json j = json::parse(out, nullptr, false);
    ASSERT_TRUE(j.contains("choices")) << out;
    texts[spec] = j["choices"][0]["text"].get<std::string>();
    const double drafted = metric("edge_spec_draft_tokens_total");
    if (spec)
      EXPECT_GT(drafted, 0) << server_.log();
    else
      EXPECT_EQ(drafted, 0) << server_.log();
    // The request's own figures, as OpenAI's prediction tokens, add up to the counters.
    const json& details = j["usage"]["completion_tokens_details"];
    const double accepted = details["accepted_prediction_tokens"].get<double>();
    EXPECT_EQ(accepted, metric("edge_spec_accepted_tokens_total")) << out;
    EXPECT_EQ(accepted + details["rejected_prediction_tokens"].get<double>(), drafted) << out;
    EXPECT_EQ(server_.stop(), 0) << server_.log();
  }
  EXPECT_EQ(texts[1], texts[0]);
  EXPECT_FALSE(texts[0].empty());
}

}  // namespace
}  // namespace edge::e2e
