// A made-up SentencePiece-style vocabulary for models written by `make-model` (random
// weights need some tokenizer so every command works end to end). Layout, like Llama-2:
//   0 <unk>, 1 <s>, 2 </s>, 3..258 byte tokens <0x00>..<0xFF>, then single characters
//   (U+2581 "▁" for space, letters, digits, punctuation), then merged pieces.
// Each merged piece records every split into two earlier pieces in `merges`, ranked in
// piece order, so score-based SPM merging (GGUF) and rank-based BPE merging
// (tokenizer.json) pick the same pairs.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "tokenizer/vocab.h"

namespace edge {

// n_vocab must be at least 259 + the character set (about 360); deterministic in seed.
Expected<Vocab> make_synthetic_vocab(int32_t n_vocab, uint64_t seed);

// A made-up GPT-OSS-style vocabulary: byte-level BPE ("gpt2" in GGUF) with the o200k
// pre-tokenizer ("gpt-4o"): the 256 bytes in the GPT-2 alphabet, merged pieces (each with
// the merge that makes it, ranked in piece order), then the harmony special tokens
// (tokenizer/harmony.h: append_harmony_tokens) as the last ids, like o200k_harmony. BOS is
// <|startoftext|>, EOS <|return|>, padding <|endoftext|>; no BOS is added. Pair it with
// harmony_chat_template() as tokenizer.chat_template. n_vocab counts everything and must
// be at least 256 + harmony_token_count() + 1; deterministic in seed.
Expected<Vocab> make_synthetic_harmony_vocab(int32_t n_vocab, uint64_t seed);

}  // namespace edge
