// Request validation: every wrong type / range is a 400 naming the field; valid bodies map
// to the engine's parameters.
#include <gtest/gtest.h>

#include "server/json_depth.h"
#include "server/openai_request.h"

namespace edge::server {
namespace {

using nlohmann::json;

ServingLimits limits() {
  ServingLimits l;
  l.model_names = {"m", "m-alias"};
  l.max_model_len = 100;
  return l;
}

std::optional<ApiError> chat(const std::string& body, ChatRequest* out = nullptr) {
  json j;
  if (auto e = parse_json_object(body, j)) return e;
  ChatRequest r;
  auto e = parse_chat_request(j, limits(), r);
  if (out) *out = r;
  return e;
}

std::optional<ApiError> completion(const std::string& body, CompletionRequest* out = nullptr) {
  json j;
  if (auto e = parse_json_object(body, j)) return e;
  CompletionRequest r;
  auto e = parse_completion_request(j, limits(), r);
  if (out) *out = r;
  return e;
}

const char* kMsgs = R"("messages":[{"role":"user","content":"hi"}])";

std::string with(const std::string& extra) { return std::string("{") + kMsgs + (extra.empty() ? "" : "," + extra) + "}"; }

TEST(RequestValidation, MalformedJson) {
  auto e = chat("{\"messages\": [");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->code, "invalid_json");
  EXPECT_EQ(chat("[1,2]")->code, "invalid_json");
  EXPECT_EQ(chat("")->code, "invalid_json");
}

TEST(RequestValidation, WrongTypesNameTheField) {
  struct Case {
    std::string extra, param;
  } cases[] = {
      {R"("temperature":"hot")", "temperature"}, {R"("max_tokens":1.5)", "max_tokens"},
      {R"("stream":"yes")", "stream"},           {R"("stop":[1])", "stop"},
      {R"("n":0)", "n"},                         {R"("top_p":1.5)", "top_p"},
      {R"("seed":"x")", "seed"},                 {R"("tools":{})", "tools"},
      {R"("logprobs":1)", "logprobs"},           {R"("top_logprobs":3)", "top_logprobs"},
      {R"("tool_choice":"sometimes")", "tool_choice"}, {R"("stream_options":{"include_usage":1})", "include_usage"},
      {R"("max_tokens":0)", "max_tokens"},       {R"("chat_template_kwargs":[1])", "chat_template_kwargs"},
      {R"("logit_bias":{"1":5})", "logit_bias"}, {R"("top_p":0)", "top_p"},
  };
  for (const auto& c : cases) {
    auto e = chat(with(c.extra));
    ASSERT_TRUE(e) << c.extra;
    EXPECT_EQ(e->http_status, 400) << c.extra;
    EXPECT_EQ(e->param, c.param) << c.extra << ": " << e->message;
    EXPECT_EQ(e->type, "invalid_request_error");
  }
}

TEST(RequestValidation, Messages) {
  EXPECT_EQ(chat("{}")->param, "messages");
  EXPECT_EQ(chat(R"({"messages":[]})")->param, "messages");
  EXPECT_EQ(chat(R"({"messages":[{"content":"x"}]})")->param, "messages[0]");
  EXPECT_EQ(chat(R"({"messages":[{"role":"wizard","content":"x"}]})")->param, "messages[0].role");
  // Media parts are parsed (server/media_request.h): the error names the part's field.
  EXPECT_EQ(chat(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})")->param,
            "messages[0].content[0].image_url.url");
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
      {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"42"}]})",
                    &r));
  EXPECT_EQ(r.messages[0]["content"], "ab");
  EXPECT_EQ(r.messages[1]["content"], "");
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"], json({{"x", 1}}));
}

