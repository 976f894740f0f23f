// The incremental reasoning splitter and tool-call parser: fed whole and split at every
// byte boundary (and one byte at a time), they must produce the same result.
#include <gtest/gtest.h>

#include "server/reasoning.h"
#include "server/tool_calls.h"

namespace edge::server {
namespace {

struct SplitResult {
  std::string reasoning, content;
  bool operator==(const SplitResult&) const = default;
};

SplitResult run_reasoning(const std::vector<std::string_view>& pieces, bool start_in = false) {
  ReasoningSplitter s(start_in);
  SplitResult r;
  for (auto p : pieces) {
    auto d = s.push(p);
    r.reasoning += d.reasoning;
    r.content += d.content;
  }
  auto d = s.finish();
  r.reasoning += d.reasoning;
  r.content += d.content;
  return r;
}

// Every way of cutting `text` in two, plus byte-by-byte, gives `want`.
void expect_reasoning_split_invariant(const std::string& text, const SplitResult& want, bool start_in = false) {
  EXPECT_EQ(run_reasoning({text}, start_in), want) << text;
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    std::string_view v(text);
    EXPECT_EQ(run_reasoning({v.substr(0, cut), v.substr(cut)}, start_in), want) << "cut at " << cut;
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(std::string_view(text).substr(i, 1));
  EXPECT_EQ(run_reasoning(bytes, start_in), want) << "byte by byte";
}

TEST(ReasoningSplitter, SplitsThinkBlock) {
  expect_reasoning_split_invariant("<think>\nLet me see.\n</think>\n\nThe answer is 4.",
                                   {"\nLet me see.\n", "The answer is 4."});
}

TEST(ReasoningSplitter, NoThinkIsAllContent) {
  expect_reasoning_split_invariant("Hello <b>world</b> <thin", {"", "Hello <b>world</b> <thin"});
  expect_reasoning_split_invariant("  <thin", {"", "  <thin"});
}

TEST(ReasoningSplitter, ThinkOnlyCountsAtTheStart) {
  expect_reasoning_split_invariant("Hi <think>x</think> y", {"", "Hi <think>x</think> y"});
  expect_reasoning_split_invariant("\n<think>x</think>y", {"x", "y"});
}

TEST(ReasoningSplitter, UnclosedBlockStaysReasoning) {
  expect_reasoning_split_invariant("<think>still thinking </thi", {"still thinking </thi", ""});
}

TEST(ReasoningSplitter, PromptOpenedBlock) {
  expect_reasoning_split_invariant("plan</think>\n\ndone", {"plan", "done"}, /*start_in=*/true);
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
}

TEST(ReasoningSplitter, ReleasesContentEarly) {
  // Text that cannot be part of a tag is not held back: streaming stays live.
  ReasoningSplitter s;
  EXPECT_EQ(s.push("Hello").content, "Hello");
  ReasoningSplitter r;
  EXPECT_EQ(r.push("<think>abc</th").reasoning, "abc");
  EXPECT_EQ(r.push("ink>x").content, "x");
}

struct ToolResult {
  std::string content;
  std::vector<ParsedToolCall> calls;
  bool operator==(const ToolResult&) const = default;
};

ToolResult run_tools(const std::vector<std::string_view>& pieces, const nlohmann::json& tools) {
  ToolCallParser p(tools);
  ToolResult r;
  auto add = [&](ToolDelta d) {
    r.content += d.content;
    for (auto& c : d.calls) r.calls.push_back(c);
  };
  for (auto piece : pieces) add(p.push(piece));
  add(p.finish());
  return r;
}

void expect_tools_split_invariant(const std::string& text, const ToolResult& want,
                                  const nlohmann::json& tools = nullptr) {
  EXPECT_EQ(run_tools({text}, tools), want) << text;
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    std::string_view v(text);
    EXPECT_EQ(run_tools({v.substr(0, cut), v.substr(cut)}, tools), want) << "cut at " << cut;
  }
  for (size_t a = 0; a + 3 <= text.size(); a += 3) {  // three pieces, cuts 3 bytes apart
    std::string_view v(text);
    EXPECT_EQ(run_tools({v.substr(0, a), v.substr(a, 3), v.substr(a + 3)}, tools), want) << "cuts at " << a;
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(std::string_view(text).substr(i, 1));
  EXPECT_EQ(run_tools(bytes, tools), want) << "byte by byte";
}

TEST(ToolCallParser, HermesSingleCall) {
  expect_tools_split_invariant(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
      {"Let me check.", {{"get_weather", R"({"city":"Paris"})"}}});
}

TEST(ToolCallParser, HermesTwoCallsAndStringArguments) {
  expect_tools_split_invariant(
      "<tool_call>{\"name\":\"a\",\"arguments\":{\"x\":1}}</tool_call>\n\n"
      "<tool_call>{\"name\":\"b\",\"arguments\":\"{\\\"y\\\": [1, 2]}\"}</tool_call>\n",
      {"", {{"a", R"({"x":1})"}, {"b", R"({"y": [1, 2]})"}}});
}

TEST(ToolCallParser, HermesUnclosedAtEndStillParses) {
  expect_tools_split_invariant("<tool_call>{\"name\":\"f\",\"arguments\":{}}", {"", {{"f", "{}"}}});
}

TEST(ToolCallParser, Glm45Call) {
  const nlohmann::json tools = nlohmann::json::parse(R"([{"type":"function","function":{"name":"search",
      "parameters":{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"},
      "zip":{"type":"string"}}}}}])");
  expect_tools_split_invariant(
      "<tool_call>search\n<arg_key>q</arg_key>\n<arg_value>cats & dogs</arg_value>\n"
      "<arg_key>n</arg_key>\n<arg_value>5</arg_value>\n<arg_key>zip</arg_key><arg_value>01234</arg_value>\n"
      "</tool_call>",
      {"", {{"search", R"({"n":5,"q":"cats & dogs","zip":"01234"})"}}}, tools);
}

