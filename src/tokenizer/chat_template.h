// Chat templates: a Jinja engine covering what real Hugging Face chat templates use
// (statements: if/elif/else, for (with loop.*, else, filters on the iterable), set
// (including namespace() attributes), macro/call, raw, whitespace control {%- -%};
// expressions: literals, lists, dicts, attribute/item access, slicing, tests
// (defined, none, string, mapping, ...), filters (trim, tojson, length, items, ...),
// string methods (strip, split, startswith, ...), `in`, `~`, inline if/else, and
// raise_exception()).
//
// render() must produce byte-identical output to @huggingface/jinja for the templates
// shipped with Qwen3, Llama-3 and Gemma-3 (tests/tokenizer/chat_template_*_test.cpp).
// Like @huggingface/jinja's Template (and transformers' Python environment), trim_blocks and
// lstrip_blocks are ON. Deliberate differences, where we follow Python Jinja instead:
// strip/lstrip/rstrip(chars) honour chars, % takes the divisor's sign, iterating undefined
// or a string works, == compares lists/dicts by value; a few extra filters/tests exist
// (count, select/reject, map('filter'), divisibleby(n), list.append, ...).
// Key order: tojson prints objects in input order; nlohmann::json sorts keys, so pass
// nlohmann::ordered_json to render_variables() to keep a request's tool-schema order.
#pragma once

#include <nlohmann/json.hpp>
#include <memory>
#include <string>

#include "core/status.h"

namespace edge {

struct ChatTemplateInputs {
  nlohmann::json messages = nlohmann::json::array();  // [{role, content, tool_calls?, ...}]
  nlohmann::json tools;                               // null or [{type: function, function: {...}}]
  bool add_generation_prompt = true;
  // Extra variables (chat_template_kwargs), e.g. {"enable_thinking": false}.
  nlohmann::json extra = nlohmann::json::object();
  std::string bos_token, eos_token;
};

class ChatTemplate {
 public:
  // Parses the template source; a syntax error names the line and what was expected.
  static Expected<ChatTemplate> parse(const std::string& source);
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  // Errors: a runtime error in the template (raise_exception, bad types) with its message.
  Expected<std::string> render(const ChatTemplateInputs& inputs) const;
  const std::string& source() const;

  // The template variables render() uses: messages, tools, add_generation_prompt,
  // bos_token, eos_token, then every key of `extra` (which may override them).
  static nlohmann::ordered_json variables(const ChatTemplateInputs& inputs);
  // Renders with an explicit variable object. ordered_json keeps the caller's key order,
  // which `tojson` reproduces (nlohmann::json sorts keys; Python and JS keep insertion order).
  Expected<std::string> render_variables(const nlohmann::ordered_json& vars) const;
  Expected<std::string> render_variables(const nlohmann::json& vars) const;

 private:
  struct Impl;
  explicit ChatTemplate(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edge
