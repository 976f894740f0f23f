// One choice's generated text on its way to the API: the reasoning splitter, then (when
// the request has tools) the tool-call parser; or, for a model that speaks harmony, the
// harmony parser, which does both from the message channels. The same object serves
// streaming (push deltas as they come) and non-streaming (accumulate everything, then
// finish).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/harmony.h"
#include "server/reasoning.h"
#include "server/tool_calls.h"

namespace edge::server {

struct ToolCallOut {
  std::string id;  // "call_..." assigned when the call is complete
  ParsedToolCall call;
};

struct OutputDelta {
  std::string content, reasoning;
  std::vector<ToolCallOut> calls;
  bool empty() const { return content.empty() && reasoning.empty() && calls.empty(); }
};

class ChoiceOutput {
 public:
  // split_reasoning: chat output (completions are raw text). reasoning_open: the prompt
  // opened a <think> block. tools: parse tool calls with these tools (null: do not).
  // harmony: the model speaks harmony (tokenizer/harmony.h); its channels decide.
  // harmony_prefix: harmony text of the reply already in the prompt (read, not emitted).
  ChoiceOutput(bool split_reasoning, bool reasoning_open, const nlohmann::json* tools,
               bool harmony = false, const std::string& harmony_prefix = "");
  OutputDelta push(const std::string& text);
  OutputDelta finish();
  int tool_calls_seen() const { return n_calls_; }

 private:
  void route(ReasoningDelta d, OutputDelta& out);
  void add_calls(ToolDelta d, OutputDelta& out);
  void add_harmony(HarmonyDelta d, OutputDelta& out);

  bool split_reasoning_;
  ReasoningSplitter reasoning_;
  std::optional<ToolCallParser> tools_;
  std::optional<HarmonyParser> harmony_;
  int n_calls_ = 0;
};

// "prefix" + 24 random hex digits.
std::string random_id(const char* prefix);

}  // namespace edge::server
