// The shipped vision-language-external graph: a chat.generate@1 stage on
// external.openai.multimodal.v1, our own `serve` started by the pipeline with the demo model
// and its vision projector. The image reaches that server unchanged: the graph's answer
// (pipeline run with an image file, and serve --pipeline with a client's image part) is
// the one a server started by hand on the same two files gives to the same chat request,
// greedy, and differs from the answer without the image. The stage's placement proof names
// the vision encoder; tools are refused with the reason.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/base64.h"
#include "server_process.h"

namespace edge::e2e {
namespace {

using nlohmann::json;

const std::string kDir = std::string(EDGE_SOURCE_DIR) + "/pipelines/";
const std::string kGraph = kDir + "vision-language-external.yaml";
const std::string kImage = kDir + "media/gradient.png";
const std::string kQuestion = "What is in the picture?";

class MultimodalExternal : public ::testing::Test {
 protected:
  // The demo files, written into this suite's own cache (children inherit it).
  static void SetUpTestSuite() {
    const std::string cache = server_tmp_dir() + "/mm_cache";
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    const CommandResult plan = run_command(std::string(EDGE_BINARY) + " pipeline plan " + kGraph);
    ASSERT_EQ(plan.code, 0) << plan.out;
    const json planned = json::parse(plan.out);
    for (const json& a : planned["stages"][0]["artifacts"]) {
      if (a["symbol"] == "demo:lm") model_ = a["path"];
      if (a["symbol"] == "demo:vision-projector") projector_ = a["path"];
    }
    ASSERT_FALSE(model_.empty());
    ASSERT_FALSE(projector_.empty());
  }

  static json chat_body(bool with_image) {
    json content = json::array();
    if (with_image)
      content.push_back(
          {{"type", "image_url"},
           {"image_url", {{"url", "data:image/png;base64," + base64(read_file(kImage))}}}});
    content.push_back({{"type", "text"}, {"text", kQuestion}});
    return {{"messages", json::array({{{"role", "user"}, {"content", content}}})},
            {"max_tokens", 8},
            {"temperature", 0}};
  }
  static httplib::Result post(const ServerProcess& s, const json& body) {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(120, 0);
    return c.Post("/v1/chat/completions", body.dump(), "application/json");
  }
  // The answer's text; every answer has its 8 tokens counted (through a pipeline too: the
  // backend's stream carries their ids).
  static std::string answer(const ServerProcess& s, const json& body) {
    auto r = post(s, body);
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    if (!r || r->status != 200) return "";
    const json j = json::parse(r->body);
    EXPECT_EQ(j["usage"]["completion_tokens"], 8) << r->body;
    return j["choices"][0]["message"]["content"].get<std::string>();
  }

  static inline std::string model_, projector_;
};

TEST_F(MultimodalExternal, TheImageReachesTheServerUnchanged) {
  ServerProcess direct;
  ASSERT_TRUE(direct.start(model_, {"--mmproj", projector_, "--ctx", "1024"}));
  const std::string seen = answer(direct, chat_body(true));
  const std::string unseen = answer(direct, chat_body(false));
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen, unseen);  // the image changes the answer

  // pipeline run: the image file and the prompt become that same chat request.
  const CommandResult run = run_command(std::string(EDGE_BINARY) + " pipeline run " + kGraph +
                                        " --input image=image:" + kImage +
                                        " --input 'prompt=" + kQuestion + "' -n 8 --events");
  ASSERT_EQ(run.code, 0) << run.out;
  std::string text, placement;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    const json e = json::parse(line);
    if (e.value("output", "") == "text") text += e.value("text", "");
    if (e.contains("state")) placement = e["state"]["stages"][0].value("placement_actual", "");
  }
  EXPECT_EQ(text, seen);
  EXPECT_NE(placement.find("; vision cpu"), std::string::npos) << placement;

  // serve --pipeline: the client's messages, image part included, pass through as they came.
  ServerProcess graph;
  ASSERT_TRUE(graph.start("", {"--pipeline", kGraph}));
  EXPECT_EQ(answer(graph, chat_body(true)), seen);
  EXPECT_EQ(answer(graph, chat_body(false)), unseen);
  json with_tools = chat_body(true);
  with_tools["tools"] = json::array(
      {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", json::object()}}}}});
  auto refused = post(graph, with_tools);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_NE(refused->body.find("tools"), std::string::npos) << refused->body;
  EXPECT_EQ(graph.stop(), 0);
  EXPECT_EQ(direct.stop(), 0);
}

}  // namespace
}  // namespace edge::e2e