// Found by fuzz_openai_request (tests/fuzz/regressions/openai_request/): a "type" that is
// not a string made nlohmann's value() throw out of the parser (a 500, and an abort in the
// fuzzer) instead of a 400 naming the field.
TEST(RequestValidation, FieldsOfTheWrongTypeInsidePartsAndToolsAre400) {
  auto e = chat(R"({"messages":[{"role":"user","content":[{"type":{"name":"x"},"text":"a"}]}]})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages[0].content[0]");
  e = chat(with(R"("response_format":{"type":7})"));
  ASSERT_TRUE(e);
  e = chat(with(R"("tools":[{"type":["function"],"function":{"name":"f"}}])"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
}

TEST(RequestValidation, UnknownModelIs404) {
  auto e = chat(with(R"("model":"other")"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 404);
  EXPECT_EQ(e->code, "model_not_found");
  EXPECT_FALSE(chat(with(R"("model":"m")")));
  EXPECT_FALSE(chat(with(R"("model":"m-alias")")));  // any served name is accepted
}

TEST(RequestValidation, DeeplyNestedBodyIs400NotAStackOverflow) {
  // 4 MiB of "[" (and of {"a":): nlohmann's recursive parser would overflow the stack.
  for (const std::string unit : {"[", "{\"a\":"}) {
    std::string body = "{\"messages\":";
    while (body.size() < (4u << 20)) body += unit;
    auto e = chat(body);
    ASSERT_TRUE(e) << unit;
    EXPECT_EQ(e->http_status, 400);
    EXPECT_EQ(e->code, "json_too_deep");
    EXPECT_NE(e->message.find("deeper than"), std::string::npos) << e->message;
  }
  // Balanced, so that nlohmann would parse it: then its recursive copy, conversion and
  // dump() would overflow the stack (they did before the limit).
  const size_t levels = 1u << 20;
  auto e = chat("{\"messages\":" + std::string(levels, '[') + std::string(levels, ']') + "}");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "json_too_deep");
  std::string objects = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template_kwargs\":";
  for (size_t i = 0; i < levels / 2; ++i) objects += "{\"a\":";
  objects += "1" + std::string(levels / 2 + 1, '}');
  e = chat(objects);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "json_too_deep");
  // At the limit a body still parses; brackets inside strings (and escaped quotes) do not count.
  std::string ok = "{\"messages\":[{\"role\":\"user\",\"content\":\"\\\"[[[[" + std::string(500, '[') + "\"}],";
  ok += "\"chat_template_kwargs\":{\"x\":" + std::string(kMaxJsonDepth - 2, '[') + std::string(kMaxJsonDepth - 2, ']') +
        "}}";
  EXPECT_FALSE(chat(ok)) << chat(ok)->message;
  EXPECT_FALSE(json_nesting_exceeds(std::string(kMaxJsonDepth, '[')));
  EXPECT_TRUE(json_nesting_exceeds(std::string(kMaxJsonDepth + 1, '[')));
  EXPECT_FALSE(json_nesting_exceeds("[\"]]]]\\\"[[[[\"]"));
}

TEST(RequestValidation, SeedOutOfRangeIs400NamingSeed) {
  // Each of these used to wrap (2^63 as a float or as an unsigned literal) or is not an
  // integer; all are refused naming `seed`.
  for (const char* seed :
       {"1e30", "-1e30", "9.223372036854775808e18", "9223372036854775808", "18446744073709551615", "1.5", "-9.3e18"}) {
    auto e = chat(with(std::string(R"("seed":)") + seed));
    ASSERT_TRUE(e) << seed;
    EXPECT_EQ(e->http_status, 400) << seed;
    EXPECT_EQ(e->param, "seed") << seed;
  }
  ChatRequest r;
  ASSERT_FALSE(chat(with(R"("seed":-1)"), &r));  // any int64 is a seed (as vLLM)
  EXPECT_EQ(*r.common.seed, static_cast<uint64_t>(-1));
  ASSERT_FALSE(chat(with(R"("seed":9223372036854775807)"), &r));
  EXPECT_EQ(*r.common.seed, static_cast<uint64_t>(INT64_MAX));
  ASSERT_FALSE(chat(with(R"("seed":-9.223372036854775808e18)"), &r));
  EXPECT_EQ(*r.common.seed, static_cast<uint64_t>(INT64_MIN));
  ASSERT_FALSE(chat(with(R"("seed":42.0)"), &r));
  EXPECT_EQ(*r.common.seed, 42u);
}

TEST(RequestValidation, SamplingAndStops) {
  ChatRequest r;
  ASSERT_FALSE(chat(with(R"("temperature":0,"top_k":5,"min_p":0.1,"presence_penalty":0.5,"frequency_penalty":-0.5,
      "repetition_penalty":1.1,"seed":7,"stop":"END","max_completion_tokens":9,"max_tokens":3,"n":2,
      "stream":true,"stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":2)"),
                    &r));
  const auto& p = r.common.params;
  EXPECT_EQ(p.sampling.temperature, 0.f);
  EXPECT_EQ(p.sampling.top_k, 5);
  EXPECT_FLOAT_EQ(p.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(p.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p.sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(p.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(p.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(*r.common.max_tokens, 9);  // max_completion_tokens wins
  EXPECT_EQ(r.common.n, 2);
  EXPECT_TRUE(r.common.stream);
  EXPECT_TRUE(r.common.include_usage);
  EXPECT_EQ(p.logprobs, 2);
  EXPECT_EQ(params_for_choice(r.common, 0).sampling.seed, 7u);
  EXPECT_EQ(params_for_choice(r.common, 1).sampling.seed, 8u);

  ChatRequest d;
  ASSERT_FALSE(chat(with(""), &d));  // OpenAI defaults
  EXPECT_EQ(d.common.params.sampling.temperature, 1.f);
  EXPECT_EQ(d.common.params.sampling.top_p, 1.f);
  EXPECT_EQ(d.common.params.logprobs, -1);
  EXPECT_FALSE(d.common.stream);
}

TEST(RequestValidation, Tools) {
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{}}}])";
  ChatRequest r;
  ASSERT_FALSE(chat(with(tools), &r));
  EXPECT_TRUE(r.parse_tool_calls);
  ASSERT_FALSE(chat(with(tools + R"(,"tool_choice":"none")"), &r));
  EXPECT_FALSE(r.parse_tool_calls);
  EXPECT_TRUE(r.tools.is_null());
  EXPECT_FALSE(chat(with(tools + R"(,"tool_choice":{"type":"function","function":{"name":"get_weather"}})")));
  EXPECT_EQ(chat(with(tools + R"(,"tool_choice":{"type":"function","function":{"name":"nope"}})"))->param,
            "tool_choice");
  EXPECT_EQ(chat(with(R"("tool_choice":"required")"))->param, "tool_choice");
  EXPECT_EQ(chat(with(R"("tools":[{"type":"function"}])"))->param, "tools");
}

TEST(RequestValidation, CompletionPrompts) {
  CompletionRequest r;
  ASSERT_FALSE(completion(R"({"prompt":"hello","logprobs":3})", &r));
  EXPECT_EQ(r.prompt_text, "hello");
  EXPECT_EQ(r.common.params.logprobs, 3);
  ASSERT_FALSE(completion(R"({"prompt":[1,2,3]})", &r));
  EXPECT_TRUE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_FALSE(completion(R"({"prompt":[[4,5]]})", &r));
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(completion(R"({})")->param, "prompt");
  EXPECT_EQ(completion(R"({"prompt":""})")->param, "prompt");
  EXPECT_EQ(completion(R"({"prompt":[-1]})")->param, "prompt");
  EXPECT_EQ(completion(R"({"prompt":["a","b"]})")->param, "prompt");
  EXPECT_EQ(completion(R"({"prompt":"x","logprobs":true})")->param, "logprobs");
  EXPECT_EQ(completion(R"({"prompt":"x","echo":true})")->param, "echo");
}

TEST(RequestValidation, FitToContext) {
  CommonRequest r;
  EXPECT_FALSE(fit_to_context(40, limits(), "prompt", r));
  EXPECT_EQ(r.params.max_tokens, 60);  // the rest of the context
  r.max_tokens = 61;
  auto e = fit_to_context(40, limits(), "prompt", r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "max_tokens");
  EXPECT_EQ(e->code, "context_length_exceeded");
  auto e2 = fit_to_context(100, limits(), "messages", r);
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->param, "messages");
  r.max_tokens = 60;
  EXPECT_FALSE(fit_to_context(40, limits(), "prompt", r));
  EXPECT_EQ(r.params.max_tokens, 60);
  // The texts are the runtime's (runtime/request_rules.h): one text per rule in every layer.
  EXPECT_EQ(e->message, check_completion_fits(40, 61, 100).message());
  EXPECT_EQ(e2->message, check_prompt_fits(100, 100).message());
  EXPECT_EQ(fit_to_context(0, limits(), "prompt", r)->code, "empty_prompt");
}

