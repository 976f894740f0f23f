// Tokenizer::from_vocab_merges: Qwen2's slow-tokenizer files (vocab.json, merges.txt,
// tokenizer_config.json's added_tokens_decoder) read as the byte-level BPE they describe.
#include <gtest/gtest.h>

#include <fstream>

#include "../test_support.h"
#include "tokenizer/tokenizer.h"

namespace edge {
namespace {

std::string write(const std::string& prefix, const std::string& text) {
  const std::string path = testing::make_temp_file(prefix);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Bytes "a".."z" and "Ġ" (space), then merges by rank: "h e", "l l", "he ll", "hell o",
// "Ġ w"; specials after them.
struct Files {
  std::string vocab, merges, config;
};

Files files(const std::string& merges_text) {
  std::string vocab = "{";
  int id = 0;
  for (char ch = 'a'; ch <= 'z'; ++ch)
    vocab += "\"" + std::string(1, ch) + "\": " + std::to_string(id++) + ", ";
  vocab +=
      "\"\xc4\xa0\": 26, \"he\": 27, \"ll\": 28, \"hell\": 29, \"hello\": 30, \"\xc4\xa0w\": 31}";
  const std::string config =
      R"({"added_tokens_decoder": {"32": {"content": "<|im_start|>", "special": true},)"
      R"( "33": {"content": "<|im_end|>", "special": true}}, "eos_token": "<|im_end|>"})";
  return {write("edge_vm_vocab_", vocab), write("edge_vm_merges_", merges_text),
          write("edge_vm_config_", config)};
}

TEST(VocabMerges, EncodesAsRankedByteLevelBpe) {
  const Files f = files("#version: 0.2\nh e\nl l\nhe ll\nhell o\n\xc4\xa0 w\n");
  auto t = Tokenizer::from_vocab_merges(f.vocab, f.merges, f.config);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  // "hello" merges whole; " wo" is "Ġw" then "o"; specials by name.
  EXPECT_EQ(t->encode("<|im_start|>hello wo<|im_end|>", false),
            (std::vector<int32_t>{32, 30, 31, 14, 33}));
  EXPECT_EQ(t->decode({30, 31, 14}), "hello wo");
}

TEST(VocabMerges, BadMergeLineIsNamed) {
  const Files f = files("#version: 0.2\nh e\nnot-a-pair\n");
  auto t = Tokenizer::from_vocab_merges(f.vocab, f.merges, f.config);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("line 3"), std::string::npos) << t.status().to_string();
}

}  // namespace
}  // namespace edge
