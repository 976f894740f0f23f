// Forced tool calls: the grammar for tool_choice "required" / a named function matches the
// calls the parser reads (Hermes and GLM-4.5 forms) and nothing else; random walks under its
// guide always give calls the parser turns into a function of the request with arguments
// holding every required parameter, one call without parallel_tool_calls, the named one
// when one is named.
#include "server/tool_grammar.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "convert/synthetic_vocab.h"
#include "runtime/grammar/grammar_guide.h"
#include "runtime/grammar/match.h"
#include "server/harmony.h"
#include "server/tool_calls.h"

namespace edge::server {
namespace {

using ojson = nlohmann::ordered_json;

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"enum": ["c", "f"]}},
    "required": ["city", "days"]}}},
  {"type": "function", "function": {"name": "tap", "parameters": {"type": "object",
    "properties": {"id": {"type": "string", "maxLength": 12}}, "required": ["id"], "additionalProperties": false}}}
])");

grammar::Grammar compiled(const std::string& only, bool parallel, ToolFormat f) {
  auto text = tool_call_gbnf(kTools, only, parallel, f);
  EXPECT_TRUE(text.ok()) << text.status().to_string();
  auto g = grammar::compile_gbnf(text.ok() ? *text : "root ::= \"\"");
  EXPECT_TRUE(g.ok()) << g.status().to_string() << "\n" << (text.ok() ? *text : "");
  return g.ok() ? std::move(*g) : grammar::Grammar{};
}

TEST(ToolGrammar, HermesCallsMatchWhatTheParserReads) {
  const grammar::Grammar g = compiled("", true, ToolFormat::kHermes);
  const std::string one =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\":\"Oslo\",\"days\":2}}\n</tool_call>";
  const std::string two =
      one + "\n<tool_call>\n{\"name\": \"tap\", \"arguments\": {\"id\":\"ok\"}}\n</tool_call>";
  EXPECT_EQ(grammar::run(g, one), 1);
  EXPECT_EQ(grammar::run(g, two), 1);
  EXPECT_EQ(grammar::run(g, "Sure! " + one), -1);  // nothing before the call
  EXPECT_EQ(grammar::run(
                g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}"),
            -1);
  EXPECT_EQ(grammar::run(g, "<tool_call>\n{\"name\": \"delete_all\""), -1);
  EXPECT_EQ(grammar::run(compiled("", false, ToolFormat::kHermes), two), -1);  // one call only
  EXPECT_EQ(grammar::run(compiled("tap", true, ToolFormat::kHermes), one), -1);
  ToolCallParser p;
  ToolDelta d = p.push(two);
  ToolDelta end = p.finish();
  d.calls.insert(d.calls.end(), end.calls.begin(), end.calls.end());
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(d.calls[0].arguments)["days"], 2);
}

TEST(ToolGrammar, GlmCallsMatchWhatTheParserReads) {
  const grammar::Grammar g = compiled("", true, ToolFormat::kGlm);
  const std::string call =
      "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>New York</arg_value>\n"
      "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>";
  EXPECT_EQ(grammar::run(g, call), 1);
  EXPECT_EQ(grammar::run(g, "<tool_call>get_weather\n<arg_key>days</arg_key>"),
            -1);  // city first, required
  nlohmann::json tools = nlohmann::json::parse(kTools.dump());
  ToolCallParser p(tools);
  ToolDelta d = p.push(call);
  ToolDelta end = p.finish();
  d.calls.insert(d.calls.end(), end.calls.begin(), end.calls.end());
  ASSERT_EQ(d.calls.size(), 1u);
  const nlohmann::json args = nlohmann::json::parse(d.calls[0].arguments);
  EXPECT_EQ(args["city"], "New York");
  EXPECT_EQ(args["days"], 3);
}

TEST(ToolGrammar, FormatFollowsTheTemplate) {
  EXPECT_EQ(tool_format_of("{% for k, v in args %}<arg_key>{{ k }}</arg_key>"), ToolFormat::kGlm);
  EXPECT_EQ(tool_format_of("<tool_call>\n{{ tool_call | tojson }}\n</tool_call>"),
            ToolFormat::kHermes);
}

