// Constrained tool calls: tool_choice "required" or a named function holds the output to a
// call in the model family's format whose arguments match that tool's parameter schema, as
// GBNF for the structured-output machinery (structured_output.h):
//   Hermes / Qwen:  <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   GLM-4.5:        <tool_call>f\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>
// (the bodies tool_calls.h parses). With parallel_tool_calls one or more calls, one per line;
// otherwise exactly one.
//   Harmony (GPT-OSS): <|channel|>commentary to=functions.f <|constrain|>json<|message|>{...}
// then <|call|>, which ends generation: one call per reply (parallel_tool_calls changes
// nothing). The reply is started in the prompt up to where the choice begins (the whole
// header when one tool can be called); the grammar holds the rest, the header's special
// tokens matched by their text (GrammarCache's harmony trie gives them pieces).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace edge::server {

enum class ToolFormat { kHermes, kGlm };

// The format a chat template writes calls in: GLM-4.5's where it has <arg_key>, else Hermes.
ToolFormat tool_format_of(const std::string& chat_template);

// `tools`: the request's tools (OpenAI shape, properties in their written order); `only`: the
// named function ("" for any of them). Errors name the tool whose schema is refused.
Expected<std::string> tool_call_gbnf(const nlohmann::ordered_json& tools, const std::string& only,
                                     bool parallel, ToolFormat format);

struct HarmonyForcedCall {
  std::string prefix;  // appended to the prompt after "<|start|>assistant" (special tokens)
  std::string gbnf;    // what follows it: the arguments, or the name, header rest and arguments
};
Expected<HarmonyForcedCall> harmony_call_gbnf(const nlohmann::ordered_json& tools,
                                              const std::string& only);

}  // namespace edge::server
