#include "server/choice_output.h"

#include <random>

namespace edge::server {

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  return id;
}

ChoiceOutput::ChoiceOutput(bool split_reasoning, bool reasoning_open, const nlohmann::json* tools,
                           bool harmony, const std::string& harmony_prefix)
    : split_reasoning_(split_reasoning), reasoning_(reasoning_open) {
  if (harmony) {
    harmony_.emplace(tools != nullptr);
    (void)harmony_->push(harmony_prefix);  // a header: nothing to emit yet
  } else if (tools) {
    tools_.emplace(*tools);
  }
}

void ChoiceOutput::add_harmony(HarmonyDelta d, OutputDelta& out) {
  out.reasoning += d.reasoning;
  add_calls(ToolDelta{std::move(d.content), std::move(d.calls)}, out);
}

void ChoiceOutput::add_calls(ToolDelta d, OutputDelta& out) {
  out.content += d.content;
  for (auto& c : d.calls) {
    out.calls.push_back({random_id("call_"), std::move(c)});
    ++n_calls_;
  }
}

void ChoiceOutput::route(ReasoningDelta d, OutputDelta& out) {
  out.reasoning += d.reasoning;
  if (d.content.empty()) return;
  if (tools_) add_calls(tools_->push(d.content), out);
  else out.content += d.content;
}

OutputDelta ChoiceOutput::push(const std::string& text) {
  OutputDelta out;
  if (!split_reasoning_) {
    out.content = text;
    return out;
  }
  if (harmony_) {
    add_harmony(harmony_->push(text), out);
    return out;
  }
  route(reasoning_.push(text), out);
  return out;
}

OutputDelta ChoiceOutput::finish() {
  OutputDelta out;
  if (!split_reasoning_) return out;
  if (harmony_) {
    add_harmony(harmony_->finish(), out);
    return out;
  }
  route(reasoning_.finish(), out);
  if (tools_) add_calls(tools_->finish(), out);
  return out;
}

}  // namespace edge::server