// Any allowed token at every step: every answer is well-formed calls of the request's tools.
TEST(ToolGrammar, RandomWalksAlwaysGiveValidCalls) {
  auto vocab = make_synthetic_vocab(2000, 3);
  ASSERT_TRUE(vocab.ok());
  auto tok = Tokenizer::from_vocab(std::move(*vocab));
  ASSERT_TRUE(tok.ok());
  auto trie = std::make_shared<const grammar::TokenTrie>(*tok);
  const nlohmann::json tools = nlohmann::json::parse(kTools.dump());
  std::mt19937 rng(5);
  struct Case {
    std::string only;
    bool parallel;
    ToolFormat format;
  };
  for (const Case& c :
       {Case{"", true, ToolFormat::kHermes}, Case{"tap", false, ToolFormat::kHermes},
        Case{"", false, ToolFormat::kGlm}}) {
    auto g = std::make_shared<const grammar::Grammar>(compiled(c.only, c.parallel, c.format));
    for (int walk = 0; walk < 15; ++walk) {
      grammar::GrammarGuide guide(g, trie, 200);
      std::vector<int32_t> out;
      while (out.size() < 200) {
        auto allowed = guide.allowed(out);
        const int32_t id =
            allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        if (tok->is_eog(id)) break;
        out.push_back(id);
      }
      const std::string text = tok->decode(out);
      ToolCallParser p(tools);
      ToolDelta d = p.push(text);
      ToolDelta end = p.finish();
      d.calls.insert(d.calls.end(), end.calls.begin(), end.calls.end());
      EXPECT_EQ(d.content + end.content, "") << text;
      ASSERT_FALSE(d.calls.empty()) << text;
      if (!c.parallel) {
        EXPECT_EQ(d.calls.size(), 1u) << text;
      }
      for (const ParsedToolCall& call : d.calls) {
        if (!c.only.empty()) {
          EXPECT_EQ(call.name, c.only);
        }
        const nlohmann::json args = nlohmann::json::parse(call.arguments, nullptr, false);
        ASSERT_TRUE(args.is_object()) << text;
        if (call.name == "get_weather") {
          EXPECT_TRUE(args.contains("city") && args.contains("days") &&
                      args["days"].is_number_integer())
              << text;
        } else {
          EXPECT_EQ(call.name, "tap");
          ASSERT_TRUE(args["id"].is_string()) << text;
          size_t chars = 0;  // maxLength counts code points
          for (unsigned char b : args["id"].get<std::string>()) chars += (b & 0xC0) != 0x80;
          EXPECT_LE(chars, 12u) << text;
        }
      }
    }
  }
}

// Harmony (GPT-OSS): the reply starts in the prompt (the header up to the choice) and random
// walks under the guide, over a trie where <|constrain|> and <|message|> have their text,
// always end as one call the harmony parser reads, with valid arguments.
TEST(ToolGrammar, HarmonyRandomWalksAlwaysGiveOneValidCall) {
  auto vocab = make_synthetic_harmony_vocab(1500, 4);
  ASSERT_TRUE(vocab.ok());
  auto tok = Tokenizer::from_vocab(std::move(*vocab));
  ASSERT_TRUE(tok.ok());
  std::vector<int32_t> header;
  for (const char* t : {"<|constrain|>", "<|message|>"}) header.push_back(tok->vocab().find(t));
  ASSERT_GE(header[0], 0);
  auto trie = std::make_shared<const grammar::TokenTrie>(*tok, header);
  std::mt19937 rng(9);
  for (const std::string only : {"", "tap"}) {
    auto call = harmony_call_gbnf(kTools, only);
    ASSERT_TRUE(call.ok()) << call.status().to_string();
    EXPECT_EQ(call->prefix, only.empty() ? "<|channel|>commentary to=functions."
                                         : "<|channel|>commentary to=functions.tap "
                                           "<|constrain|>json<|message|>");
    auto g = grammar::compile_gbnf(call->gbnf);
    ASSERT_TRUE(g.ok()) << g.status().to_string() << "\n" << call->gbnf;
    auto gp = std::make_shared<const grammar::Grammar>(std::move(*g));
    std::set<std::string> names;
    for (int walk = 0; walk < 20; ++walk) {
      grammar::GrammarGuide guide(gp, trie, 150);
      std::vector<int32_t> out;
      while (out.size() < 150) {
        auto allowed = guide.allowed(out);
        const int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        if (tok->is_eog(id)) break;
        out.push_back(id);
      }
      const std::string text = call->prefix + tok->decode(out, /*special=*/true);
      HarmonyParser parser(/*with_tools=*/true);
      HarmonyDelta d = parser.push(text);
      HarmonyDelta end = parser.finish();
      d.calls.insert(d.calls.end(), end.calls.begin(), end.calls.end());
      EXPECT_EQ(d.content + end.content + d.reasoning + end.reasoning, "") << text;
      ASSERT_EQ(d.calls.size(), 1u) << text;
      const nlohmann::json args = nlohmann::json::parse(d.calls[0].arguments, nullptr, false);
      ASSERT_TRUE(args.is_object()) << text;
      names.insert(d.calls[0].name);
      if (d.calls[0].name == "get_weather") {
        EXPECT_TRUE(args.contains("city") && args["days"].is_number_integer()) << text;
      } else {
        EXPECT_EQ(d.calls[0].name, "tap");
        EXPECT_TRUE(args["id"].is_string()) << text;
      }
    }
    if (!only.empty()) EXPECT_EQ(names, std::set<std::string>{only});
  }
  EXPECT_FALSE(harmony_call_gbnf(kTools, "delete_all").ok());
}

}  // namespace
}  // namespace edge::server
