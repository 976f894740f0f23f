// The added tokens of an OuteTTS speech-code vocabulary (0.2 and 0.3), for made-up models
// (`make-model --arch outetts`): chat markers, text and audio delimiters, the audio codes
// <|0|>..<|4095|> (one per WavTokenizer code, contiguous ids) and the word durations
// <|t_0.00|>..<|t_3.00|> (one per 10 ms). Names as in OuteTTS; the prompt and the code
// mapping are in pipeline/outetts_prompt.h.
#pragma once

#include <cstdint>

#include "tokenizer/vocab.h"

namespace edge {

constexpr int32_t kOuteTtsCodes = 4096;
constexpr int32_t kOuteTtsDurations = 301;  // <|t_0.00|> .. <|t_3.00|>
// Tokens appended by append_outetts_tokens.
int32_t outetts_token_count();
// Appends them (control tokens; they follow the vocabulary's own).
void append_outetts_tokens(Vocab& v);

}  // namespace edge