TEST(ToolCallParser, Glm45NoArguments) {
  expect_tools_split_invariant("ok <tool_call>now</tool_call>", {"ok", {{"now", "{}"}}});
}

TEST(ToolCallParser, MalformedBodyComesBackAsContent) {
  expect_tools_split_invariant("a <tool_call>{\"name\": oops}</tool_call> b",
                               {"a<tool_call>{\"name\": oops}</tool_call> b", {}});
  expect_tools_split_invariant("x <tool_call>not a call at all", {"x<tool_call>not a call at all", {}});
}

TEST(ToolCallParser, PlainTextPassesThroughWithItsWhitespace) {
  expect_tools_split_invariant("Just text, <tool and <b>tags</b>.\n\n", {"Just text, <tool and <b>tags</b>.\n\n", {}});
}

TEST(ToolCallParser, DoesNotHoldBackTextThatCannotBeATag) {
  ToolCallParser p;
  EXPECT_EQ(p.push("Hello wor").content, "Hello wor");
  EXPECT_EQ(p.push("ld <tool_").content, "ld");  // " <tool_" may start a call
  EXPECT_EQ(p.push("box>").content, " <tool_box>");
}

TEST(ToolCallParser, BodyParsers) {
  ParsedToolCall c;
  EXPECT_FALSE(parse_tool_call_body("", nullptr, c));
  EXPECT_FALSE(parse_tool_call_body("{\"arguments\":{}}", nullptr, c));  // no name
  EXPECT_FALSE(parse_tool_call_body("two words<arg_key>a</arg_key><arg_value>1</arg_value>", nullptr, c));
  EXPECT_FALSE(parse_tool_call_body("f<arg_key>a</arg_key>no value", nullptr, c));
  ASSERT_TRUE(parse_tool_call_body("f<arg_key>a</arg_key><arg_value>{\"k\":[1]}</arg_value>", nullptr, c));
  EXPECT_EQ(c.arguments, R"({"a":{"k":[1]}})");
}

}  // namespace
}  // namespace edge::server
