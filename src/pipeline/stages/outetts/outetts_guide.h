// Guidance for an OuteTTS speech-code model (outetts_prompt.h): a TokenGuide that lets the
// model emit only what the prompt layout allows after <|audio_start|>, word by word:
//
//   WORD TIME [<|code_start|>] CODE{1..n} END NEWLINE ... <|audio_end|>
//
// WORD is the next word of the text, forced token by token; TIME one duration token
// <|t_D.DD|> (at most max_word_seconds); CODE an audio code token <|c|>; END <|code_end|>
// (0.2) or <|space|> (0.3), allowed after the first code and forced once the codes cover
// the duration (75 codes per second: WavTokenizer's 24 kHz / hop 320); NEWLINE the tokens
// of "\n". After the last word only <|audio_end|> (a stop token) is allowed. So whatever
// the weights, the output parses: every code the vocoder gets is a code token.
#pragma once

#include <memory>
#include <vector>

#include "pipeline/stages/outetts/outetts_prompt.h"
#include "runtime/sampler.h"

namespace edge::pipeline {

struct OuteTtsGuideOptions {
  int32_t codebook = 4096;  // codes the vocoder knows (kOuteTtsCodebook; OuteTTS-0.2 has 4100 code tokens)
  double codes_per_second = 75.0;
  double max_word_seconds = 3.0;  // longer duration tokens are not allowed
};

class OuteTtsGuide final : public TokenGuide {
 public:
  // words: the text's words, each already tokenised (the forced tokens); newline: "\n".
  OuteTtsGuide(const OuteTtsVocab& vocab, std::vector<std::vector<int32_t>> words,
               std::vector<int32_t> newline, const OuteTtsGuideOptions& o = {});
  std::span<const int32_t> allowed(std::span<const int32_t> generated) override;

  // Tokens a full utterance can take at most (a bound for max_tokens).
  int64_t max_tokens() const;

 private:
  enum class State { kWord, kTime, kCodeStart, kCodes, kNewline, kEnd };
  void reset();
  void consume(int32_t id);
  void fill_allowed();

  OuteTtsVocab vocab_;
  std::vector<std::vector<int32_t>> words_;
  std::vector<int32_t> newline_;
  OuteTtsGuideOptions options_;
  std::vector<int32_t> codes_, times_;  // all code ids; the allowed duration ids
  std::vector<double> seconds_;         // by id - min time id: duration of a time token
  int32_t time_min_ = 0;
  // Where the generated tokens have brought the layout.
  State state_ = State::kWord;
  size_t word_ = 0, pos_ = 0;  // word index and token within the word (or the newline)
  int64_t n_codes_ = 0, target_codes_ = 0;
  size_t consumed_ = 0;
  std::vector<int32_t> allowed_;
};

}  // namespace edge::pipeline
