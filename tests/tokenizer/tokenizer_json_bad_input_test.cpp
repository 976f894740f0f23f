// Hostile tokenizer.json text (crash reproducers from fuzz_tokenizer_json among them): each
// must load or give an invalid_format Status, never undefined behaviour or a crash.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/regression_input.h"
#include "tokenizer/tokenizer.h"

namespace edge {
namespace {

// A byte-level BPE tokenizer.json whose vocabulary is `vocab` (a JSON object's text).
std::string byte_level_json(const std::string& vocab, const std::string& added = "[]") {
  return R"({"pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
             "added_tokens": )" +
         added + R"(, "model": {"type": "BPE", "merges": [], "vocab": )" + vocab + "}}";
}

void expect_invalid(const std::string& text, const std::string& part) {
  auto tok = Tokenizer::from_tokenizer_json_text(text, "", "bad.json");
  ASSERT_FALSE(tok.ok()) << "loaded: " << text;
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidFormat) << tok.status().to_string();
  EXPECT_NE(tok.status().message().find(part), std::string::npos) << tok.status().to_string();
  EXPECT_NE(tok.status().message().find("bad.json"), std::string::npos) << tok.status().to_string();
}

TEST(TokenizerJsonBadInput, MinimalByteLevelFileLoads) {
  // Guards the builder: the file with integer ids loads, so the tests below fail for their change.
  auto tok =
      Tokenizer::from_tokenizer_json_text(byte_level_json(R"({"a": 0, "b": 1})"), "", "ok.json");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->n_vocab(), 2);
}

TEST(TokenizerJsonBadInput, FloatTokenIdIsAnErrorNotAnOverflowingConversion) {
  // Found by fuzz_tokenizer_json: a vocab id of 2e99 was read with get<int64_t>(), a float to
  // integer conversion out of range (undefined behaviour; UBSan stops there).
  expect_invalid(testing_util::fuzz_regression_text("tokenizer_json", "float_vocab_id.json"),
                 "not an integer");
  expect_invalid(byte_level_json(R"({"a": 1e32})"), "not an integer");
  expect_invalid(byte_level_json(R"({"a": 0.5})"), "not an integer");
  expect_invalid(byte_level_json(R"({"a": 0})", R"([{"id": 1e30, "content": "x"}])"),
                 "not an integer");
}

TEST(TokenizerJsonBadInput, TokenIdOutOfRangeIsAnError) {
  expect_invalid(byte_level_json(R"({"a": -1})"), "out of range");
  expect_invalid(byte_level_json(R"({"a": 16777216})"), "out of range");
  expect_invalid(byte_level_json(R"({"a": 18446744073709551615})"), "out of range");
  expect_invalid(byte_level_json(R"({"a": 0})", R"([{"id": -5, "content": "x"}])"), "out of range");
}

TEST(TokenizerJsonBadInput, SparseIdsCannotSizeAHugeTable) {
  // Found by fuzz_tokenizer_json (a timeout): one token with id 16777215 made a 16M-entry
  // token table (12 s and ~1 GiB under ASan) from a 100-byte file. Ids are now bounded by
  // the number of tokens the file has.
  expect_invalid(testing_util::fuzz_regression_text("tokenizer_json", "sparse_vocab_id_slow.json"),
                 "out of range");
  expect_invalid(byte_level_json(R"({"a": 0, "b": 5000})"), "out of range");
  expect_invalid(byte_level_json(R"({"a": 0})", R"([{"id": 100000, "content": "x"}])"),
                 "out of range");
  // A few holes, as real files have, are fine.
  auto tok = Tokenizer::from_tokenizer_json_text(
      byte_level_json(R"({"a": 0, "b": 9})", R"([{"id": 40, "content": "<x>", "special": true}])"),
      "", "holes.json");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->n_vocab(), 41);
}

TEST(TokenizerJsonBadInput, WrongShapesAreErrors) {
  expect_invalid("not json", "not valid JSON");
  expect_invalid("[]", "no \"model\" section");
  expect_invalid(byte_level_json(R"({"a": 0})", R"([{"id": 0, "content": 7}])"), "bad.json");
}

}  // namespace
}  // namespace edge
