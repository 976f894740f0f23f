// libFuzzer target: the Jinja chat-template engine. The input is a template source; when it
// parses, it is rendered over a fixed conversation (system, user, assistant with a tool
// call, tool result, user) with one tool, as the server does.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/chat_template.h"

namespace {

edge::ChatTemplateInputs make_inputs() {
  edge::ChatTemplateInputs in;
  in.messages = nlohmann::json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "", "reasoning_content": "Use the tool.",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
    {"role": "user", "content": [{"type": "text", "text": "Thanks! And <b>tomorrow</b>?"}]}
  ])");
  in.tools = nlohmann::json::parse(R"([{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}])");
  in.add_generation_prompt = true;
  in.extra = {{"enable_thinking", false}};
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  return in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const edge::ChatTemplateInputs inputs = make_inputs();
  auto t = edge::ChatTemplate::parse(std::string(reinterpret_cast<const char*>(data), size));
  if (!t.ok()) return 0;
  (void)t->render(inputs);
  return 0;
}
