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

}  // namespace
}  // namespace edge::e2e
