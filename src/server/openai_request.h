// Parsing and validating OpenAI request bodies (chat completions, completions) into what
// the engine needs. Every bad field is refused with a 400 naming the field; nothing here
// throws (JSON parse errors are caught).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "edge/engine.h"
#include "runtime/request_rules.h"
#include "server/api_error.h"
#include "server/media_parts.h"
#include "server/structured_output.h"

namespace edge::server {

struct ServingLimits {
  // The served model ids (--served-model-name): the first is reported in responses, a
  // request may name any of them (another: 404). Empty: any name is accepted.
  std::vector<std::string> model_names;
  int64_t max_model_len = 4096; // prompt + generated tokens per sequence
  int32_t max_n = 16;           // choices per request
  int32_t max_logprobs = kMaxTopLogprobs;  // alternatives per token
  int32_t max_stops = 16;

  bool serves(const std::string& name) const;
  const std::string& reported_model_name() const;  // "" when model_names is empty
};

// Fields shared by both endpoints.
struct CommonRequest {
  bool stream = false;
  bool include_usage = false;            // stream_options.include_usage
  int32_t n = 1;
  std::optional<int64_t> max_tokens;     // max_tokens / max_completion_tokens
  std::optional<uint64_t> seed;
  RequestParams params;                  // sampling, stop strings, logprobs, ignore_eos
  // response_format / grammar (structured_output.h); once compiled (attach_constraint), each
  // choice gets its own guide over them.
  OutputConstraint constraint;
  std::shared_ptr<const grammar::Grammar> grammar;
  std::shared_ptr<const grammar::TokenTrie> trie;
  std::shared_ptr<grammar::MaskCache> masks;
};

struct ChatRequest {
  CommonRequest common;
  nlohmann::json messages;     // normalized: content is a string ("" for null), tool-call
                               // arguments are objects (what chat templates expect)
  nlohmann::json tools;        // null when none (or tool_choice "none")
  nlohmann::json template_kwargs = nlohmann::json::object();
  bool parse_tool_calls = false;
  // tool_choice "required" (any tool) or a named function: the output is held to a call
  // (tool_grammar.h); parallel_tool_calls allows more than one.
  bool tool_required = false;
  std::string forced_tool;  // the named function ("" for any)
  bool parallel_tool_calls = true;
  bool logprobs = false;       // chat shape of logprobs (content[].top_logprobs)
  bool return_tokens = false;  // each stream chunk's choice also carries its token ids (as completions)
  std::vector<MediaInput> media;  // image/audio parts in order; kMediaMarker in the text
};

struct CompletionRequest {
  CommonRequest common;
  bool prompt_is_ids = false;
  bool return_tokens = false;  // llama.cpp's extension: each choice also carries its token ids
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
};

// The body as a JSON object (400 if it is not one).
std::optional<ApiError> parse_json_object(const std::string& body, nlohmann::json& out);

std::optional<ApiError> parse_chat_request(const nlohmann::json& body, const ServingLimits& limits,
                                           ChatRequest& out);
std::optional<ApiError> parse_completion_request(const nlohmann::json& body, const ServingLimits& limits,
                                                 CompletionRequest& out);

// After tokenising: refuses a prompt that does not leave room in the context and resolves
// max_tokens (default: the rest of the context). `prompt_field` names the field in errors.
std::optional<ApiError> fit_to_context(size_t prompt_tokens, const ServingLimits& limits,
                                       const char* prompt_field, CommonRequest& req);

// Sampling parameters for choice `index` of a request: with a seed, choice i uses seed + i
// (so n > 1 gives different choices and a repeated request the same ones).
RequestParams params_for_choice(const CommonRequest& req, int32_t index);

}  // namespace edge::server
