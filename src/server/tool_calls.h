// Tool calls in model output, parsed incrementally (pieces may cut a tag anywhere):
//   Hermes / Qwen:  <tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>
//   GLM-4.5:        <tool_call>f<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>
// Text outside the tags is content. Whitespace right before a call and trailing whitespace
// after the last call are dropped (they only separate the tags). A body that parses as
// neither format is given back as content, tags included, so nothing is lost.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace edge::server {

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // a JSON object, as text
  bool operator==(const ParsedToolCall&) const = default;
};

struct ToolDelta {
  std::string content;
  std::vector<ParsedToolCall> calls;
};

class ToolCallParser {
 public:
  // tools: the request's `tools` (OpenAI shape), used for GLM argument types (a string
  // parameter stays a string even when its text looks like a number).
  explicit ToolCallParser(nlohmann::json tools = nullptr);
  ToolDelta push(std::string_view text);
  // End of output: an unclosed call whose body is complete (the model stopped right
  // before "</tool_call>") is still a call; anything else held back becomes content.
  ToolDelta finish();
  bool saw_call() const { return calls_seen_ > 0; }

 private:
  void emit_text(std::string_view text, ToolDelta& out);
  void end_call(std::string_view body, bool closed, ToolDelta& out);

  nlohmann::json tools_;
  bool in_call_ = false;
  int calls_seen_ = 0;
  std::string pending_;
  std::string held_space_;  // trailing whitespace of the content so far, not yet emitted
};

// One call body (the text between the tags) in either format; false if it is neither.
bool parse_tool_call_body(std::string_view body, const nlohmann::json& tools, ParsedToolCall& out);

}  // namespace edge::server