TEST(RequestValidation, MaxTokensFieldsUseTheRuntimeRule) {
  auto e = chat(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":101})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "max_tokens");
  EXPECT_EQ(e->code, "out_of_range");
  EXPECT_EQ(e->message, check_max_tokens(101, 100).message());
  auto c = chat(R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":0})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->param, "max_completion_tokens");
  EXPECT_EQ(c->message, check_max_tokens(0, 100, "max_completion_tokens").message());
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":100})", &r));
  EXPECT_EQ(*r.common.max_tokens, 100);
}

TEST(ApiErrors, ShapeAndStatusMapping) {
  const json j = ApiError::bad_request("bad", "x", "c").to_json();
  EXPECT_EQ(j["error"]["message"], "bad");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "x");
  EXPECT_EQ(j["error"]["code"], "c");
  EXPECT_TRUE(ApiError::bad_request("bad").to_json()["error"]["param"].is_null());
  EXPECT_EQ(api_error_from_status(Status::resource_exhausted("kv")).http_status, 429);
  EXPECT_EQ(api_error_from_status(Status::unavailable("queue full")).http_status, 503);
  EXPECT_EQ(api_error_from_status(Status::invalid_argument("x")).http_status, 400);
  EXPECT_EQ(api_error_from_status(Status::internal("x")).http_status, 500);
  EXPECT_EQ(api_error_for_http_status(413).code, "payload_too_large");
  EXPECT_EQ(api_error_for_http_status(401).type, "authentication_error");
}

}  // namespace
}  // namespace edge::server
