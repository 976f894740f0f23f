// The rules a generation request must meet, one function and one error text per rule.
// Both engines (the in-process EngineImpl and the pipeline's GraphEngine) check every
// request with validate_request(); the HTTP layer applies the same rules earlier (at parse
// time, and once the prompt is tokenised) and only maps the Status to its OpenAI error
// (the param and a code such as "context_length_exceeded"), so a client sees one text per
// rule whichever layer caught it.
//
// Needs only core and fmt (and SamplingParams::validate, runtime/sampler.cpp): the fuzz
// build compiles it with the server's request parser.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/status.h"
#include "edge/engine.h"

namespace edge {

// The alternatives per token a request may ask for (RequestParams::logprobs).
inline constexpr int32_t kMaxTopLogprobs = 20;

// What a request is checked against.
struct RequestLimits {
  int64_t n_vocab = 0;        // prompt ids must lie in [0, n_vocab); 0: unknown, not checked
  int64_t max_model_len = 0;  // prompt and completion tokens together
};

// A prompt of no tokens (kInvalidArgument).
Status check_prompt_not_empty(int64_t n_prompt);
// Every id in [0, n_vocab) (kOutOfRange); only >= 0 when n_vocab <= 0 (unknown).
Status check_prompt_ids(std::span<const int32_t> ids, int64_t n_vocab);
// The prompt leaves room for at least one generated token (kOutOfRange).
Status check_prompt_fits(int64_t n_prompt, int64_t max_model_len);
// max_tokens on its own, before the prompt is known: 1 to the whole context
// (kInvalidArgument). `field` names it in the text (max_tokens, max_completion_tokens).
Status check_max_tokens(int64_t max_tokens, int64_t max_model_len,
                        std::string_view field = "max_tokens");
// The prompt plus max_tokens fit in the context (kOutOfRange).
Status check_completion_fits(int64_t n_prompt, int64_t max_tokens, int64_t max_model_len);
// logprobs: -1 (none) or 0..kMaxTopLogprobs alternatives (kInvalidArgument).
Status check_top_logprobs(int32_t logprobs);

// All of the above, in that order, then the sampling parameters. Media spans are the
// in-process engine's own check (runtime/media_splice.h).
Status validate_request(const GenerateRequest& req, const RequestLimits& limits);

}  // namespace edge
