// The OuteTTS prompt, its text normalisation and the guide that keeps a speech-code LM to
// the prompt's layout.
#include "pipeline/stages/outetts/outetts_prompt.h"

#include <gtest/gtest.h>

#include <random>

#include "convert/synthetic_vocab.h"
#include "pipeline/stages/outetts/outetts_guide.h"
#include "tokenizer/outetts_tokens.h"

namespace edge::pipeline {
namespace {

TEST(OuteTtsText, NumbersBecomeWords) {
  EXPECT_EQ(number_to_words("0"), "zero");
  EXPECT_EQ(number_to_words("42"), "forty two");
  EXPECT_EQ(number_to_words("115"), "one hundred fifteen");
  EXPECT_EQ(number_to_words("2026"), "two thousand twenty six");
  EXPECT_EQ(number_to_words("1000001"), "one million one");
  EXPECT_EQ(number_to_words("3.14"), "three point one four");
  EXPECT_EQ(number_to_words("007"), "seven");
}

TEST(OuteTtsText, LowercaseWordsWithoutPunctuation) {
  const std::vector<std::string> want = {"hello", "world", "its", "three", "point", "five",
                                         "past",  "two",   "and", "or",    "not"};
  EXPECT_EQ(normalize_tts_text("  Hello, WORLD! It's 3.5 past 2 -- and/or not."), want);
  EXPECT_TRUE(normalize_tts_text("?!… ¿").empty());
  EXPECT_EQ(normalize_tts_text("caf\xC3\xA9 ok"), (std::vector<std::string>{"caf", "ok"}));
}

Speaker two_word_speaker() {
  auto s = parse_speaker_json(
      R"({"words": [{"word": "hi", "duration": 0.08, "codes": [1, 2]},
                    {"word": "there", "duration": 0.5, "codes": [3]}]})");
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return *s;
}

TEST(OuteTtsPrompt, Version02Layout) {
  const Speaker sp = two_word_speaker();
  EXPECT_EQ(outetts_prompt(OuteTtsVersion::kV0_2, {"good", "day"}, &sp),
            "<|im_start|>\n<|text_start|>hi<|text_sep|>there<|text_sep|>good<|text_sep|>day"
            "<|text_end|>\n<|audio_start|>\n"
            "hi<|t_0.08|><|code_start|><|1|><|2|><|code_end|>\n"
            "there<|t_0.50|><|code_start|><|3|><|code_end|>\n");
  EXPECT_EQ(outetts_prompt(OuteTtsVersion::kV0_2, {"good"}, nullptr),
            "<|im_start|>\n<|text_start|>good<|text_end|>\n<|audio_start|>\n");
}

TEST(OuteTtsPrompt, Version03Layout) {
  const Speaker sp = two_word_speaker();
  EXPECT_EQ(outetts_prompt(OuteTtsVersion::kV0_3, {"good", "day"}, &sp),
            "<|im_start|>\n<|text_start|>hi<|space|>there<|space|>good<|space|>day"
            "<|text_end|>\n<|audio_start|>\n"
            "hi<|t_0.08|><|1|><|2|><|space|>\n"
            "there<|t_0.50|><|3|><|space|>\n");
}

TEST(OuteTtsPrompt, SpeakerProfileErrorsAreStatuses) {
  EXPECT_FALSE(parse_speaker_json("{").ok());
  EXPECT_FALSE(parse_speaker_json(R"({"words": [{"word": "x"}]})").ok());
  EXPECT_FALSE(
      parse_speaker_json(R"({"words": [{"word": "x", "duration": 1, "codes": []}]})").ok());
}

Tokenizer outetts_tokenizer(bool v3) {
  auto v = make_synthetic_vocab(512, 3);
  EXPECT_TRUE(v.ok());
  append_outetts_tokens(*v);
  auto tok = Tokenizer::from_vocab(std::move(*v));
  EXPECT_TRUE(tok.ok());
  if (v3) tok->set_chat_template("outetts-0.3");
  return std::move(*tok);
}

