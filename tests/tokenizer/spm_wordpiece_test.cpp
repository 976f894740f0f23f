// SentencePiece-BPE and WordPiece encoders: llama.cpp's test vectors for the llama-spm,
// phi-3 and bert-bge GGUF vocabularies, a brute-force reference for the SPM merge order,
// and small hand-made vocabularies for the corner cases.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "tokenizer/encoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_fixture.h"

namespace edge {
namespace {

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

std::vector<int32_t> encode_with(const Encoder& enc, const std::string& text, bool first = true) {
  std::vector<int32_t> out;
  enc.encode(text, first, out);
  return out;
}

std::string decode_with(const Encoder& enc, const std::vector<int32_t>& ids, bool special = false) {
  std::string s;
  for (int32_t id : ids) s += enc.decode_token(id, special);
  return s;
}

// Runs every vector of <name>.gguf.inp/.out through the encoder made for that vocabulary.
void check_vectors(const std::string& name, bool wordpiece) {
  auto vocab = test::load_gguf_vocab(test::tokenizer_data_path(name + ".gguf"));
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  auto enc = wordpiece ? make_wordpiece_encoder(*vocab) : make_spm_encoder(*vocab);
  ASSERT_TRUE(enc.ok()) << enc.status().to_string();
  auto cases = test::read_vocab_cases(test::tokenizer_data_path(name + ".gguf.inp"),
                                      test::tokenizer_data_path(name + ".gguf.out"));
  ASSERT_TRUE(cases.ok()) << cases.status().to_string();
  ASSERT_GE(cases->size(), 40u);
  int failures = 0;
  for (const auto& c : *cases) {
    const std::vector<int32_t> got = encode_with(**enc, c.text);
    EXPECT_EQ(got, c.ids) << name << " text: \"" << c.text << "\"\n got:" << ids_str(got)
                          << "\n want:" << ids_str(c.ids);
    failures += got != c.ids;
  }
  EXPECT_EQ(failures, 0) << name;
}

TEST(SpmVectors, LlamaSpm) { check_vectors("ggml-vocab-llama-spm", false); }
TEST(SpmVectors, Phi3) { check_vectors("ggml-vocab-phi-3", false); }
TEST(WordPieceVectors, BertBge) { check_vectors("ggml-vocab-bert-bge", true); }

// The same vectors through the whole Tokenizer (GGUF loading, special-token splitting,
// space-prefix rule) with add_special = false, then with BOS / [CLS]..[SEP] added.
void check_vectors_through_tokenizer(const std::string& name, std::vector<int32_t> prefix,
                                     std::vector<int32_t> suffix) {
  auto gguf = GgufFile::open(test::tokenizer_data_path(name + ".gguf"));
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  auto cases = test::read_vocab_cases(test::tokenizer_data_path(name + ".gguf.inp"),
                                      test::tokenizer_data_path(name + ".gguf.out"));
  ASSERT_TRUE(cases.ok()) << cases.status().to_string();
  for (const auto& c : *cases) {
    const std::vector<int32_t> got = tok->encode(c.text, /*add_special=*/false);
    EXPECT_EQ(got, c.ids) << name << " text: \"" << c.text << "\"\n got:" << ids_str(got)
                          << "\n want:" << ids_str(c.ids);
    std::vector<int32_t> want = prefix;
    want.insert(want.end(), c.ids.begin(), c.ids.end());
    want.insert(want.end(), suffix.begin(), suffix.end());
    EXPECT_EQ(tok->encode(c.text, /*add_special=*/true), want) << name << " text: \"" << c.text << "\"";
  }
}

TEST(TokenizerVectors, LlamaSpm) { check_vectors_through_tokenizer("ggml-vocab-llama-spm", {1}, {}); }
TEST(TokenizerVectors, Phi3) { check_vectors_through_tokenizer("ggml-vocab-phi-3", {1}, {}); }
TEST(TokenizerVectors, BertBge) { check_vectors_through_tokenizer("ggml-vocab-bert-bge", {101}, {102}); }

// Tokenizer-level SPM behaviour around special tokens, as llama.cpp: the fragment after a
// special token gets the space prefix again; decoding drops the first added space.
TEST(TokenizerVectors, SpmAroundSpecialTokens) {
  auto gguf = GgufFile::open(test::tokenizer_data_path("ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::vector<int32_t> hello = tok->encode("Hello", false);  // ▁Hello
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_EQ(tok->encode("Hello</s>Hello", false, /*parse_special=*/true),
            (std::vector<int32_t>{hello[0], 2, hello[0]}));
  EXPECT_EQ(tok->decode(tok->encode("Hello world", true)), "Hello world");
  EXPECT_EQ(tok->decode(tok->encode(" Hello  world\n", false)), " Hello  world\n");
}

// llama.cpp strips whitespace after Phi-3's special tokens (RSTRIP, set by general.name
// "phi3"/"phi-3" except for <unk>, <s>, <|endoftext|>); the next fragment still gets the
// space prefix. Reference: llama.cpp gives these ids for this chat turn.
TEST(SpmVectors, Phi3FragmentAfterSpecialToken) {
  auto vocab = test::load_gguf_vocab(test::tokenizer_data_path("ggml-vocab-phi-3.gguf"));
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  auto enc = make_spm_encoder(*vocab);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(encode_with(**enc, "SYS\nHI", /*first=*/true), (std::vector<int32_t>{317, 21554, 13, 17628}));
}

// Needs RSTRIP for Phi-3 special tokens in Tokenizer (tokenizer.cpp); enable when it lands.
TEST(TokenizerVectors, Phi3StripsWhitespaceAfterSpecialTokens) {
  auto gguf = GgufFile::open(test::tokenizer_data_path("ggml-vocab-phi-3.gguf"));
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->encode("<|user|>\nSYS\nHI<|end|>\n<|assistant|>\n", true),
            (std::vector<int32_t>{1, 32010, 317, 21554, 13, 17628, 32007, 32001}));
}

// SPM with byte fallback loses nothing: every text decodes back to itself, behind the
// space prefix (which the Tokenizer strips).
TEST(SpmVectors, DecodeRoundTrip) {
  auto vocab = test::load_gguf_vocab(test::tokenizer_data_path("ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  auto enc = make_spm_encoder(*vocab);
  ASSERT_TRUE(enc.ok());
  auto cases = test::read_vocab_cases(test::tokenizer_data_path("ggml-vocab-llama-spm.gguf.inp"),
                                      test::tokenizer_data_path("ggml-vocab-llama-spm.gguf.out"));
  ASSERT_TRUE(cases.ok());
  for (const auto& c : *cases) {
    if (c.text.empty()) continue;
    EXPECT_EQ(decode_with(**enc, c.ids), " " + c.text);
  }
  // Control tokens render only with `special`; byte tokens are raw bytes.
  EXPECT_EQ((*enc)->decode_token(vocab->bos_id, false), "");
  EXPECT_EQ((*enc)->decode_token(vocab->bos_id, true), "<s>");
  EXPECT_EQ((*enc)->decode_token(vocab->find("<0x0A>"), false), "\n");
  EXPECT_EQ((*enc)->decode_token(vocab->find("\xE2\x96\x81Hello"), false), " Hello");
  EXPECT_EQ((*enc)->decode_token(-1, true), "");
  EXPECT_EQ((*enc)->decode_token(vocab->n_tokens(), true), "");
}

// ---- SPM on hand-made vocabularies ----

// Pieces with scores; types default to normal. Byte tokens are added on request.
Vocab make_spm_vocab(const std::vector<std::pair<std::string, float>>& pieces, bool bytes) {
  Vocab v;
  v.model = TokenizerModel::kSpm;
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.scores = {0.f, 0.f, 0.f};
  v.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  if (bytes) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      v.tokens.push_back(name);
      v.scores.push_back(0.f);
      v.types.push_back(TokenType::kByte);
    }
  }
  for (const auto& [t, s] : pieces) {
    v.tokens.push_back(t);
    v.scores.push_back(s);
    v.types.push_back(TokenType::kNormal);
  }
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_space_prefix = true;
  v.build_index();
  return v;
}

// The textbook algorithm, O(n^2) per merge: scan all adjacent pairs, merge the best.
std::vector<int32_t> naive_spm(const Vocab& v, const std::string& text) {
  std::vector<std::string> syms;
  for (char c : text) syms.emplace_back(1, c);  // test texts are ASCII
  while (true) {
    int best = -1;
    float best_score = 0;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      const int32_t id = v.find(syms[i] + syms[i + 1]);
      if (id >= 0 && (best < 0 || v.scores[id] > best_score)) {
        best = static_cast<int>(i);
        best_score = v.scores[id];
      }
    }
    if (best < 0) break;
    syms[best] += syms[best + 1];
    syms.erase(syms.begin() + best + 1);
  }
  std::vector<int32_t> ids;
  for (const auto& s : syms) {
    const int32_t id = v.find(s);
    ids.push_back(id >= 0 ? id : v.find(std::string("<0x") + "0123456789ABCDEF"[(unsigned char)s[0] >> 4] +
                                         "0123456789ABCDEF"[s[0] & 15] + ">"));
  }
  return ids;
}

TEST(Spm, HighestScoreWinsThenLeftmost) {
  // "abc": "ab" (-1) beats "bc" (-2) although both are pieces.
  Vocab v = make_spm_vocab({{"a", -10}, {"b", -10}, {"c", -10}, {"ab", -1}, {"bc", -2}, {"abc", -5}}, true);
  v.add_space_prefix = false;
  auto enc = make_spm_encoder(v);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(encode_with(**enc, "abc"), std::vector<int32_t>{v.find("abc")});
  EXPECT_EQ(encode_with(**enc, "bc"), std::vector<int32_t>{v.find("bc")});
  // Equal scores: the leftmost pair merges first, so "aaa" -> "aa" + "a".
  Vocab w = make_spm_vocab({{"a", -10}, {"aa", -1}}, true);
  w.add_space_prefix = false;
  auto enc2 = make_spm_encoder(w);
  ASSERT_TRUE(enc2.ok());
  EXPECT_EQ(encode_with(**enc2, "aaa"), (std::vector<int32_t>{w.find("aa"), w.find("a")}));
}

TEST(Spm, SpacePrefixOnlyOnFirstFragment) {
  Vocab v = make_spm_vocab({{"\xE2\x96\x81", -1}, {"x", -1}, {"\xE2\x96\x81x", -0.5f}}, true);
  auto enc = make_spm_encoder(v);
  ASSERT_TRUE(enc.ok());
  const int32_t sx = v.find("\xE2\x96\x81x"), x = v.find("x"), sp = v.find("\xE2\x96\x81");
  EXPECT_EQ(encode_with(**enc, "x", true), std::vector<int32_t>{sx});
  EXPECT_EQ(encode_with(**enc, "x", false), std::vector<int32_t>{x});
  EXPECT_EQ(encode_with(**enc, "x x", false), (std::vector<int32_t>{x, sx}));
  EXPECT_EQ(encode_with(**enc, " ", true), (std::vector<int32_t>{sp, sp}));
  EXPECT_TRUE(encode_with(**enc, "", true).empty());
  v.add_space_prefix = false;
  EXPECT_EQ(encode_with(**enc, "x", true), std::vector<int32_t>{x});
}

TEST(Spm, ByteFallbackAndUnknown) {
  Vocab v = make_spm_vocab({{"a", -1}}, true);
  v.add_space_prefix = false;
  auto enc = make_spm_encoder(v);
  ASSERT_TRUE(enc.ok());
  // "é" is C3 A9: two byte tokens; they decode back to the UTF-8 sequence.
  const std::vector<int32_t> ids = encode_with(**enc, "a\xC3\xA9");
  EXPECT_EQ(ids, (std::vector<int32_t>{v.find("a"), v.find("<0xC3>"), v.find("<0xA9>")}));
  EXPECT_EQ(decode_with(**enc, ids), "a\xC3\xA9");
  // Truncated UTF-8 at the end of the fragment still yields its bytes.
  EXPECT_EQ(encode_with(**enc, "\xC3"), std::vector<int32_t>{v.find("<0xC3>")});

  Vocab nb = make_spm_vocab({{"a", -1}}, false);
  nb.add_space_prefix = false;
  auto enc2 = make_spm_encoder(nb);
  ASSERT_TRUE(enc2.ok());
  EXPECT_EQ(encode_with(**enc2, "a\xC3\xA9"), (std::vector<int32_t>{nb.find("a"), 0, 0}));
  EXPECT_EQ((*enc2)->decode_token(0, false), "");
  EXPECT_EQ((*enc2)->decode_token(0, true), "<unk>");

  nb.unk_id = -1;
  EXPECT_FALSE(make_spm_encoder(nb).ok());  // neither bytes nor unk to fall back to
  Vocab bad = nb;
  bad.scores.pop_back();
  EXPECT_FALSE(make_spm_encoder(bad).ok());
}

TEST(Spm, MatchesBruteForceOnRandomText) {
  // A vocabulary over {a,b,c,▁-free} with random scores, including ties.
  std::mt19937 rng(42);
  std::vector<std::pair<std::string, float>> pieces = {{"a", -20}, {"b", -20}, {"c", -20}};
  std::uniform_int_distribution<int> len(2, 5), ch(0, 2), sc(0, 6);
  for (int i = 0; i < 60; ++i) {
    std::string p;
    for (int k = len(rng); k > 0; --k) p += static_cast<char>('a' + ch(rng));
    pieces.push_back({p, -static_cast<float>(sc(rng))});
  }
  Vocab v = make_spm_vocab({}, true);
  for (const auto& [t, s] : pieces) {
    if (v.find(t) >= 0) continue;
    v.tokens.push_back(t);
    v.scores.push_back(s);
    v.types.push_back(TokenType::kNormal);
    v.build_index();
  }
  v.add_space_prefix = false;
  auto enc = make_spm_encoder(v);
  ASSERT_TRUE(enc.ok());
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    for (int k = std::uniform_int_distribution<int>(1, 40)(rng); k > 0; --k)
      text += static_cast<char>('a' + ch(rng) + (rng() % 17 == 0 ? 3 : 0));  // some 'd': bytes
    EXPECT_EQ(encode_with(**enc, text), naive_spm(v, text)) << text;
  }
}

TEST(Spm, LongInputIsFast) {
  auto vocab = test::load_gguf_vocab(test::tokenizer_data_path("ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  auto enc = make_spm_encoder(*vocab);
  ASSERT_TRUE(enc.ok());
  std::string text;
  while (text.size() < 1'000'000) text += "The quick brown fox jumps over the lazy dog. ";
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = encode_with(**enc, text);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A quadratic merge loop would take minutes here; n log n takes well under a second
  // (the limit leaves room for Debug builds and sanitizers).
  EXPECT_LT(secs, 20.0);
  EXPECT_EQ(decode_with(**enc, ids), " " + text);
  EXPECT_LT(ids.size(), text.size() / 3);
}

// ---- WordPiece on a hand-made vocabulary ----

Vocab make_wp_vocab(bool gguf_style) {
  // HF spelling: "word" starts a word, "##x" continues one.
  const std::vector<std::string> hf = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able",
                                       "aff", "!", ",", "cafe", "中", "##s", "a", "##b", "ab"};
  Vocab v;
  v.model = TokenizerModel::kWordPiece;
  for (const std::string& t : hf) {
    std::string tok = t;
    if (gguf_style && t[0] != '[') tok = t.rfind("##", 0) == 0 ? t.substr(2) : "\xE2\x96\x81" + t;
    v.tokens.push_back(tok);
    v.types.push_back(t[0] == '[' ? TokenType::kControl : TokenType::kNormal);
  }
  v.unk_id = 1;
  v.lowercase = true;
  v.build_index();
  return v;
}

class WordPieceStyles : public ::testing::TestWithParam<bool> {};

TEST_P(WordPieceStyles, GreedyLongestMatch) {
  const Vocab v = make_wp_vocab(GetParam());
  auto enc = make_wordpiece_encoder(v);
  ASSERT_TRUE(enc.ok()) << enc.status().to_string();
  // "unaffable" -> un ##aff ##able; "Café" -> cafe (accent stripped, lowercased);
  // punctuation and CJK are words of their own; "xyz" cannot be covered -> [UNK].
  EXPECT_EQ(encode_with(**enc, "UnAffable, Café!中xyz  cafes\t"),
            (std::vector<int32_t>{4, 5, 6, 9, 10, 8, 11, 1, 10, 12}));
  // Greedy, not optimal: "abb" -> "ab" + "##b".
  EXPECT_EQ(encode_with(**enc, "abb"), (std::vector<int32_t>{15, 14}));
  // A word longer than 100 characters is [UNK] even when it could be covered.
  std::string long_word = "a";
  for (int i = 0; i < 100; ++i) long_word += "b";
  EXPECT_EQ(encode_with(**enc, long_word), std::vector<int32_t>{1});
  EXPECT_EQ(encode_with(**enc, long_word.substr(0, 100)).size(), 99u);
  // Control and format characters vanish (a zero-width joiner does not split a word).
  EXPECT_EQ(encode_with(**enc, "un\xE2\x80\x8D" "aff\x01"), (std::vector<int32_t>{4, 5}));
  EXPECT_TRUE(encode_with(**enc, " \n\t ").empty());
  EXPECT_EQ(decode_with(**enc, {4, 5, 6, 9, 10}), " unaffable , cafe");
  EXPECT_EQ((*enc)->decode_token(1, false), "");
  EXPECT_EQ((*enc)->decode_token(1, true), "[UNK]");
}

INSTANTIATE_TEST_SUITE_P(Spellings, WordPieceStyles, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Gguf" : "HuggingFace"; });

TEST(WordPiece, CasedVocabularyKeepsCaseAndAccents) {
  Vocab v = make_wp_vocab(false);
  v.tokens.push_back("Café");
  v.types.push_back(TokenType::kNormal);
  v.lowercase = false;
  v.build_index();
  auto enc = make_wordpiece_encoder(v);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(encode_with(**enc, "Café cafe"), (std::vector<int32_t>{v.find("Café"), v.find("cafe")}));
}

// GGUF has no lowercase key; llama.cpp lowercases every GGUF "bert" vocabulary.
TEST(WordPiece, GgufSpellingAlwaysLowercases) {
  Vocab v = make_wp_vocab(true);
  v.lowercase = false;
  auto enc = make_wordpiece_encoder(v);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(encode_with(**enc, "CAFÉ"), std::vector<int32_t>{10});
}

TEST(WordPiece, HuggingFaceSpellingOfBgeGivesSameIds) {
  auto vocab = test::load_gguf_vocab(test::tokenizer_data_path("ggml-vocab-bert-bge.gguf"));
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  Vocab hf = *vocab;
  for (auto& t : hf.tokens) {
    if (t.rfind("\xE2\x96\x81", 0) == 0) t = t.substr(3);
    else if (t[0] != '[') t = "##" + t;
  }
  hf.build_index();
  auto enc = make_wordpiece_encoder(hf);
  ASSERT_TRUE(enc.ok());
  auto cases = test::read_vocab_cases(test::tokenizer_data_path("ggml-vocab-bert-bge.gguf.inp"),
                                      test::tokenizer_data_path("ggml-vocab-bert-bge.gguf.out"));
  ASSERT_TRUE(cases.ok());
  for (const auto& c : *cases) EXPECT_EQ(encode_with(**enc, c.text), c.ids) << c.text;
}

TEST(WordPiece, RejectsVocabularyWithoutUnknown) {
  Vocab v = make_wp_vocab(true);
  v.tokens[1] = "[NOPE]";
  v.unk_id = -1;
  v.build_index();
  EXPECT_FALSE(make_wordpiece_encoder(v).ok());
}

}  // namespace
}  // namespace edge
