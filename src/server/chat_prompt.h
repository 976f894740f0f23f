// Chat messages -> prompt token ids: the chat template (the model's, a file's, or a
// ChatML fallback for models without one) rendered with messages, tools and
// chat_template_kwargs, then tokenised with BOS added only if the template did not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "tokenizer/chat_template.h"

namespace edge::server {

// ChatML ("<|im_start|>role\ncontent<|im_end|>\n"), for models that carry no template.
extern const char* const kFallbackChatTemplate;

class ChatPrompt {
 public:
  // template_source: empty means the tokenizer's own, else the fallback.
  static Expected<ChatPrompt> create(const Tokenizer& tok, const std::string& template_source);

  struct Rendered {
    std::string text;
    std::vector<int32_t> ids;
    bool reasoning_open = false;  // the prompt ends inside <think>
    bool harmony = false;         // the model speaks harmony: parse its output by channel
  };
  // A template error (raise_exception, bad message shapes) is the client's: 400.
  std::optional<ApiError> render(const ChatRequest& req, Rendered& out) const;
  const std::string& source() const { return template_.source(); }

 private:
  ChatPrompt(const Tokenizer& tok, ChatTemplate t);
  const Tokenizer* tok_;
  bool harmony_;
  ChatTemplate template_;
};

// Prompt ids with BOS added when the vocabulary wants one and the text did not start
// with it (templates usually write "{{ bos_token }}" themselves).
std::vector<int32_t> tokenize_prompt(const Tokenizer& tok, const std::string& text);

}  // namespace edge::server
