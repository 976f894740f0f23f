// The request rules and their error texts (request_rules.h).
#include "runtime/request_rules.h"

#include <fmt/format.h>

#include "runtime/sampler.h"

namespace edge {

Status check_prompt_not_empty(int64_t n_prompt) {
  if (n_prompt <= 0) return Status::invalid_argument("the prompt is empty");
  return {};
}

Status check_prompt_ids(std::span<const int32_t> ids, int64_t n_vocab) {
  for (int32_t id : ids)
    if (id < 0 || (n_vocab > 0 && id >= n_vocab))
      return Status::out_of_range(
          fmt::format("prompt token id {} is out of range (vocabulary size {})", id, n_vocab));
  return {};
}

Status check_prompt_fits(int64_t n_prompt, int64_t max_model_len) {
  if (n_prompt < max_model_len) return {};
  return Status::out_of_range(fmt::format(
      "this model's maximum context length is {} tokens (prompt and completion together), but "
      "the prompt has {} tokens",
      max_model_len, n_prompt));
}

Status check_max_tokens(int64_t max_tokens, int64_t max_model_len, std::string_view field) {
  if (max_tokens >= 1 && max_tokens <= max_model_len) return {};
  return Status::invalid_argument(
      fmt::format("{} must be between 1 and {} (the context length), got {}", field, max_model_len,
                  max_tokens));
}

Status check_completion_fits(int64_t n_prompt, int64_t max_tokens, int64_t max_model_len) {
  if (n_prompt + max_tokens <= max_model_len) return {};
  return Status::out_of_range(fmt::format(
      "max_tokens is {} but the prompt has {} tokens and the context holds {}: at most {} can "
      "be generated",
      max_tokens, n_prompt, max_model_len, max_model_len - n_prompt));
}

Status check_top_logprobs(int32_t logprobs) {
  if (logprobs <= kMaxTopLogprobs) return {};
  return Status::invalid_argument(
      fmt::format("top logprobs must be at most {} (got {})", kMaxTopLogprobs, logprobs));
}

Status validate_request(const GenerateRequest& req, const RequestLimits& limits) {
  const auto n_prompt = static_cast<int64_t>(req.prompt.size());
  const RequestParams& p = req.params;
  RETURN_IF_ERROR(check_prompt_not_empty(n_prompt));
  RETURN_IF_ERROR(check_prompt_ids(req.prompt, limits.n_vocab));
  RETURN_IF_ERROR(check_prompt_fits(n_prompt, limits.max_model_len));
  RETURN_IF_ERROR(check_max_tokens(p.max_tokens, limits.max_model_len));
  RETURN_IF_ERROR(check_completion_fits(n_prompt, p.max_tokens, limits.max_model_len));
  RETURN_IF_ERROR(check_top_logprobs(p.logprobs));
  return p.sampling.validate();
}

}  // namespace edge
