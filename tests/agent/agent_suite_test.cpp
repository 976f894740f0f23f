// The agent suite judged by itself: an oracle that reads only the UI tree passes every task
// on every variant; a policy that toggles everything is caught as collateral damage; looping
// policies are stopped and named; model replies are turned into actions with every repair
// recorded.
#include <gtest/gtest.h>

#include "agent/loop.h"
#include "agent/model_policy.h"
#include "agent/scripted_policies.h"
#include "agent/tool_reply.h"

namespace edge::agent {
namespace {

using nlohmann::json;

TEST(AgentSuite, OraclePassesEveryTaskOnEveryVariant) {
  SuiteOptions o;
  o.repeats = 1;
  auto r = run_suite(o, [] { return make_oracle_policy(); });
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const json& j = *r;
  EXPECT_EQ(j["total"]["runs"], all_tasks().size() * all_variants().size());
  for (const json& e : j["episodes"]) EXPECT_TRUE(e["passed"].get<bool>()) << e.dump(2);
  EXPECT_EQ(j["total"]["pass_rate"], 1.0);
  EXPECT_EQ(j["total"]["falsely_claimed_done"], 0);
  ASSERT_EQ(j["warnings"].size(), 1u) << "one repeat must be flagged";
}

TEST(AgentSuite, AlreadyOnAllowsNoToggleAndSevenThirtyPmIsDamage) {
  Task t = *task_by_name("wifi_on_already");
  Phone p(all_variants()[0], t.initial);
  const UiTree home = p.ui();
  ASSERT_TRUE(p.tap(home.nodes[1].id).ok());  // Settings
  const UiNode* wifi = nullptr;
  const UiTree settings = p.ui();
  for (const UiNode& n : settings.nodes)
    if (n.label == "Wi-Fi") wifi = &n;
  ASSERT_NE(wifi, nullptr);
  ASSERT_TRUE(p.tap(wifi->id).ok());
  ASSERT_TRUE(p.tap(wifi->id).ok());  // off and on again: the state is right, the path is not
  EXPECT_TRUE(t.achieved(p));
  EXPECT_EQ(violations(t, p), std::vector<std::string>{"wifi toggled"});

  Task alarm = *task_by_name("alarm_730am");
  Phone q(all_variants()[0], alarm.initial);
  ASSERT_TRUE(q.tap("e3").ok());  // Clock
  ASSERT_TRUE(q.tap("e3").ok());  // Add alarm (after the two alarms)
  ASSERT_EQ(q.ui().screen, "Edit alarm");
  ASSERT_TRUE(q.type("e1", "7").ok());
  ASSERT_TRUE(q.type("e2", "30").ok());
  EXPECT_FALSE(q.type("e3", "AM").ok()) << "AM/PM is a button, not a field";
  ASSERT_TRUE(q.back().ok());  // leaving without Save keeps nothing
  EXPECT_FALSE(alarm.achieved(q));
  EXPECT_EQ(q.state().alarms, q.initial().alarms);
  ASSERT_TRUE(q.tap("e3").ok());
  ASSERT_TRUE(q.type("e1", "7").ok());
  ASSERT_TRUE(q.type("e2", "30").ok());
  ASSERT_TRUE(q.tap("e5").ok());  // Save, with the editor's default PM
  EXPECT_EQ(q.ui().screen, "Clock");
  EXPECT_FALSE(alarm.achieved(q));
  EXPECT_EQ(violations(alarm, q), std::vector<std::string>{"alarm at 7:30 PM"});
}

TEST(AgentSuite, ToggleEverythingIsCaughtAsCollateralDamage) {
  SuiteOptions o;
  o.repeats = 1;
  o.tasks = {"wifi_on", "airplane_on", "open_clock"};
  o.variants = {"base", "decoys", "deep"};
  auto r = run_suite(o, [] { return make_toggle_all_policy(); });
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (const json& e : (*r)["episodes"]) {
    EXPECT_FALSE(e["passed"].get<bool>()) << e.dump(2);
    EXPECT_FALSE(e["violations"].empty()) << e.dump(2);
  }
  // Wi-Fi on is reached, but with damage; the clock is never opened, yet done is claimed
  // (where wandering in and out of menus did not end the episode as a loop first).
  EXPECT_EQ((*r)["tasks"]["wifi_on"]["achieved"], 3);
  EXPECT_EQ((*r)["tasks"]["wifi_on"]["damaged"], 3);
  EXPECT_EQ((*r)["tasks"]["open_clock"]["achieved"], 0);
  EXPECT_GE((*r)["tasks"]["open_clock"]["falsely_claimed_done"], 1);
  for (const json& e : (*r)["episodes"])
    if (e["variant"] == "decoys" && e["task"] == "wifi_on") {
      const auto v = e["violations"].get<std::vector<std::string>>();
      EXPECT_NE(std::find(v.begin(), v.end(), "wifi_calling changed"), v.end());
    }
}

TEST(AgentSuite, LoopsAreDetectedAndNamed) {
  const Task t = *task_by_name("wifi_on");
  LoopLimits lim;
  auto undo = make_looping_policy("self_undo");
  Episode e = run_episode(t, all_variants()[0], *undo, lim);
  EXPECT_EQ(e.end, "self_undo_loop");
  EXPECT_LT(e.steps, lim.max_steps);
  EXPECT_GE(e.self_undos, lim.self_undos);
  EXPECT_FALSE(e.passed);
  auto stuck = make_looping_policy("no_change");
  e = run_episode(t, all_variants()[0], *stuck, lim);
  EXPECT_EQ(e.end, "no_change_loop");
  EXPECT_EQ(e.steps, lim.no_change_streak);
}

json reply_with_content(const std::string& content) {
  return {{"choices", {{{"message", {{"role", "assistant"}, {"content", content}}}}}}};
}

TEST(AgentToolReply, CleanCallsAndEveryRecovery) {
  json clean = {{"choices",
                 {{{"message",
                    {{"content", nullptr},
                     {"tool_calls",
                      {{{"type", "function"},
                        {"function", {{"name", "tap"}, {"arguments", R"({"id":"e3"})"}}}}}}}}}}}};
  Decision d = parse_reply(clean);
  EXPECT_EQ(d.action.to_string(), "tap(e3)");
  EXPECT_TRUE(d.recoveries.empty());

  json two = clean;
  two["choices"][0]["message"]["tool_calls"].push_back(
      two["choices"][0]["message"]["tool_calls"][0]);
  two["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "{id: e2} oops";
  d = parse_reply(two);
  EXPECT_EQ(d.action.kind, "none");
  EXPECT_EQ(d.recoveries,
            (std::vector<std::string>{"extra_tool_calls_ignored", "arguments_not_json",
                                      "unusable_tool_call:tap", "unparseable"}));

  d = parse_reply(
      reply_with_content(R"(Sure! {"name": "type", "arguments": {"id": "e1", "text": "7"}})"));
  EXPECT_EQ(d.action.to_string(), "type(e1,\"7\")");
  EXPECT_EQ(d.recoveries, std::vector<std::string>{"json_in_content"});
  d = parse_reply(reply_with_content(R"({"action": "tap", "id": 4})"));
  EXPECT_EQ(d.action.to_string(), "tap(e4)");
  d = parse_reply(
      reply_with_content("<tool_call>{\"name\": \"back\", \"arguments\": {}}</tool_call>"));
  EXPECT_EQ(d.action.to_string(), "back()");
  EXPECT_EQ(d.recoveries, std::vector<std::string>{"tool_call_tag_in_content"});
  d = parse_reply(reply_with_content("I will tap(e2) now"));
  EXPECT_EQ(d.action.to_string(), "tap(e2)");
  EXPECT_EQ(d.recoveries, std::vector<std::string>{"call_syntax_in_content"});
  d = parse_reply(reply_with_content("the weather is nice"));
  EXPECT_EQ(d.action.kind, "none");
  EXPECT_EQ(d.recoveries, std::vector<std::string>{"unparseable"});
  EXPECT_NE(d.unusable_reply.find("the weather is nice"), std::string::npos);
  // A long reply is cut on a character boundary: the report must still serialise.
  std::string long_reply(181, 'x');  // after {"content":" the 200th byte is inside a pair
  for (int i = 0; i < 20; ++i) long_reply += "\u00e9";  // two bytes each in UTF-8
  d = parse_reply(reply_with_content(long_reply));
  EXPECT_LE(d.unusable_reply.size(), 200u);
  EXPECT_NO_THROW(json(d.unusable_reply).dump());
  EXPECT_EQ(parse_reply(json::object()).recoveries, std::vector<std::string>{"no_message"});
  // Text with bytes that are not UTF-8 (a model's) is shown, not thrown on.
  EXPECT_EQ((Action{"type", "e1", "7\xff"}).to_string(), "type(e1,\"7\xef\xbf\xbd\")");
}

TEST(AgentToolReply, StepRequestCarriesToolsGoalScreenAndHistory) {
  const Task t = *task_by_name("wifi_off");
  Phone p(*variant_by_name("renamed"), t.initial);
  Observation o;
  o.task = &t, o.ui = p.ui(), o.history = {"tap(e2)"};
  const json req = step_request(ModelPolicyOptions{}, o);
  EXPECT_EQ(req["tools"].size(), 4u);
  const std::string user = req["messages"][1]["content"];
  EXPECT_NE(user.find("Turn Wi-Fi off."), std::string::npos);
  EXPECT_NE(user.find("\"System preferences\""), std::string::npos) << user;
  EXPECT_NE(user.find("tap(e2);"), std::string::npos);
  ModelPolicyOptions as_json;
  as_json.ui_json = true;
  const std::string j = step_request(as_json, o)["messages"][1]["content"];
  EXPECT_NE(j.find(R"({"elements":[{"id":"e1","label":"Camera","role":"app"})"), std::string::npos)
      << j;
  EXPECT_NE(j.find(R"("screen":"Home"})"), std::string::npos) << j;
}

}  // namespace
}  // namespace edge::agent
