// libFuzzer target: an OpenAI request body parsed as the server does, both as a chat
// completion and as a completion request, then fitted to the context and split into
// per-choice sampling parameters. Every input must give a request or an ApiError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edge::server;
  nlohmann::json body;
  if (parse_json_object(std::string(reinterpret_cast<const char*>(data), size), body)) return 0;
  ServingLimits limits;  // serves any model name
  limits.max_model_len = 64;
  ChatRequest chat;
  if (!parse_chat_request(body, limits, chat) &&
      !fit_to_context(size % 80, limits, "messages", chat.common))
    for (int32_t i = 0; i < chat.common.n; ++i) (void)params_for_choice(chat.common, i);
  CompletionRequest completion;
  if (!parse_completion_request(body, limits, completion) &&
      !fit_to_context(completion.prompt_ids.size() + completion.prompt_text.size(), limits,
                      "prompt", completion.common))
    for (int32_t i = 0; i < completion.common.n; ++i) (void)params_for_choice(completion.common, i);
  return 0;
}
