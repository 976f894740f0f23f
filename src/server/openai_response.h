// Building OpenAI response objects: chat.completion, text_completion, their streaming
// chunks, usage and logprobs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edge/engine.h"
#include "server/choice_output.h"

namespace edge::server {

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  // Speculative decoding: drafts the model took and refused (OpenAI's prediction tokens).
  int64_t accepted_prediction_tokens = 0, rejected_prediction_tokens = 0;
};

// What identifies one response: every chunk of a stream carries the same id and created.
struct ResponseMeta {
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

// A finished choice of a non-streaming response.
struct ChoiceResult {
  std::string content, reasoning;
  std::vector<ToolCallOut> calls;
  std::vector<TokenLogprob> logprobs;
  std::vector<int32_t> tokens;
  std::string finish_reason;
};

// JSON text safe for any bytes (invalid UTF-8 becomes U+FFFD instead of throwing).
std::string dump_json(const nlohmann::json& j);
int64_t unix_seconds();

nlohmann::json usage_json(const Usage& u);
// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}.
nlohmann::json chat_logprobs_json(const std::vector<TokenLogprob>& lps, const Tokenizer* tok);
// Completions logprobs: {tokens, token_logprobs, top_logprobs: [{tok: lp}], text_offset}.
nlohmann::json completion_logprobs_json(const std::vector<TokenLogprob>& lps, const Tokenizer* tok,
                                        int64_t text_offset);
nlohmann::json tool_calls_json(const std::vector<ToolCallOut>& calls, size_t first_index,
                               bool streaming);

nlohmann::json chat_completion_json(const ResponseMeta& m, const std::vector<ChoiceResult>& choices,
                                    const Usage& u, bool with_logprobs, const Tokenizer* tok);
nlohmann::json text_completion_json(const ResponseMeta& m, const std::vector<ChoiceResult>& choices,
                                    const Usage& u, bool with_logprobs, const Tokenizer* tok);

// One streaming chunk for one choice. `delta` is {role?, content?, reasoning_content?,
// tool_calls?}; finish_reason null until the last chunk of that choice.
nlohmann::json chat_chunk_json(const ResponseMeta& m, int index, nlohmann::json delta,
                               const nlohmann::json& logprobs, const std::string& finish_reason);
nlohmann::json text_chunk_json(const ResponseMeta& m, int index, const std::string& text,
                               const nlohmann::json& logprobs, const std::string& finish_reason);
// The final usage-only chunk of stream_options.include_usage (choices: []).
nlohmann::json usage_chunk_json(const ResponseMeta& m, const char* object, const Usage& u);

}  // namespace edge::server
