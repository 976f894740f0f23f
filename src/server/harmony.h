// Harmony output (GPT-OSS) mapped to the API, incrementally. After the prompt's
// "<|start|>assistant" a reply is one or more messages, each a header, <|message|>, a body
// and an end token:
//   <|channel|>analysis<|message|>Let me think.<|end|>
//   <|start|>assistant<|channel|>final<|message|>It is 4.            (<|return|> ends it)
//   <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json
//       <|message|>{"city":"Paris"}                                    (<|call|> ends it)
// The "analysis" channel goes to reasoning, "final" (and "commentary" without a recipient,
// the model's visible preamble) to content, and a message with a recipient "functions.NAME"
// (in the header before or after the channel) to a tool call whose arguments are its JSON
// body. <|return|> and <|call|> end generation (tokenizer/harmony.h), so they usually never
// reach this parser: whatever message is open at finish() ends there. Pieces may cut a tag
// anywhere; text that could be the start of one is held back until the next piece.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace edge::server {

struct HarmonyDelta {
  std::string reasoning, content;
  std::vector<ParsedToolCall> calls;
};

class HarmonyParser {
 public:
  // with_tools: the request declared tools, so a message to "functions.NAME" is a call.
  // Without tools (or when its body is not a JSON object) the message's text is content.
  explicit HarmonyParser(bool with_tools);
  HarmonyDelta push(std::string_view text);
  HarmonyDelta finish();

 private:
  enum class Route { kReasoning, kContent, kCall };
  enum class State { kHeader, kBody, kPlain };
  bool step(HarmonyDelta& out);  // consumes what it can of pending_; false when it must wait
  bool step_header(HarmonyDelta& out);
  bool step_body(HarmonyDelta& out);
  void open_message(std::string_view header);
  void emit_body(std::string_view text, HarmonyDelta& out);
  void end_message(HarmonyDelta& out);

  bool with_tools_;
  State state_ = State::kHeader;
  Route route_ = Route::kContent;
  std::string recipient_;  // of the open message ("" = none)
  std::string body_;       // a call's body, parsed when the message ends
  std::string pending_;
};

// The parts of one header (the text between <|start|> and <|message|>, without them).
struct HarmonyHeader {
  std::string role, channel, recipient, constrain;
};
HarmonyHeader parse_harmony_header(std::string_view header);

}  // namespace edge::server
