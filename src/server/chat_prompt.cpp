#include "server/chat_prompt.h"

#include "server/reasoning.h"
#include "tokenizer/harmony.h"

namespace edge::server {

const char* const kFallbackChatTemplate =
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

// Whether the output is harmony is decided from the model's vocabulary, not from its
// architecture name or its template: a model that has the harmony tokens was trained to
// answer in that format (and a template given on the command line does not change that).
ChatPrompt::ChatPrompt(const Tokenizer& tok, ChatTemplate t)
    : tok_(&tok), harmony_(is_harmony_vocab(tok.vocab())), template_(std::move(t)) {}

namespace {

// Harmony templates read an assistant turn's reasoning from `thinking`; OpenAI clients
// send it back as `reasoning_content` (what this server returns).
nlohmann::json harmony_messages(const nlohmann::json& messages) {
  nlohmann::json out = messages;
  for (auto& m : out)
    if (m.is_object() && m.value("role", "") == "assistant" && !m.contains("thinking") &&
        m.contains("reasoning_content") && m["reasoning_content"].is_string())
      m["thinking"] = m["reasoning_content"];
  return out;
}

}  // namespace

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
  in.messages = harmony_ ? harmony_messages(req.messages) : req.messages;
  in.tools = req.tools;
  in.add_generation_prompt = true;
  in.extra = req.template_kwargs;
  if (tok_->bos_id() >= 0) in.bos_token = tok_->token_text(tok_->bos_id());
  if (tok_->eos_id() >= 0) in.eos_token = tok_->token_text(tok_->eos_id());
  auto text = template_.render(in);
  if (!text) return ApiError::bad_request("chat template: " + text.status().message(), "messages", "template_error");
  out.text = std::move(*text);
  out.ids = tokenize_prompt(*tok_, out.text);
  out.reasoning_open = !harmony_ && prompt_opens_reasoning(out.text);
  out.harmony = harmony_;
  return std::nullopt;
}

}  // namespace edge::server
