// The HTTP layer over a scripted engine. UNIT-TEST DOUBLE: ScriptedEngine below is not an
// engine; it replays fixed text pieces so that output parsing (tool calls, reasoning),
// SSE framing, error mapping and disconnect handling can be checked exactly. The e2e
// tests (tests/e2e/server_*) run the real engine and a real model.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "convert/synthetic_vocab.h"
#include "server/http_server.h"
#include "tokenizer/harmony.h"

namespace edge::server {
namespace {

using nlohmann::json;

class ScriptedEngine final : public Engine {
 public:
  explicit ScriptedEngine(Tokenizer tok, int64_t max_model_len = 256) : tok_(std::move(tok)) {
    opts_.max_model_len = max_model_len;
    cfg_.n_vocab = tok_.n_vocab();
  }
  // Each request streams these pieces (one token each); an empty script never ends.
  std::vector<std::string> script;
  Status refuse;  // non-ok: submit() fails with it
  std::atomic<bool> halt{false};  // endless requests finish (so that a failing test ends)
  std::atomic<int> sessions_closed{0}, live{0};

  Expected<SessionId> open_session() override { return ++next_session_; }
  Status close_session(SessionId s) override {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = reqs_.begin(); it != reqs_.end();)
      if (it->second.session == s) {
        it = reqs_.erase(it);
        --live;
      } else {
        ++it;
      }
    ++sessions_closed;
    return Status();
  }
  Expected<RequestHandle> submit(SessionId s, GenerateRequest r) override {
    if (!refuse.ok()) return refuse;
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t id = ++next_request_;
    reqs_[id] = Req{s, 0, r.params};
    ++live;
    return RequestHandle{7, s, id};
  }
  Expected<StreamChunk> next(const RequestHandle& h, std::chrono::milliseconds) override {
    std::unique_lock<std::mutex> l(mu_);
    auto it = reqs_.find(h.request);
    if (it == reqs_.end()) return Status::not_found("no such request");
    Req& r = it->second;
    StreamChunk c;
    if ((script.empty() && !halt) || r.pos < script.size()) {
      c.tokens = {static_cast<int32_t>(r.pos % 100) + 300};
      c.text = script.empty() ? "x" : script[r.pos];
      if (r.params.logprobs >= 0) c.logprobs.push_back({c.tokens[0], -0.5f, {{c.tokens[0], -0.5f}}});
      ++r.pos;
      l.unlock();
      if (script.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return c;
    }
    c.kind = ChunkKind::kDone;
    c.finish_reason = "stop";
    c.prompt_tokens = 5;
    c.completion_tokens = static_cast<int64_t>(script.size());
    reqs_.erase(it);
    --live;
    return c;
  }
  Status cancel(const RequestHandle&) override { return Status(); }
  EngineStats stats() const override { return EngineStats{}; }
  const ModelConfig& config() const override { return cfg_; }
  const Tokenizer* tokenizer() const override { return &tok_; }
  const EngineOptions& options() const override { return opts_; }

 private:
  struct Req {
    SessionId session;
    size_t pos;
    RequestParams params;
  };
  Tokenizer tok_;
  EngineOptions opts_;
  ModelConfig cfg_;
  std::mutex mu_;
  std::map<uint64_t, Req> reqs_;
  SessionId next_session_ = 0;
  uint64_t next_request_ = 0;
};

class HttpFakeEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    auto vocab = make_synthetic_vocab(600, 3);
    ASSERT_TRUE(vocab.ok());
    auto tok = Tokenizer::from_vocab(std::move(*vocab));
    ASSERT_TRUE(tok.ok());
    engine_ = std::make_unique<ScriptedEngine>(std::move(*tok));
  }
  void start(ServerOptions o = {}) {
    o.port = 0;
    if (o.model_names.empty()) o.model_names = {"test-model"};
    o.max_body_bytes = 64 * 1024;
    auto s = HttpServer::create(*engine_, o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(*s);
    ASSERT_TRUE(server_->bind().ok());
    thread_ = std::thread([this] { (void)server_->run(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override {
    if (engine_) engine_->halt = true;
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  httplib::Result post(const std::string& path, const std::string& body, const httplib::Headers& h = {}) {
    return client_->Post(path.c_str(), h, body, "application/json");
  }
  static json chat_body(json extra = json::object()) {
    json b = {{"model", "test-model"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
    b.update(extra);
    return b;
  }
  // A POST on a raw socket (the test hangs up when it likes); -1 if it cannot connect.
  int raw_post(const std::string& path, const std::string& body, const std::string& headers = "") const {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd);
      return -1;
    }
    const std::string req = "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + headers +
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
      close(fd);
      return -1;
    }
    return fd;
  }
  // Waits up to `ms` for the condition.
  template <typename F>
  static bool eventually(F&& f, int ms = 3000) {
    for (int i = 0; i < ms / 10; ++i) {
      if (f()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return f();
  }
  // "data: " payloads of an SSE body, in order.
  static std::vector<std::string> sse_payloads(const std::string& body) {
    std::vector<std::string> out;
    size_t p = 0;
    while ((p = body.find("data: ", p)) != std::string::npos) {
      const size_t e = body.find("\n\n", p);
      out.push_back(body.substr(p + 6, e - p - 6));
      p = e;
    }
    return out;
  }

  std::unique_ptr<ScriptedEngine> engine_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

const json kTools = json::parse(R"([{"type":"function","function":{"name":"get_weather",
    "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])");

TEST_F(HttpFakeEngine, ChatToolCallNonStreaming) {
  engine_->script = {"<think>", "need weather", "</think>\n\n", "<tool", "_call>\n{\"name\": \"get_weather\", ",
                     "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"};
  start();
  auto r = post("/v1/chat/completions", chat_body({{"tools", kTools}}).dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  const json& c = j["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_TRUE(c["message"]["content"].is_null());
  EXPECT_EQ(c["message"]["reasoning_content"], "need weather");
  const json& call = c["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);
  EXPECT_EQ(j["object"], "chat.completion");
}

TEST_F(HttpFakeEngine, ChatToolCallStreaming) {
  engine_->script = {"Sure.", " <tool", "_call>get_weather<arg_key>city</arg_key>",
                     "<arg_value>Paris</arg_value></tool_call>"};
  start();
  auto r = post("/v1/chat/completions",
                chat_body({{"tools", kTools}, {"stream", true}, {"stream_options", {{"include_usage", true}}}}).dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  auto events = sse_payloads(r->body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string content;
  json calls = json::array();
  std::string finish;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json e = json::parse(events[i]);
    if (e["choices"].empty()) {
      EXPECT_EQ(e["usage"]["completion_tokens"], 4);  // the include_usage chunk, last
      EXPECT_EQ(i + 2, events.size());
      continue;
    }
    const json& d = e["choices"][0]["delta"];
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("tool_calls")) calls.insert(calls.end(), d["tool_calls"].begin(), d["tool_calls"].end());
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(content, "Sure.");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(finish, "tool_calls");
}

TEST_F(HttpFakeEngine, ChatReasoningStreaming) {
  engine_->script = {"<thi", "nk>\nhmm", ", let me", " think</th", "ink>\n", "\nHi", " there"};
  start();
  auto r = post("/v1/chat/completions", chat_body({{"stream", true}, {"logprobs", true}}).dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  std::string reasoning, content, finish;
  size_t logprobs = 0;
  for (const auto& e : sse_payloads(r->body)) {
    if (e == "[DONE]") continue;
    const json j = json::parse(e);
    const json& c = j["choices"][0];
    if (c["delta"].contains("reasoning_content")) reasoning += c["delta"]["reasoning_content"].get<std::string>();
    if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
    if (c["logprobs"].is_object()) logprobs += c["logprobs"]["content"].size();
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(reasoning, "\nhmm, let me think");
  EXPECT_EQ(content, "Hi there");
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(logprobs, 7u);  // one per token, even while the text is held back
}

// A model whose vocabulary has the harmony tokens: its channels decide the API fields.
class HttpHarmony : public HttpFakeEngine {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    auto vocab = make_synthetic_harmony_vocab(1200, 3);
    ASSERT_TRUE(vocab.ok());
    auto tok = Tokenizer::from_vocab(std::move(*vocab));
    ASSERT_TRUE(tok.ok());
    tok->set_chat_template(harmony_chat_template());
    // The harmony system and developer messages are long for a made-up vocabulary.
    engine_ = std::make_unique<ScriptedEngine>(std::move(*tok), 2048);
  }
};

TEST_F(HttpHarmony, AnalysisToReasoningFinalToContent) {
  engine_->script = {"<|channel|>", "analysis",  "<|message|>", "Two plus",    " two.",
                     "<|end|>",     "<|start|>", "assistant",   "<|channel|>", "final",
                     "<|message|>", "It is",     " 4."};
  start();
  auto r = post("/v1/chat/completions", chat_body({{"reasoning_effort", "low"}}).dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json c = json::parse(r->body)["choices"][0];
  EXPECT_EQ(c["message"]["reasoning_content"], "Two plus two.");
  EXPECT_EQ(c["message"]["content"], "It is 4.");
  EXPECT_EQ(c["finish_reason"], "stop");
  r = post("/v1/chat/completions", chat_body({{"reasoning_effort", "extreme"}}).dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
}

TEST_F(HttpHarmony, ToolCallStreaming) {
  engine_->script = {"<|channel|>analysis<|message|>",
                     "Need",
                     " weather.",
                     "<|end|>",
                     "<|start|>assistant",
                     "<|channel|>commentary to=functions.get_weather",
                     " <|constrain|>json",
                     "<|message|>",
                     "{\"city\":",
                     " \"Paris\"}"};
  start();
  auto r = post("/v1/chat/completions", chat_body({{"tools", kTools}, {"stream", true}}).dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string reasoning, content, finish;
  json calls = json::array();
  for (const auto& e : sse_payloads(r->body)) {
    if (e == "[DONE]") continue;
    const json c = json::parse(e)["choices"][0];
    const json& d = c["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("tool_calls"))
      calls.insert(calls.end(), d["tool_calls"].begin(), d["tool_calls"].end());
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(reasoning, "Need weather.");
  EXPECT_EQ(content, "");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(finish, "tool_calls");
}

TEST_F(HttpFakeEngine, CompletionsWithLogprobsAndN) {
  engine_->script = {"a", "b"};
  start();
  auto r = post("/v1/completions", R"({"model":"test-model","prompt":"x","logprobs":1,"n":3})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], "ab");
    EXPECT_EQ(j["choices"][i]["logprobs"]["token_logprobs"].size(), 2u);
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);
}

TEST_F(HttpFakeEngine, ErrorsAreOpenAIShaped) {
  engine_->script = {"a"};
  ServerOptions o;
  o.api_key = "sekret";
  start(o);
  const httplib::Headers auth = {{"Authorization", "Bearer sekret"}};
  auto check = [&](httplib::Result r, int status, const std::string& param = "") {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    const json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r->body;
    EXPECT_TRUE(j["error"]["message"].is_string()) << r->body;
    EXPECT_TRUE(j["error"].contains("type") && j["error"].contains("param") && j["error"].contains("code"));
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], json(param));
    }
  };
  check(post("/v1/chat/completions", chat_body().dump()), 401);
  check(post("/v1/chat/completions", chat_body().dump(), {{"Authorization", "Bearer wrong"}}), 401);
  check(post("/v1/chat/completions", "{not json", auth), 400);
  check(post("/v1/chat/completions", chat_body({{"temperature", "hot"}}).dump(), auth), 400, "temperature");
  check(post("/v1/chat/completions", chat_body({{"model", "gpt-9"}}).dump(), auth), 404, "model");
  check(post("/v1/chat/completions", chat_body({{"max_tokens", 100000}}).dump(), auth), 400, "max_tokens");
  check(post("/v1/chat/completions", std::string(100 * 1024, ' '), auth), 413);
  check(client_->Get("/v1/nothing", auth), 404);
  engine_->refuse = Status::resource_exhausted("KV cache budget exhausted");
  check(post("/v1/chat/completions", chat_body().dump(), auth), 429);
  engine_->refuse = Status::unavailable("queue full");
  check(post("/v1/completions", R"({"prompt":"x"})", auth), 503);
  engine_->refuse = Status();
  // Still serving, and /health needs no key.
  auto ok = post("/v1/chat/completions", chat_body().dump(), auth);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  auto health = client_->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto metrics = client_->Get("/metrics", auth);
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("edge_requests_total{endpoint=\"/v1/chat/completions\",status=\"401\"} 2"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("edge_requests_total{endpoint=\"other\",status=\"404\"} 1"), std::string::npos);
}

TEST_F(HttpFakeEngine, ClientDisconnectCancelsTheStream) {
  engine_->script = {};  // never ends
  start();
  // A raw socket: read part of the stream, then hang up.
  const int fd = raw_post("/v1/completions", R"({"prompt":"x","stream":true})");
  ASSERT_GE(fd, 0);
  std::string got;
  char buf[4096];
  while (got.size() < 2000) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_NE(got.find("data: {"), std::string::npos);
  EXPECT_GT(engine_->live.load(), 0);
  close(fd);
  EXPECT_TRUE(eventually([&] { return engine_->live.load() == 0; }));
  EXPECT_GE(engine_->sessions_closed.load(), 1);
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("edge_requests_cancelled_total 1"), std::string::npos) << m->body;
}

TEST_F(HttpFakeEngine, TokenizeDetokenizeModels) {
  start();
  auto t = post("/tokenize", R"({"content":"hello world"})");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  const json tj = json::parse(t->body);
  ASSERT_GT(tj["tokens"].size(), 0u);
  auto d = post("/detokenize", json({{"tokens", tj["tokens"]}}).dump());
  ASSERT_TRUE(d);
  EXPECT_NE(json::parse(d->body)["content"].get<std::string>().find("hello world"), std::string::npos);
  auto bad = post("/detokenize", R"({"tokens":[999999]})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto m = client_->Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "test-model");
}

TEST_F(HttpFakeEngine, NonStreamingClientDisconnectCancelsTheGeneration) {
  // A non-streaming request whose client hangs up used to run to max_tokens: nothing was
  // written until the end, so nothing noticed. The handler now watches the connection.
  engine_->script = {};  // never ends
  start();
  const int fd = raw_post("/v1/completions", R"({"prompt":"x"})");
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(eventually([&] { return engine_->live.load() > 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(engine_->live.load(), 1);  // still generating while the client waits
  close(fd);
  EXPECT_TRUE(eventually([&] { return engine_->live.load() == 0; }, 2000)) << "the generation outlived its client";
  EXPECT_GE(engine_->sessions_closed.load(), 1);
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("edge_requests_cancelled_total 1"), std::string::npos) << m->body;
}

TEST_F(HttpFakeEngine, LivenessAndReadinessFollowTheLifecycle) {
  // Without an engine the server is live but not ready; attach() makes it ready, drain()
  // unready. /health keeps readiness semantics (as llama.cpp's). Probes need no API key.
  ServerOptions o;
  o.port = 0;
  o.api_key = "k";
  auto s = HttpServer::create(o);
  ASSERT_TRUE(s.ok());
  server_ = std::move(*s);
  ASSERT_TRUE(server_->bind().ok());
  thread_ = std::thread([this] { (void)server_->run(); });
  httplib::Client c("127.0.0.1", server_->port());
  const httplib::Headers auth = {{"Authorization", "Bearer k"}};
  auto status = [&](const char* path) {
    auto r = c.Get(path, auth);
    return r ? r->status : -1;
  };
  EXPECT_EQ(status("/health/live"), 200);
  EXPECT_EQ(status("/health/ready"), 503);
  EXPECT_EQ(status("/health"), 503);
  auto loading = c.Get("/v1/models", auth);
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, 503);
  EXPECT_EQ(json::parse(loading->body)["error"]["code"], "model_loading");
  EXPECT_EQ(loading->get_header_value("Retry-After"), "1");
  ASSERT_TRUE(server_->attach(*engine_).ok());
  EXPECT_EQ(status("/health/ready"), 200);
  EXPECT_EQ(status("/health"), 200);
  EXPECT_EQ(status("/v1/models"), 200);
  auto unauth = c.Get("/v1/models");
  ASSERT_TRUE(unauth);
  EXPECT_EQ(unauth->status, 401);
  // Draining (a stream still in flight): live, not ready.
  engine_->script = {};
  const int fd = raw_post("/v1/completions", R"({"prompt":"x","stream":true})", "Authorization: Bearer k\r\n");
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(eventually([&] { return engine_->live.load() == 1; }));
  server_->drain(std::chrono::milliseconds(2000));
  EXPECT_EQ(status("/health/ready"), 503);
  EXPECT_EQ(status("/health/live"), 200);
  close(fd);
}

TEST_F(HttpFakeEngine, DrainFinishesInFlightStreamsThenCancelsAfterTheDeadline) {
  engine_->script = {};  // never ends: only the drain deadline can stop it
  start();
  const int fd = raw_post("/v1/completions", R"({"prompt":"x","stream":true})");
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(eventually([&] { return engine_->live.load() > 0; }));
  const auto t0 = std::chrono::steady_clock::now();
  server_->drain(std::chrono::milliseconds(300));
  // New requests get 503 at once; the stream keeps running until the deadline.
  auto refused = client_->Get("/v1/models");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(json::parse(refused->body, nullptr, false)["error"]["code"], "shutting_down");
  EXPECT_EQ(engine_->live.load(), 1);
  std::string got;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
  close(fd);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 3.0);
  // The stream ends cleanly: an error event naming the shutdown, [DONE], the last chunk.
  EXPECT_NE(got.find("shutting down"), std::string::npos) << got.substr(got.size() > 500 ? got.size() - 500 : 0);
  EXPECT_NE(got.find("data: [DONE]\n\n\r\n0\r\n\r\n"), std::string::npos);
  EXPECT_EQ(engine_->live.load(), 0);
  thread_.join();                            // run() returned by itself once nothing was in flight
  EXPECT_LT(raw_post("/v1/models", ""), 0);  // and the port no longer accepts
}

TEST_F(HttpFakeEngine, DrainWithNothingInFlightStopsAtOnce) {
  start();
  const auto t0 = std::chrono::steady_clock::now();
  server_->drain(std::chrono::seconds(30));
  thread_.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
}

TEST_F(HttpFakeEngine, PerClientLimitsAnswer429WithRetryAfter) {
  engine_->script = {};
  ServerOptions o;
  o.client_limits.max_requests = 1;
  o.client_limits.max_queued_tokens = 200;  // the context is 256
  start(o);
  const int fd = raw_post("/v1/completions", R"({"prompt":"x","stream":true,"max_tokens":50})");
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(eventually([&] { return engine_->live.load() == 1; }));
  auto second = post("/v1/completions", R"({"prompt":"x","max_tokens":5})");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 429) << second->body;
  EXPECT_EQ(second->get_header_value("Retry-After"), "1");
  const json e = json::parse(second->body, nullptr, false);
  EXPECT_EQ(e["error"]["type"], "rate_limit_error");
  EXPECT_EQ(e["error"]["code"], "rate_limit_exceeded");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("concurrent"), std::string::npos);
  // Alone over the token limit: retrying cannot help, so 400 rather than 429.
  auto huge = post("/v1/completions", R"({"prompt":"x","max_tokens":100,"n":3})");
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 400) << huge->body;
  close(fd);  // the first request ends: the client may send again
  ASSERT_TRUE(eventually([&] { return engine_->live.load() == 0; }));
  engine_->script = {"a"};
  EXPECT_TRUE(eventually([&] {  // the stream's share is given back once its response ends
    auto third = post("/v1/completions", R"({"prompt":"x","max_tokens":5})");
    return third && third->status == 200;
  }));
}

TEST_F(HttpFakeEngine, ServedModelNamesAreAliases) {
  engine_->script = {"a"};
  ServerOptions o;
  o.model_names = {"main-name", "gpt-4o-mini", "alias-2"};
  start(o);
  auto m = client_->Get("/v1/models");
  ASSERT_TRUE(m);
  const json models = json::parse(m->body);
  ASSERT_EQ(models["data"].size(), 3u);
  EXPECT_EQ(models["data"][0]["id"], "main-name");
  EXPECT_EQ(models["data"][1]["id"], "gpt-4o-mini");
  EXPECT_EQ(models["data"][2]["id"], "alias-2");
  auto r = post("/v1/chat/completions", chat_body({{"model", "gpt-4o-mini"}}).dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["model"], "main-name");  // the first name is reported
  auto unknown = post("/v1/chat/completions", chat_body({{"model", "other"}}).dump());
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

TEST_F(HttpFakeEngine, DeeplyNestedBodyIs400) {
  start();
  std::string body = "{\"prompt\":";
  body += std::string(60000, '[');  // under the body limit of the fixture (64 KiB)
  auto r = post("/v1/completions", body);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "json_too_deep");
}

}  // namespace
}  // namespace edge::server
