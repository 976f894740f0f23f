// Vocabulary <-> file formats: GGUF tokenizer.ggml.* metadata (both ways) and a Hugging
// Face tokenizer.json (writing, for model directories of made-up models; reading lives in
// tokenizer_json.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "formats/gguf.h"
#include "tokenizer/vocab.h"

namespace edge {

// Reads tokenizer.ggml.* (model, pre, tokens, scores, token_type, merges, special ids,
// add_bos/add_eos/add_space_prefix). not_found if the file has no tokenizer; unsupported
// naming an unknown tokenizer.ggml.model. Fills token_to_id and eog_ids.
Expected<Vocab> read_vocab_gguf(const GgufFile& gguf);
// Writes the same keys. A SentencePiece-style BPE vocabulary (kBpe, !byte_level) is
// written as model "llama" with its merges and scores derived from merge ranks, which
// read_vocab_gguf maps back to kBpe (a "llama" tokenizer with merges).
Status write_vocab_gguf(const Vocab& vocab, GgufWriter& writer);

// The end-of-generation ids: eos plus well-known end-of-turn tokens present in the
// vocabulary. Called by the loaders; exposed for made-up vocabularies.
void fill_eog_ids(Vocab& vocab);

// A tokenizer.json for the vocabulary: SPM vocabularies become a BPE model with
// byte_fallback, merges derived from the pieces (best-scored result first) and the U+2581
// normalizer; byte-level BPE vocabularies get the ByteLevel pre-tokenizer and decoder.
// Control and user-defined tokens go to added_tokens.
nlohmann::json vocab_to_tokenizer_json(const Vocab& vocab);

}  // namespace edge
