// `edge-infer serve --pipeline FILE` and `serve -m MODEL` are one code path: the server
// serves a graph (the model alone is a one-stage graph) and answers from its in-process
// text stage. Same answer both ways; /metrics and /v1/pipeline show each stage's
// reservation on the shared ledger; what cannot be served is refused with the reason.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "pipeline/graph/artifact.h"
#include "server_process.h"

namespace edge::e2e {
namespace {

using nlohmann::json;

class ServerPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tiny_model().empty()) << "make-model failed: the server cannot be tested";
    hash_ = *pipeline::sha256_file(tiny_model());
  }
  // A pipeline file with one text stage "chat", placed `placement` (in_process, worker, or
  // external: our own server binary, copied so that a relink cannot change its pinned hash).
  std::string write_pipeline(const std::string& name, const std::string& placement,
                             const std::string& hash) {
    const std::string path = server_tmp_dir() + "/" + name + ".yaml";
    std::string kind = "lm", server;
    if (placement == "external") {
      const std::string copy = server_tmp_dir() + "/edge-infer-backend";
      std::filesystem::copy_file(EDGE_BINARY, copy,
                                 std::filesystem::copy_options::overwrite_existing);
      kind = "external\n    backend: external.openai.text.v1";
      server = "{role: server, path: " + copy + ", sha256: " + *pipeline::sha256_file(copy) + "}, ";
    }
    std::ofstream(path) << "pipeline: " << name << "\nstages:\n  - name: chat\n    kind: " << kind
                        << "\n    contract: text.generate@1\n    placement: " << placement
                        << "\n    capacity: 2\n    ctx: 512\n    reservation: 1GiB\n"
                        << "    artifacts: [" << server << "{role: model, path: " << tiny_model()
                        << ", sha256: " << hash << "}]\n"
                        << "routes: [input.prompt -> chat.prompt, chat.text -> output.text, "
                        << "chat.tokens -> output.tokens]\n";
    return path;
  }
  static json post(const ServerProcess& s, const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", s.port());
    auto r = c.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(r) << "no response from " << path;
    EXPECT_EQ(r ? r->status : 0, 200) << (r ? r->body : "");
    return r ? json::parse(r->body, nullptr, false) : json();
  }
  static std::string get(const ServerProcess& s, const std::string& path) {
    httplib::Client c("127.0.0.1", s.port());
    auto r = c.Get(path);
    EXPECT_TRUE(r && r->status == 200) << path;
    return r ? r->body : "";
  }
  static const json& completion() {
    static const json body = {{"prompt", "one two three"}, {"max_tokens", 12}, {"temperature", 0}};
    return body;
  }
  std::string hash_;
};

TEST_F(ServerPipeline, APipelineFileAndTheModelAloneAnswerAlikeAndShowTheirReservations) {
  std::string via_model, via_graph;
  {
    ServerProcess s;
    ASSERT_TRUE(s.start(tiny_model(), {"--ctx", "512", "--max-seqs", "2"}));
    via_model = post(s, "/v1/completions", completion())["choices"][0]["text"];
    // llama.cpp's return_tokens: the ids behind the text (what an external stage passes on).
    json with_ids = completion();
    with_ids["return_tokens"] = true;
    const json r = post(s, "/v1/completions", with_ids);
    EXPECT_EQ(r["choices"][0]["tokens"].size(), 12u) << r.dump();
    EXPECT_EQ(r["choices"][0]["text"], via_model);
    const json state = json::parse(get(s, "/v1/pipeline"));
    EXPECT_EQ(state["pipeline"], "single-model");
    EXPECT_EQ(state["stages"][0]["stage"], "lm");
    EXPECT_GT(state["ledger"]["reserved_bytes"].get<int64_t>(), 0);
    EXPECT_NE(get(s, "/metrics").find("edge_stage_reserved_bytes{stage=\"lm\""), std::string::npos);
    EXPECT_EQ(s.stop(), 0);
  }
  {
    ServerProcess s;
    ASSERT_TRUE(s.start("", {"--pipeline", write_pipeline("served", "in_process", hash_)}));
    EXPECT_NE(s.log().find("graph 'served'"), std::string::npos) << s.log();
    via_graph = post(s, "/v1/completions", completion())["choices"][0]["text"];
    const std::string metrics = get(s, "/metrics");
    const std::string line =
        "edge_stage_reserved_bytes{stage=\"chat\",device=\"cpu\",placement=\"in_process\"} " +
        std::to_string(int64_t{1} << 30);
    EXPECT_NE(metrics.find(line), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("edge_stage_resident_bytes{stage=\"chat\""), std::string::npos);
    const json state = json::parse(get(s, "/v1/pipeline"));
    EXPECT_EQ(state["stages"][0]["placement_actual"], "in_process cpu");
    EXPECT_GT(state["stages"][0]["loaded_rss_bytes"].get<int64_t>(), 0);
    EXPECT_EQ(s.stop(), 0);
  }
  EXPECT_FALSE(via_model.empty());
  EXPECT_EQ(via_graph, via_model) << "the graph and the model alone answered differently";
}

