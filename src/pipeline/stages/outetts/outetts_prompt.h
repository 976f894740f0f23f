// The OuteTTS prompt (speech-code language models of OuteTTS 0.2 and 0.3, the layout
// llama.cpp's `tts` example builds): text normalised to lowercase words, then
//
//   <|im_start|>\n<|text_start|>w1 SEP w2 SEP ... <|text_end|>\n<|audio_start|>\n
//   [speaker words: word<|t_D.DD|>CODE_START<|c|>...CODE_END\n ...]
//
// where SEP is <|text_sep|> (0.2) or <|space|> (0.3), CODE_START is <|code_start|> (0.2)
// or nothing (0.3) and CODE_END is <|code_end|> (0.2) or <|space|> (0.3). The model goes
// on with the words of the text in the same layout and ends with <|audio_end|>. Audio
// codes are the tokens <|0|>, <|1|>, ...: code = id - id(<|0|>).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace edge::pipeline {

enum class OuteTtsVersion { kV0_2, kV0_3 };

// A reference voice: its words with their durations (seconds) and audio codes (OuteTTS
// speaker profiles: {"words": [{"word", "duration", "codes"}]}).
struct SpeakerWord {
  std::string word;
  double duration = 0;
  std::vector<int32_t> codes;
};
struct Speaker {
  std::vector<SpeakerWord> words;
};
// A speaker profile's JSON text.
Expected<Speaker> parse_speaker_json(const std::string& text);

// Numbers as English words: "42" -> "forty two", "3.14" -> "three point one four".
std::string number_to_words(const std::string& digits);
// Lowercase, numbers spelled out, - _ / , . \ as spaces, every other character that is not
// a-z or whitespace dropped, whitespace collapsed: the words OuteTTS speaks (English).
std::vector<std::string> normalize_tts_text(const std::string& text);

// The special tokens of an OuteTTS vocabulary, looked up by name.
struct OuteTtsVocab {
  OuteTtsVersion version = OuteTtsVersion::kV0_2;
  int32_t code0 = -1;    // <|0|>
  int32_t n_codes = 0;   // <|0|> .. <|n_codes-1|>, contiguous ids
  int32_t code_start = -1, code_end = -1, space = -1, audio_end = -1;
  std::vector<std::pair<int32_t, double>> times;  // <|t_D.DD|> ids and their seconds
  bool is_code(int32_t id) const { return id >= code0 && id < code0 + n_codes; }
};
// Refuses a vocabulary without the tokens the version needs, naming the first missing.
// The version: 0.3 when the model's chat template is "outetts-0.3" (llama.cpp's marker),
// else 0.2.
Expected<OuteTtsVocab> find_outetts_vocab(const Tokenizer& tok);

// The prompt text for `words` (from normalize_tts_text) and an optional speaker.
std::string outetts_prompt(OuteTtsVersion v, const std::vector<std::string>& words,
                           const Speaker* speaker);

}  // namespace edge::pipeline
