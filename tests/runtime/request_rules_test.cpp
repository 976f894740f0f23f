// The request rules: each refuses exactly past its limit, and validate_request applies them
// in order (the first broken rule is the one reported).
#include "runtime/request_rules.h"

#include <gtest/gtest.h>

namespace edge {
namespace {

GenerateRequest request(std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.params.max_tokens = max_tokens;
  return r;
}

TEST(RequestRules, EachRuleRefusesJustPastItsLimit) {
  EXPECT_EQ(check_prompt_not_empty(0).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(check_prompt_not_empty(1).ok());

  const std::vector<int32_t> ids = {0, 9};
  EXPECT_TRUE(check_prompt_ids(ids, 10).ok());
  EXPECT_EQ(check_prompt_ids(ids, 9).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(check_prompt_ids(std::vector<int32_t>{-1}, 10).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(check_prompt_ids(std::vector<int32_t>{123456}, 0).ok());  // vocabulary unknown
  EXPECT_FALSE(check_prompt_ids(std::vector<int32_t>{-1}, 0).ok());     // never negative

  EXPECT_TRUE(check_prompt_fits(99, 100).ok());  // one token left to generate
  EXPECT_EQ(check_prompt_fits(100, 100).code(), StatusCode::kOutOfRange);

  EXPECT_TRUE(check_max_tokens(1, 100).ok());
  EXPECT_TRUE(check_max_tokens(100, 100).ok());
  EXPECT_EQ(check_max_tokens(0, 100).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(check_max_tokens(101, 100).code(), StatusCode::kInvalidArgument);

  EXPECT_TRUE(check_completion_fits(40, 60, 100).ok());
  EXPECT_EQ(check_completion_fits(40, 61, 100).code(), StatusCode::kOutOfRange);

  EXPECT_TRUE(check_top_logprobs(-1).ok());
  EXPECT_TRUE(check_top_logprobs(kMaxTopLogprobs).ok());
  EXPECT_EQ(check_top_logprobs(kMaxTopLogprobs + 1).code(), StatusCode::kInvalidArgument);
}

TEST(RequestRules, TextsNameTheNumbersAndTheField) {
  EXPECT_EQ(check_max_tokens(0, 100, "max_completion_tokens").message(),
            "max_completion_tokens must be between 1 and 100 (the context length), got 0");
  EXPECT_EQ(check_completion_fits(40, 61, 100).message(),
            "max_tokens is 61 but the prompt has 40 tokens and the context holds 100: at most 60 "
            "can be generated");
  const std::string prompt_text = check_prompt_fits(120, 100).message();
  EXPECT_NE(prompt_text.find("maximum context length is 100 tokens"), std::string::npos);
  EXPECT_NE(prompt_text.find("the prompt has 120 tokens"), std::string::npos);
  EXPECT_EQ(check_prompt_ids(std::vector<int32_t>{3, 12}, 10).message(),
            "prompt token id 12 is out of range (vocabulary size 10)");
}

TEST(RequestRules, ValidateRequestReportsTheFirstBrokenRule) {
  const RequestLimits limits{10, 100};
  EXPECT_TRUE(validate_request(request({1, 2, 3}, 97), limits).ok());
  EXPECT_EQ(validate_request(request({}, 0), limits).message(), "the prompt is empty");
  // An id out of range is reported before a max_tokens that is also wrong.
  EXPECT_EQ(validate_request(request({1, 10}, 0), limits).message(),
            check_prompt_ids(std::vector<int32_t>{10}, 10).message());
  EXPECT_EQ(validate_request(request({1}, 0), limits).message(),
            check_max_tokens(0, 100).message());
  EXPECT_EQ(validate_request(request({1, 2, 3}, 98), limits).message(),
            check_completion_fits(3, 98, 100).message());
  GenerateRequest many_logprobs = request({1}, 5);
  many_logprobs.params.logprobs = kMaxTopLogprobs + 1;
  EXPECT_EQ(validate_request(many_logprobs, limits).code(), StatusCode::kInvalidArgument);
  GenerateRequest bad_sampling = request({1}, 5);
  bad_sampling.params.sampling.temperature = -1.f;
  EXPECT_FALSE(validate_request(bad_sampling, limits).ok());
}

}  // namespace
}  // namespace edge