// The text stage in a worker process or in an external server (our own `serve`): the same
// API calls go through the graph (the client's max_tokens and sampling reach that
// process), with the same answer as in process.
class ServerPipelineRemote : public ServerPipeline,
                             public ::testing::WithParamInterface<std::string> {};

TEST_P(ServerPipelineRemote, ATextStageInAnotherProcessAnswersThroughTheGraph) {
  const std::string placement = GetParam();
  std::string local, remote;
  {
    ServerProcess s;
    ASSERT_TRUE(s.start("", {"--pipeline", write_pipeline("local", "in_process", hash_)}));
    local = post(s, "/v1/completions", completion())["choices"][0]["text"];
    EXPECT_EQ(s.stop(), 0);
  }
  ServerProcess s;
  ASSERT_TRUE(s.start("", {"--pipeline", write_pipeline("remote", placement, hash_)}));
  const json r = post(s, "/v1/completions", completion());
  remote = r["choices"][0]["text"];
  EXPECT_EQ(r["usage"]["prompt_tokens"].get<int>() > 0, true) << r.dump();
  EXPECT_EQ(remote, local) << "a worker answered differently from the stage in process";
  const json chat = post(s, "/v1/chat/completions",
                         {{"messages", {{{"role", "user"}, {"content", "hello"}}}},
                          {"max_tokens", 5},
                          {"temperature", 0}});
  EXPECT_EQ(chat["choices"][0]["message"]["role"], "assistant") << chat.dump();
  EXPECT_EQ(chat["usage"]["completion_tokens"], 5) << chat.dump();  // ids crossed over too
  const json state = json::parse(get(s, "/v1/pipeline"));
  EXPECT_EQ(state["stages"][0]["placement_actual"].get<std::string>().rfind(
                placement == "worker" ? "worker pid " : "external pid ", 0),
            0u)
      << state.dump();
  EXPECT_EQ(state["epochs_issued"], 2);
  // What a process boundary cannot carry is refused with the reason, not dropped.
  httplib::Client c("127.0.0.1", s.port());
  json with_logprobs = completion();
  with_logprobs["logprobs"] = 2;
  auto bad = c.Post("/v1/completions", with_logprobs.dump(), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_GE(bad->status, 400);
  EXPECT_NE(bad->body.find("logprobs"), std::string::npos) << bad->body;
  EXPECT_EQ(s.stop(), 0);
}

INSTANTIATE_TEST_SUITE_P(Placements, ServerPipelineRemote, ::testing::Values("worker", "external"),
                         [](const auto& info) { return info.param; });

TEST_F(ServerPipeline, WhatCannotBeServedIsRefusedWithTheReason) {
  const std::string bin = EDGE_BINARY;
  const std::string wrong(64, 'a');
  auto r = run_command(bin + " serve --port 0 --pipeline " +
                       write_pipeline("wronghash", "in_process", wrong) + " 2>&1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("differs from the declared artifact hash"), std::string::npos) << r.out;

  r = run_command(bin + " serve --port 0 -m " + tiny_model() + " --pipeline " +
                  write_pipeline("both", "in_process", hash_) + " 2>&1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("use one"), std::string::npos) << r.out;

  r = run_command(bin + " serve --port 0 --pipeline /nonexistent.yaml 2>&1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("cannot open the pipeline file"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace edge::e2e
