#include "server/chat_prompt.h"

#include "server/reasoning.h"

namespace edge::server {

const char* const kFallbackChatTemplate =
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

Expected<ChatPrompt> ChatPrompt::create(const Tokenizer& tok, const std::string& template_source) {
  std::string source = template_source;
  if (source.empty()) source = tok.chat_template();
  if (source.empty()) source = kFallbackChatTemplate;
  auto t = ChatTemplate::parse(source);
  if (!t) return t.status().with_context("chat template");
  return ChatPrompt(tok, std::move(*t));
}

std::vector<int32_t> tokenize_prompt(const Tokenizer& tok, const std::string& text) {
  std::vector<int32_t> ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
  if (tok.vocab().add_bos && tok.bos_id() >= 0 && (ids.empty() || ids.front() != tok.bos_id()))
    ids.insert(ids.begin(), tok.bos_id());
  return ids;
}

std::optional<ApiError> ChatPrompt::render(const ChatRequest& req, Rendered& out) const {
  ChatTemplateInputs in;
  in.messages = req.messages;
  in.tools = req.tools;
  in.add_generation_prompt = true;
  in.extra = req.template_kwargs;
  if (tok_->bos_id() >= 0) in.bos_token = tok_->token_text(tok_->bos_id());
  if (tok_->eos_id() >= 0) in.eos_token = tok_->token_text(tok_->eos_id());
  auto text = template_.render(in);
  if (!text) return ApiError::bad_request("chat template: " + text.status().message(), "messages", "template_error");
  out.text = std::move(*text);
  out.ids = tokenize_prompt(*tok_, out.text);
  out.reasoning_open = prompt_opens_reasoning(out.text);
  return std::nullopt;
}

}  // namespace edge::server