TEST(OuteTtsVocab, FoundByName) {
  const Tokenizer tok = outetts_tokenizer(false);
  auto o = find_outetts_vocab(tok);
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->version, OuteTtsVersion::kV0_2);
  EXPECT_EQ(o->n_codes, kOuteTtsCodes);
  EXPECT_EQ(tok.vocab().tokens[o->code0 + 4099], "<|4099|>");
  EXPECT_EQ(o->code0, 512 + 7);  // after <|text_start|> .. <|text_sep|>, as in OuteTTS-0.2
  EXPECT_EQ(tok.vocab().tokens[o->code0 + 4100], "<|t_0.00|>");
  EXPECT_EQ(o->times.size(), static_cast<size_t>(kOuteTtsDurations));
  // The prompt's special tokens are single ids.
  const auto ids = tok.encode("<|audio_start|>\nab<|t_0.08|><|code_start|><|17|>", false);
  ASSERT_GE(ids.size(), 5u);
  EXPECT_EQ(ids.back(), o->code0 + 17);
  EXPECT_EQ(ids[ids.size() - 2], o->code_start);
  EXPECT_EQ(find_outetts_vocab(outetts_tokenizer(true))->version, OuteTtsVersion::kV0_3);
  auto plain = Tokenizer::from_vocab(*make_synthetic_vocab(512, 3));
  EXPECT_FALSE(find_outetts_vocab(*plain).ok());
}

// Drives the guide like a model that draws uniformly among the allowed tokens, then checks
// that what came out parses as the layout, word by word.
void check_guided_layout(bool v3, uint64_t seed) {
  const Tokenizer tok = outetts_tokenizer(v3);
  const OuteTtsVocab vocab = *find_outetts_vocab(tok);
  const std::vector<std::vector<int32_t>> words = {tok.encode("hello", false),
                                                   tok.encode("there", false)};
  const std::vector<int32_t> nl = tok.encode("\n", false);
  OuteTtsGuideOptions go;
  go.max_word_seconds = 0.2;  // at most 15 codes a word
  OuteTtsGuide guide(vocab, words, nl, go);
  std::mt19937_64 rng(seed);
  std::vector<int32_t> out;
  while (out.empty() || out.back() != vocab.audio_end) {
    auto allowed = guide.allowed(out);
    ASSERT_FALSE(allowed.empty());
    out.push_back(allowed[rng() % allowed.size()]);
    ASSERT_LT(out.size(), 200u) << "the guide never reached <|audio_end|>";
  }
  EXPECT_LE(static_cast<int64_t>(out.size()), guide.max_tokens());
  size_t i = 0;
  for (const auto& w : words) {
    for (int32_t id : w) ASSERT_EQ(out[i++], id);
    const int32_t time = out[i++];
    double seconds = -1;
    for (const auto& [id, s] : vocab.times)
      if (id == time) seconds = s;
    ASSERT_GE(seconds, 0.0);
    ASSERT_LE(seconds, 0.2);
    if (!v3) {
      ASSERT_EQ(out[i++], vocab.code_start);
    }
    int n = 0;
    while (vocab.is_code(out[i])) {
      ASSERT_LT(out[i] - vocab.code0, 4096) << "beyond the vocoder's codebook";
      ++n, ++i;
    }
    EXPECT_GE(n, 1);
    EXPECT_LE(n, std::max<int>(1, static_cast<int>(std::lround(seconds * 75))));
    ASSERT_EQ(out[i++], vocab.code_end);
    for (int32_t id : nl) ASSERT_EQ(out[i++], id);
  }
  EXPECT_EQ(out[i++], vocab.audio_end);
  EXPECT_EQ(i, out.size());
}

TEST(OuteTtsGuide, OutputAlwaysParsesAsTheLayout) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    check_guided_layout(false, seed);
    check_guided_layout(true, seed);
  }
}

TEST(OuteTtsGuide, ReplayFromTheStartGivesTheSameState) {
  const Tokenizer tok = outetts_tokenizer(false);
  const OuteTtsVocab vocab = *find_outetts_vocab(tok);
  OuteTtsGuide guide(vocab, {tok.encode("go", false)}, tok.encode("\n", false));
  std::vector<int32_t> out;
  for (int i = 0; i < 6; ++i) out.push_back(guide.allowed(out).back());
  const auto first = guide.allowed(out);
  const std::vector<int32_t> next(first.begin(), first.end());
  (void)guide.allowed(std::span<const int32_t>(out).first(2));  // preempted: replayed shorter
  const auto again = guide.allowed(out);
  EXPECT_EQ(std::vector<int32_t>(again.begin(), again.end()), next);
}

}  // namespace
}  // namespace edge::pipeline
