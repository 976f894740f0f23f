// Structured outputs end to end: the official openai client and Ajv (tests/e2e/
// server_structured.mjs) against `edge-infer serve` on a tiny random model: 20 schemas, each
// sampled five times, all answers valid JSON that Ajv accepts; parse(), json_object,
// llama.cpp's grammar field, and the 400s for what cannot be honoured. The full
// 1,000-request run is `node tests/e2e/server_structured.mjs tests/node/node_modules URL 50`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server_process.h"
#include "test_support.h"

namespace edge::e2e {
namespace {

TEST(ServerStructured, EverySampledAnswerValidatesAgainstItsSchema) {
  if (!have_node_openai())
    EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  ASSERT_FALSE(tiny_model().empty());
  ServerProcess server;
  ASSERT_TRUE(server.start(tiny_model(), {"--max-seqs", "4"}));
  const CommandResult r = run_node("server_structured.mjs", server.url(), "5");
  ASSERT_EQ(r.code, 0) << r.out << server.log();
  const nlohmann::json summary = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_EQ(summary["requests"], 100);
  EXPECT_EQ(summary["valid"], 100);
  EXPECT_TRUE(server.alive());
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// A harmony model (a tiny random GPT-OSS made by make-model): tool_choice "required" and a
// named function give one valid call per reply (tests/e2e/server_harmony_tools.mjs).
TEST(ServerStructured, HarmonyForcedToolCallsValidate) {
  if (!have_node_openai())
    EDGE_SKIP_UNLESS_REQUIRED("node or the openai package (tests/node) is missing");
  const std::string m = server_tmp_dir() + "/gpt_oss_tools.gguf";
  const std::string cmd = std::string(EDGE_BINARY) +
                          " make-model --arch gpt-oss --layers 2 --dim 64 --heads 4 --kv-heads 2 "
                          "--ffn 64 --vocab 1200 --seed 3 -o " + m + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ServerProcess server;
  ASSERT_TRUE(server.start(m));
  const CommandResult r = run_node("server_harmony_tools.mjs", server.url());
  ASSERT_EQ(r.code, 0) << r.out << server.log();
  const nlohmann::json summary = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << r.out;
  EXPECT_EQ(summary["tool_calls"], 8);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace edge::e2e
