// The harmony output parser: channels to reasoning / content, messages to functions.NAME
// to tool calls, whatever way the text is cut into pieces (whole, every cut in two, byte
// by byte), and the header forms the model and GPT-OSS's template write.
#include <gtest/gtest.h>

#include "convert/synthetic_vocab.h"
#include "server/chat_prompt.h"
#include "server/choice_output.h"
#include "server/harmony.h"
#include "tokenizer/harmony.h"

namespace edge::server {
namespace {

struct Result {
  std::string reasoning, content;
  std::vector<ParsedToolCall> calls;
  bool operator==(const Result&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Result& r) {
  os << "{reasoning='" << r.reasoning << "', content='" << r.content << "', calls=[";
  for (const auto& c : r.calls) os << c.name << "(" << c.arguments << ") ";
  return os << "]}";
}

Result run(const std::vector<std::string_view>& pieces, bool tools) {
  HarmonyParser p(tools);
  Result r;
  auto add = [&](HarmonyDelta d) {
    r.reasoning += d.reasoning;
    r.content += d.content;
    for (auto& c : d.calls) r.calls.push_back(std::move(c));
  };
  for (auto piece : pieces) add(p.push(piece));
  add(p.finish());
  return r;
}

void expect_invariant(const std::string& text, const Result& want, bool tools = true) {
  EXPECT_EQ(run({text}, tools), want) << text;
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    std::string_view v(text);
    EXPECT_EQ(run({v.substr(0, cut), v.substr(cut)}, tools), want) << "cut at " << cut;
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(std::string_view(text).substr(i, 1));
  EXPECT_EQ(run(bytes, tools), want) << "byte by byte";
}

TEST(HarmonyParser, AnalysisThenFinal) {
  // What follows the prompt's "<|start|>assistant"; <|return|> ended generation unseen.
  expect_invariant(
      "<|channel|>analysis<|message|>User asks 2+2. Easy.<|end|>"
      "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.",
      {"User asks 2+2. Easy.", "2 + 2 = 4.", {}});
}

TEST(HarmonyParser, ReturnTokenInTextEndsTheMessage) {
  // With ignore_eos (or a decoder that renders control tokens) the end tokens appear.
  expect_invariant("<|channel|>final<|message|>Done.<|return|>", {"", "Done.", {}});
}

TEST(HarmonyParser, ToolCallWithRecipientAfterTheChannel) {
  expect_invariant(
      "<|channel|>analysis<|message|>Need weather.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
      "<|message|>{\"city\": \"Paris\", \"days\": [1, 2]}",
      {"Need weather.", "", {{"get_weather", R"({"city":"Paris","days":[1,2]})"}}});
}

TEST(HarmonyParser, ToolCallWithRecipientBeforeTheChannel) {
  // The form GPT-OSS's template writes for past calls, closed by <|call|>.
  expect_invariant(" to=functions.lookup<|channel|>commentary json<|message|>{\"q\":\"x\"}<|call|>",
                   {"", "", {{"lookup", R"({"q":"x"})"}}});
}

TEST(HarmonyParser, PreambleOnCommentaryIsContent) {
  expect_invariant(
      "<|channel|>commentary<|message|>Checking the weather.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather "
      "<|constrain|>json<|message|>{}",
      {"", "Checking the weather.", {{"get_weather", "{}"}}});
}

TEST(HarmonyParser, CallWithoutToolsOrWithBadJsonIsContent) {
  const std::string call =
      "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": 1}";
  expect_invariant(call, {"", "{\"a\": 1}", {}}, /*tools=*/false);
  expect_invariant("<|channel|>commentary to=functions.f<|message|>not json", {"", "not json", {}});
}

TEST(HarmonyParser, TextThatIsNotHarmonyPassesThrough) {
  expect_invariant("Hello <b>there</b>\nsecond line", {"", "Hello <b>there</b>\nsecond line", {}});
  expect_invariant("plain answer", {"", "plain answer", {}});
}

TEST(HarmonyParser, MissingEndBeforeStartStillSplits) {
  expect_invariant("<|channel|>analysis<|message|>a<|start|>assistant<|channel|>final<|message|>b",
                   {"a", "b", {}});
}

TEST(HarmonyParser, HeldBackTailThatNeverBecomesATagIsText) {
  expect_invariant("<|channel|>final<|message|>x <|en", {"", "x <|en", {}});
  HarmonyParser p(false);
  EXPECT_EQ(p.push("<|channel|>final<|message|>Hel").content, "Hel");  // streams at once
  EXPECT_EQ(p.push("lo <|").content, "lo ");
  EXPECT_EQ(p.push("x").content, "<|x");  // "<|x" is no tag's start: released
}

TEST(HarmonyHeader, Parts) {
  auto h = parse_harmony_header(
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json");
  EXPECT_EQ(h.role, "assistant");
  EXPECT_EQ(h.channel, "commentary");
  EXPECT_EQ(h.recipient, "functions.get_weather");
  EXPECT_EQ(h.constrain, "json");
  h = parse_harmony_header("functions.get_weather to=assistant<|channel|>commentary");
  EXPECT_EQ(h.role, "functions.get_weather");
  EXPECT_EQ(h.recipient, "assistant");
  EXPECT_EQ(h.channel, "commentary");
  h = parse_harmony_header("<|channel|>analysis");
  EXPECT_EQ(h.role, "");
  EXPECT_EQ(h.channel, "analysis");
}

TEST(ChoiceOutputHarmony, CallsGetIdsAndReasoningIsSplit) {
  const nlohmann::json tools =
      nlohmann::json::parse(R"([{"type":"function","function":{"name":"f"}}])");
  ChoiceOutput out(/*split_reasoning=*/true, /*reasoning_open=*/false, &tools, /*harmony=*/true);
  OutputDelta d = out.push(
      "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary ");
  EXPECT_EQ(d.reasoning, "think");
  d = out.push("to=functions.f <|constrain|>json<|message|>{\"x\":1}");
  EXPECT_TRUE(d.calls.empty());  // the body is complete only when the message ends
  d = out.finish();
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].call.name, "f");
  EXPECT_EQ(d.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(out.tool_calls_seen(), 1);
  // A <think> block means nothing to a harmony model: it is content.
  ChoiceOutput plain(true, false, nullptr, true);
  EXPECT_EQ(plain.push("<|channel|>final<|message|><think>x</think>").content, "<think>x</think>");
}

// The prompt side: the server knows a harmony model by its vocabulary, passes the
// request's reasoning_effort to the template and an assistant turn's reasoning_content
// back as the `thinking` a harmony template reads.
TEST(ChatPromptHarmony, DetectedFromTheVocabularyAndFedTheRequest) {
  auto v = make_synthetic_harmony_vocab(1200, 5);
  ASSERT_TRUE(v.ok());
  auto tok = Tokenizer::from_vocab(std::move(*v));
  ASSERT_TRUE(tok.ok());
  tok->set_chat_template(harmony_chat_template());
  auto prompt = ChatPrompt::create(*tok, "");
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  const nlohmann::json body = nlohmann::json::parse(R"({"model": "m", "reasoning_effort": "high",
    "tools": [{"type": "function", "function": {"name": "get_weather"}}],
    "messages": [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "reasoning_content": "Need the tool.",
       "tool_calls": [{"id": "call_1", "type": "function",
                       "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]})");
  ServingLimits limits;
  limits.model_names = {"m"};
  limits.max_model_len = 4096;
  ChatRequest req;
  ASSERT_FALSE(parse_chat_request(body, limits, req).has_value());
  ChatPrompt::Rendered out;
  ASSERT_FALSE(prompt->render(req, out).has_value());
  EXPECT_TRUE(out.harmony);
  EXPECT_FALSE(out.reasoning_open);
  EXPECT_NE(out.text.find("Reasoning: high\n"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>"),
            std::string::npos)
      << out.text;
  EXPECT_NE(
      out.text.find(
          "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>"),
      std::string::npos)
      << out.text;
  EXPECT_TRUE(out.text.ends_with(
      "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>21 "
      "C<|end|><|start|>assistant"))
      << out.text;
  // chat_template_kwargs wins over the top-level field.
  ChatRequest kw;
  nlohmann::json b2 = body;
  b2["chat_template_kwargs"] = {{"reasoning_effort", "low"}};
  ASSERT_FALSE(parse_chat_request(b2, limits, kw).has_value());
  ASSERT_FALSE(prompt->render(kw, out).has_value());
  EXPECT_NE(out.text.find("Reasoning: low\n"), std::string::npos);
  // A vocabulary without the harmony tokens is not parsed by channel.
  auto plain_vocab = make_synthetic_vocab(600, 1);
  ASSERT_TRUE(plain_vocab.ok());
  auto plain = Tokenizer::from_vocab(std::move(*plain_vocab));
  ASSERT_TRUE(plain.ok());
  auto plain_prompt = ChatPrompt::create(*plain, "");
  ASSERT_TRUE(plain_prompt.ok());
  ASSERT_FALSE(plain_prompt->render(req, out).has_value());
  EXPECT_FALSE(out.harmony);
}

}  // namespace
}  // namespace edge::server
