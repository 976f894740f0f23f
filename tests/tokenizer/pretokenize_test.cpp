// Regex pre-tokenisation: every named pre-tokenizer compiles under PCRE2, splits losslessly,
// and the splits that distinguish the families come out as the references define them.
#include <gtest/gtest.h>

#include "tokenizer/pretokenize.h"

namespace edge {
namespace {

std::vector<std::string> split(const std::string& pre, const std::string& text) {
  auto pt = PreTokenizer::compile(pretokenizer_regexes(pre));
  EXPECT_TRUE(pt.ok()) << pre << ": " << pt.status().to_string();
  std::vector<std::string> out;
  if (!pt.ok()) return out;
  for (std::string_view p : pt->split(text)) out.emplace_back(p);
  return out;
}

using V = std::vector<std::string>;

TEST(PreTokenize, EveryNamedSetCompilesAndIsLossless) {
  const std::vector<std::string> texts = {
      "Hello world's 12345 ", "  \n\n\tx  ", "日本語 中文 한국어", "🤗🚀 ok!!", "a\r\nb", "",
      "I'LL 'Ve", "x\xFFy\xC3", "$+<=>^~|`", "ｆｕｌｌ ＡＢＣ µ ΩK", "  trailing   ",
  };
  for (const char* pre : {"default", "gpt-2", "llama3", "llama-bpe", "qwen2", "deepseek-coder", "deepseek-llm",
                          "starcoder", "falcon", "bloom", "viking", "chatglm-bpe"}) {
    ASSERT_FALSE(pretokenizer_regexes(pre).empty()) << pre;
    for (const std::string& t : texts) {
      std::string joined;
      for (const std::string& p : split(pre, t)) {
        EXPECT_FALSE(p.empty()) << pre;
        joined += p;
      }
      EXPECT_EQ(joined, t) << pre;
    }
  }
  EXPECT_TRUE(pretokenizer_regexes("no-such-pre").empty());
}

TEST(PreTokenize, FamilySplits) {
  EXPECT_EQ(split("gpt-2", "Hello world's 12345"), (V{"Hello", " world", "'s", " 12345"}));
  EXPECT_EQ(split("gpt-2", "a  b"), (V{"a", " ", " b"}));  // \s+(?!\S) leaves the last space
  EXPECT_EQ(split("default", "x+=12345;"), (V{"x", "+=", "123", "45", ";"}));
  EXPECT_EQ(split("bloom", "Hi, you."), (V{"Hi", ",", " you", "."}));
  EXPECT_EQ(split("llama3", "12345 I'LL"), (V{"123", "45", " I", "'LL"}));
  EXPECT_EQ(split("llama3", "x\n\n  y"), (V{"x", "\n\n", " ", " y"}));
  EXPECT_EQ(split("qwen2", "123"), (V{"1", "2", "3"}));
  EXPECT_EQ(split("qwen2", "!!!\n\nfoo"), (V{"!!!\n\n", "foo"}));
  EXPECT_EQ(split("deepseek-coder", "ab 12,x\n"), (V{"ab", " ", "1", "2", ",", "x", "\n"}));
}

TEST(PreTokenize, DeepseekLlmLetterClass) {
  // Greek with oxia (U+1F7D) and the Kelvin sign (U+212A) are letters of its class; the
  // digit run and the CJK run are pieces of their own.
  EXPECT_EQ(split("deepseek-llm", "\xE1\xBD\xBD\xE2\x84\xAA 123\xE4\xB8\xAD\xE6\x96\x87"),
            (V{"\xE1\xBD\xBD\xE2\x84\xAA", " ", "123", "\xE4\xB8\xAD\xE6\x96\x87"}));
  EXPECT_EQ(split("deepseek-llm", "Hi, there!"), (V{"Hi", ",", " there", "!"}));
}

TEST(PreTokenize, InvalidUtf8PassesThrough) {
  EXPECT_EQ(split("gpt-2", "ab\xFF" "cd"), (V{"ab", "\xFF", "cd"}));
}

TEST(PreTokenize, KnownRegexListsMapToNames) {
  EXPECT_EQ(pretokenizer_name_for(pretokenizer_regexes("llama-bpe")), "llama3");
  // The spelling found in tokenizer.json files.
  EXPECT_EQ(pretokenizer_name_for({"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}"
                                   "\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}),
            "qwen2");
  EXPECT_EQ(pretokenizer_name_for({"\\p{L}+"}), "");
}

TEST(PreTokenize, BadRegexIsAnError) {
  auto pt = PreTokenizer::compile({"(unclosed"});
  ASSERT_FALSE(pt.ok());
  EXPECT_EQ(pt.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pt.status().message().find("(unclosed"), std::string::npos);
}

TEST(PreTokenize, Nfc) {
  EXPECT_EQ(utf8_nfc("cafe\xCC\x81"), "caf\xC3\xA9");
  EXPECT_EQ(utf8_nfc("plain"), "plain");
}

}  // namespace
}  // namespace edge
