// A chat template is code from a model file: one that loops, recurses or grows a string or a
// list without end must fail to render with an error naming the limit, never hang or exhaust
// memory. The templates are the reproducers under tests/fuzz/regressions/chat_template/.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/regression_input.h"
#include "tokenizer/chat_template.h"

namespace edge {
namespace {

ChatTemplateInputs two_messages() {
  ChatTemplateInputs in;
  in.messages = nlohmann::json::array(
      {{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", "Hello!"}}});
  return in;
}

void expect_refused(const std::string& reproducer, const std::string& why) {
  SCOPED_TRACE(reproducer);
  auto t = ChatTemplate::parse(testing_util::fuzz_regression_text("chat_template", reproducer));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto out = t->render(two_messages());
  ASSERT_FALSE(out.ok()) << "rendered " << out->size() << " bytes";
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << out.status().to_string();
  EXPECT_NE(out.status().message().find(why), std::string::npos) << out.status().to_string();
}

TEST(ChatTemplateLimits, NestedLoopsStopAtTheStepBudget) {
  // 10^8 iterations of an empty body: hung the fuzzer (no step limit existed).
  expect_refused("nested_loops_hang.jinja", "runs too long");
}

TEST(ChatTemplateLimits, DoublingAStringStopsAtTheByteBudget) {
  // s = s ~ s, 64 times: 2^64 bytes wanted.
  expect_refused("string_doubling_oom.jinja", "too much text");
}

TEST(ChatTemplateLimits, DoublingAListStopsAtTheByteBudget) {
  // x = x + x, 40 times: 2^40 items (each a copied string).
  expect_refused("list_doubling_oom.jinja", "too much text");
}

TEST(ChatTemplateLimits, ReplaceThatGrowsTheStringIsBounded) {
  // s = s|replace('x', s): squares the length each time, in one filter call.
  expect_refused("replace_growth_oom.jinja", "too much text");
}

TEST(ChatTemplateLimits, HugeIndentWidthsAreRefused) {
  // indent(10^10) and tojson(indent=10^9) allocated their padding before anything else.
  expect_refused("indent_width_oom.jinja", "too large");
  expect_refused("tojson_indent_oom.jinja", "too large");
}

TEST(ChatTemplateLimits, RealTemplateOverALongChatStaysWithinTheBudget) {
  // The budget must leave room for real use: Qwen3's template (tools, reasoning, tool calls)
  // over 1000 messages renders.
  auto t = ChatTemplate::parse(testing_util::fuzz_seed_text("chat_template", "qwen3.jinja"));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ChatTemplateInputs in;
  in.tools = nlohmann::json::parse(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}])");
  for (int i = 0; i < 500; ++i) {
    in.messages.push_back({{"role", "user"}, {"content", "question " + std::to_string(i)}});
    in.messages.push_back({{"role", "assistant"},
                           {"content", "<think>\nhm\n</think>\n\nanswer " + std::to_string(i)}});
  }
  auto out = t->render(in);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_NE(out->find("answer 499"), std::string::npos);
}

}  // namespace
}  // namespace edge
