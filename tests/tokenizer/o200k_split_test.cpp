// The o200k pre-tokenizer split ("gpt-4o": GPT-OSS, GPT-4o, Llama-4) against two
// independent implementations on the strings of tests/data/tokenizer/o200k_split/
// (accents, capitals, CJK, Indic and Thai marks, digits, emoji, whitespace runs,
// apostrophes): the tokenizer.json regex run by Python's `regex` module, which we must
// match exactly, and ik_llama.cpp's unicode_regex_split, which we match wherever its
// "collapsed" std::regex approximation can (see the README there for the commands).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/pretokenize.h"

namespace edge {
namespace {

nlohmann::json read_json(const std::string& name) {
  std::ifstream f(std::string(EDGE_TEST_DATA) + "/tokenizer/o200k_split/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

std::vector<std::string> split(const PreTokenizer& pre, const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view p : pre.split(text)) out.emplace_back(p);
  return out;
}

// True if the text has a code point outside ASCII that is a letter or a mark: the only
// code points ik_llama.cpp's collapsed text cannot tell apart by case or category.
bool has_non_ascii_letter_or_mark(const std::string& text) {
  // A character the regex matches is a piece of its own before the "\x01" gap after it;
  // one it does not match is part of a single gap piece.
  static const auto probe = PreTokenizer::compile({"[\\p{L}\\p{M}]"});
  for (std::string_view ch : utf8_chars(text))
    if (ch.size() > 1 && probe.ok() && probe->split(std::string(ch) + "\x01").size() == 2)
      return true;
  return false;
}

class O200kSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    strings_ = read_json("strings.json");
    regex_ = read_json("regex_splits.json");
    ik_ = read_json("ik_splits.json");
    ASSERT_TRUE(strings_.is_array() && regex_.is_array() && ik_.is_array())
        << "tests/data/tokenizer/o200k_split";
    ASSERT_EQ(strings_.size(), regex_.size());
    ASSERT_EQ(strings_.size(), ik_.size());
    ASSERT_GE(strings_.size(), 300u);
    auto pre = PreTokenizer::compile(pretokenizer_regexes("gpt-4o"));
    ASSERT_TRUE(pre.ok()) << pre.status().to_string();
    pre_ = std::move(*pre);
  }
  nlohmann::json strings_, regex_, ik_;
  PreTokenizer pre_;
};

TEST_F(O200kSplit, MatchesTheTokenizerJsonRegex) {
  for (size_t i = 0; i < strings_.size(); ++i) {
    const std::string text = strings_[i].get<std::string>();
    EXPECT_EQ(split(pre_, text), regex_[i].get<std::vector<std::string>>())
        << "string " << i << ": " << text;
  }
}

TEST_F(O200kSplit, MatchesIkLlamaCppWhereItsApproximationHolds) {
  size_t same = 0;
  for (size_t i = 0; i < strings_.size(); ++i) {
    const std::string text = strings_[i].get<std::string>();
    const auto ours = split(pre_, text);
    if (ours == ik_[i].get<std::vector<std::string>>()) {
      ++same;
      continue;
    }
    // ik_llama.cpp maps every non-ASCII letter to one placeholder and marks to another, so
    // it can only differ on text holding such a code point.
    EXPECT_TRUE(has_non_ascii_letter_or_mark(text))
        << "string " << i << " differs from ik_llama.cpp: " << text;
  }
  // Most strings agree (the README gives the count at the time the data was made).
  EXPECT_GE(same * 10, strings_.size() * 8) << same << " of " << strings_.size();
}

TEST(O200kNames, AliasesAndTokenizerJsonSpelling) {
  const auto regexes = pretokenizer_regexes("gpt-4o");
  ASSERT_EQ(regexes.size(), 1u);
  EXPECT_EQ(pretokenizer_regexes("llama4"), regexes);
  EXPECT_EQ(pretokenizer_regexes("kanana2"), regexes);
  EXPECT_EQ(pretokenizer_name_for(regexes), "gpt-4o");
  // The regex as GPT-OSS's tokenizer.json spells it maps back to the same name.
  const std::string hf =
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?"
      "i:'s|'t|'re|'ve|'m|'ll|'d)?"
      "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?"
      "i:'s|'t|'re|'ve|'m|'ll|'d)?"
      "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  EXPECT_EQ(pretokenizer_name_for({hf}), "gpt-4o");
}

TEST(O200kSplitCases, CaseAwareWordsNumbersAndPunctuation) {
  auto pre = PreTokenizer::compile(pretokenizer_regexes("gpt-4o"));
  ASSERT_TRUE(pre.ok());
  auto s = [&](const std::string& t) { return split(*pre, t); };
  using V = std::vector<std::string>;
  EXPECT_EQ(s("HelloWorld"), (V{"Hello", "World"}));
  EXPECT_EQ(s("XMLHttpRequest"), (V{"XMLHttp", "Request"}));
  EXPECT_EQ(s("DON'T stop"), (V{"DON'T", " stop"}));
  EXPECT_EQ(s("1234567"), (V{"123", "456", "7"}));
  EXPECT_EQ(s("a...\n\nb"), (V{"a", "...\n\n", "b"}));
  EXPECT_EQ(s("foo/bar/"), (V{"foo", "/bar", "/"}));
  EXPECT_EQ(s("a   b"), (V{"a", "  ", " b"}));
  // Real Unicode categories: capitals of other scripts and combining marks count.
  EXPECT_EQ(s("\xC3\x89"
              "COLE"),
            (V{"\xC3\x89"
               "COLE"}));  // ÉCOLE
  EXPECT_EQ(s("e\xCC\x81"
              "cole"),
            (V{"e\xCC\x81"
               "cole"}));                                           // e + U+0301
  EXPECT_EQ(s("\xCE\x91\xCE\xB8\xCE\xB1\xCE\x91\xCE\xB8\xCE\xB1"),  // ΑθαΑθα
            (V{"\xCE\x91\xCE\xB8\xCE\xB1", "\xCE\x91\xCE\xB8\xCE\xB1"}));
}

}  // namespace
}  // namespace edge
