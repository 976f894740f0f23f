// /v1/embeddings and /v1/rerank on the demo server (no -m): the official openai client and
// plain fetch (tests/e2e/server_embeddings.mjs); the server answers chat after the refusals.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server_process.h"
#include "test_support.h"

namespace edge::e2e {
namespace {

TEST(ServerEmbeddings, OpenAIClientEmbeddingsAndRerankOnTheDemoModel) {
  if (!have_node_openai())
    EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  ServerProcess server;
  ASSERT_TRUE(server.start(""));
  const CommandResult r = run_node("server_embeddings.mjs", server.url());
  ASSERT_EQ(r.code, 0) << r.out << server.log();
  const nlohmann::json summary = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_EQ(summary["dim"], 256);  // the demo model's width
  EXPECT_EQ(summary["rerank"].size(), 3u);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// A BERT-family encoder and a cross-encoder made by make-model, served with -m
// (tests/e2e/server_encoder.mjs).
std::string made_encoder(const std::string& name, const std::string& flags) {
  const std::string p = server_tmp_dir() + "/" + name + ".gguf";
  const std::string cmd = std::string(EDGE_BINARY) + " make-model " + flags + " -o " + p + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0 ? p : std::string();
}

TEST(ServerEmbeddings, BertEncoderEmbedsAndRefusesGeneration) {
  if (!have_node_openai())
    EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  const std::string m = made_encoder("bert", "--arch bert --layers 2 --dim 64 --heads 4 --vocab 400 --ctx 512");
  ASSERT_FALSE(m.empty());
  ServerProcess server;
  ASSERT_TRUE(server.start(m));
  const CommandResult r = run_node("server_encoder.mjs", server.url(), "embed");
  ASSERT_EQ(r.code, 0) << r.out << server.log();
  const nlohmann::json summary = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_EQ(summary["dim"], 64);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(ServerEmbeddings, CrossEncoderReranks) {
  if (!have_node_openai())
    EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  const std::string m =
      made_encoder("bert_rerank", "--arch bert --rerank --layers 2 --dim 64 --heads 4 --vocab 400 --ctx 512");
  ASSERT_FALSE(m.empty());
  ServerProcess server;
  ASSERT_TRUE(server.start(m));
  const CommandResult r = run_node("server_encoder.mjs", server.url(), "rerank");
  ASSERT_EQ(r.code, 0) << r.out << server.log();
  const nlohmann::json summary = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_EQ(summary["rerank"].size(), 3u);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace edge::e2e
