// What an external stage sends its backend: a prompt to /v1/completions (greedy, or the
// client's settings); a conversation to /v1/chat/completions as it came; a prompt with media
// files as one user message whose parts carry the files' bytes unchanged (decoded back here
// and compared); and the refusals, each naming the stage.
#include "pipeline/stages/external_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/base64.h"

namespace edge::pipeline {
namespace {

using nlohmann::json;

ExternalRequestSettings settings(bool media) {
  ExternalRequestSettings s;
  s.stage = "lm", s.max_tokens = 12, s.media = media;
  return s;
}

PortValue file(std::string bytes, std::string encoding) {
  PortValue v;
  v.encoded = std::move(bytes), v.encoding = std::move(encoding);
  return v;
}

TEST(ExternalRequest, APromptGoesToCompletionsGreedy) {
  auto r = external_request(settings(false), {{"prompt", PortValue{"", {1, 2, 3}}}}, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->path, "/v1/completions");
  const json j = json::parse(r->body);
  EXPECT_EQ(j["prompt"], json({1, 2, 3}));
  EXPECT_EQ(j["max_tokens"], 12);
  EXPECT_EQ(j["temperature"], 0);
  EXPECT_TRUE(j["stream"].get<bool>());

  RequestParams p;
  p.max_tokens = 5, p.sampling.temperature = 0.7f, p.stop = {"\n"};
  ExternalRequestSettings llama = settings(false);
  llama.flavour = ServerFlavour::kLlamaServer;
  r = external_request(llama, {{"prompt", PortValue{"Once", {}}}}, &p);
  ASSERT_TRUE(r.ok());
  const json k = json::parse(r->body);
  EXPECT_EQ(k["prompt"], "Once");
  EXPECT_EQ(k["max_tokens"], 5);
  EXPECT_FLOAT_EQ(k["temperature"].get<float>(), 0.7f);
  EXPECT_EQ(k["stop"], json({"\n"}));
  EXPECT_EQ(k["n_probs"], 1);  // llama-server's ids ride in its logprobs
}

TEST(ExternalRequest, AConversationGoesToChatAsItCame) {
  const json messages = json::array(
      {{{"role", "user"},
        {"content", json::array({{{"type", "image_url"},
                                  {"image_url", {{"url", "data:image/png;base64,iVBO"}}}},
                                 {{"type", "text"}, {"text", "What is it?"}}})}}});
  for (const json& given : {json{{"messages", messages}}, messages}) {
    auto r = external_request(
        settings(true), {{"chat", PortValue{given.dump(), {}}}, {"image", PortValue{}}}, nullptr);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->path, "/v1/chat/completions");
    const json j = json::parse(r->body);
    EXPECT_EQ(j["messages"], messages);
    EXPECT_TRUE(j["stream"].get<bool>());
  }
}

TEST(ExternalRequest, APromptWithMediaFilesIsOneUserMessageCarryingTheFiles) {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  for (int i = 0; i < 300; ++i) png.push_back(static_cast<char>(i * 7));
  const std::string wav = "RIFF....WAVEfmt ";
  auto r = external_request(settings(true),
                            {{"prompt", PortValue{"What is it?", {}}},
                             {"image", file(png, "png")},
                             {"audio", file(wav, "wav")}},
                            nullptr);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->path, "/v1/chat/completions");
  const json j = json::parse(r->body);
  ASSERT_EQ(j["messages"].size(), 1u);
  EXPECT_EQ(j["messages"][0]["role"], "user");
  const json& parts = j["messages"][0]["content"];
  ASSERT_EQ(parts.size(), 3u);
  const std::string url = parts[0]["image_url"]["url"];
  const std::string head = "data:image/png;base64,";
  ASSERT_EQ(url.rfind(head, 0), 0u) << url;
  EXPECT_EQ(base64_decode(url.substr(head.size())), png);  // the file's bytes, unchanged
  EXPECT_EQ(parts[1]["type"], "input_audio");
  EXPECT_EQ(base64_decode(parts[1]["input_audio"]["data"].get<std::string>()), wav);
  EXPECT_EQ(parts[2], json({{"type", "text"}, {"text", "What is it?"}}));
}

TEST(ExternalRequest, WhatCannotBeSentIsRefusedNamingTheStage) {
  const PortValue prompt{"Hi", {}};
  auto refused = [](const Expected<ExternalRequest>& r, const std::string& words) {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("stage 'lm'"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
  };
  refused(
      external_request(settings(false), {{"prompt", prompt}, {"image", file("x", "png")}}, nullptr),
      "no media encoders");
  PortValue pixels;
  pixels.pixels = {1, 2, 3}, pixels.width = pixels.height = 1;
  refused(external_request(settings(true), {{"prompt", prompt}, {"image", pixels}}, nullptr),
          "arrived decoded");
  refused(
      external_request(settings(true),
                       {{"prompt", PortValue{"", {1, 2}}}, {"image", file("x", "png")}}, nullptr),
      "not as token ids");
  refused(
      external_request(settings(true), {{"prompt", prompt}, {"image", file("x", "gif")}}, nullptr),
      "not a PNG or JPEG");
  refused(external_request(settings(true), {{"chat", PortValue{"{\"messages\": 3}", {}}}}, nullptr),
          "\"messages\" array");
  refused(external_request(settings(true), {{"chat", PortValue{"[{}]", {}}}, {"prompt", prompt}},
                           nullptr),
          "comes alone");
  refused(external_request(settings(true), {}, nullptr), "no prompt");
  PortValue rows;
  rows.embeddings = {0.f}, rows.rows = 1;
  refused(external_request(settings(false), {{"prompt", prompt}, {"media", rows}}, nullptr),
          "media rows");
}

}  // namespace
}  // namespace edge::pipeline
