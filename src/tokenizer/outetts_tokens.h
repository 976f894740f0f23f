// The added tokens of an OuteTTS speech-code vocabulary (0.2 and 0.3), for made-up models
// (`make-model --arch outetts`), in OuteTTS-0.2's order: text and audio delimiters, the
// audio codes <|0|>..<|4099|> (contiguous ids; WavTokenizer uses the first 4096), the word
// durations <|t_0.00|>..<|t_3.00|> (one per 10 ms), then the chat markers and 0.3's
// <|space|>. On a 151665-token base (Qwen2.5's size) the ids are OuteTTS-0.2's: <|0|> is
// 151672 and <|t_0.00|> 155772, the ids llama.cpp's `tts` example hard-codes. Names as in
// OuteTTS; the prompt and the code mapping are in pipeline/stages/outetts/outetts_prompt.h.
#pragma once

#include <cstdint>

#include "tokenizer/vocab.h"

namespace edge {

constexpr int32_t kOuteTtsCodes = 4100;     // code tokens <|0|>..<|4099|>
constexpr int32_t kOuteTtsCodebook = 4096;  // the codes WavTokenizer decodes
constexpr int32_t kOuteTtsDurations = 301;  // <|t_0.00|> .. <|t_3.00|>
// Tokens appended by append_outetts_tokens.
int32_t outetts_token_count();
// Appends them (control tokens; they follow the vocabulary's own).
void append_outetts_tokens(Vocab& v);

}  // namespace edge
