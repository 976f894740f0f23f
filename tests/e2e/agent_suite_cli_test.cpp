// `edge-infer agent-suite` against a real `serve` with the built-in demo model (random
// weights: its replies are noise): the loop runs end to end, every step either parsed a
// tool call or recorded the recovery, the episode ends (a loop is detected or the step
// limit reached) and the report warns that one repeat is not a rate. The server survives.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server_process.h"

namespace edge::e2e {
namespace {

using nlohmann::json;

TEST(AgentSuiteCli, DemoModelRunsTheLoopEndToEnd) {
  ServerProcess server;
  ASSERT_TRUE(server.start(""));  // no -m: the demo model
  const CommandResult r =
      run_command(std::string(EDGE_BINARY) + " agent-suite --server " + server.url() +
                  " -r 1 --tasks wifi_on,alarm_730am --variants base,decoys --max-steps 4"
                  " --max-tokens 24 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["total"]["runs"], 4);
  EXPECT_EQ(j["total"]["policy_errors"], 0) << r.out;
  ASSERT_EQ(j["warnings"].size(), 1u);
  for (const json& e : j["episodes"]) {
    const int steps = e["steps"];
    EXPECT_GT(steps, 0);
    EXPECT_LE(steps, 4);
    // One action per step; a step without a usable tool call names its recovery.
    ASSERT_EQ(e["actions"].size(), static_cast<size_t>(steps));
    int unusable = 0;
    for (const json& a : e["actions"]) unusable += a.get<std::string>().rfind("none", 0) == 0;
    for (const json& rec : e["recoveries"]) {
      const std::string s = rec;
      unusable -=
          s.find("unparseable") != std::string::npos || s.find("no_message") != std::string::npos;
    }
    EXPECT_LE(unusable, 0) << e.dump(2);
    EXPECT_TRUE(e["end"] == "done" || e["end"] == "max_steps" || e["end"] == "no_change_loop" ||
                e["end"] == "self_undo_loop")
        << e["end"];
    EXPECT_FALSE(e["passed"].get<bool>() && !e["violations"].empty());
  }
  EXPECT_TRUE(server.alive());
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// --constrained: tool_choice "required" with one call per step. The demo model's random
// weights never write a tool call by themselves; under constrained decoding every step is a
// well-formed call of a phone tool, with no recovery needed.
TEST(AgentSuiteCli, ConstrainedModeMakesEveryReplyACall) {
  ServerProcess server;
  ASSERT_TRUE(server.start(""));
  const CommandResult r =
      run_command(std::string(EDGE_BINARY) + " agent-suite --server " + server.url() +
                  " -r 1 --tasks wifi_on --variants base,decoys --max-steps 3 --max-tokens 96 --constrained"
                  " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["total"]["policy_errors"], 0) << r.out;
  for (const json& e : j["episodes"]) {
    for (const json& a : e["actions"]) EXPECT_NE(a.get<std::string>().rfind("none", 0), 0u) << e.dump(2);
    EXPECT_TRUE(e["recoveries"].empty()) << e.dump(2);
  }
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// No server: each episode ends with a policy error (not a low score) and the exit status is 1.
TEST(AgentSuiteCli, AnUnreachableServerIsAnErrorNotAScore) {
  const CommandResult r = run_command(std::string(EDGE_BINARY) +
                                      " agent-suite --server http://127.0.0.1:1 -r 1 --tasks wifi_on"
                                      " --variants base,deep 2>/dev/null");
  EXPECT_EQ(r.code, 1) << r.out;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["total"]["policy_errors"], 2);
  EXPECT_EQ(j["episodes"][0]["end"], "policy_error");
}

}  // namespace
}  // namespace edge::e2e
