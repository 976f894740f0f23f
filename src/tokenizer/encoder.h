// A subword encoder turns one fragment of plain text (special tokens already split out,
// no BOS/EOS) into ids, and turns one id back into its bytes. One implementation per
// tokenizer model: spm.cpp (SentencePiece BPE with byte fallback), byte_bpe.cpp
// (byte-level BPE with regex pre-tokenisation), wordpiece.cpp (BERT).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/vocab.h"

namespace edge {

class Encoder {
 public:
  virtual ~Encoder() = default;
  // `first` is true for the first fragment of the text and for a fragment that follows
  // a special token (SPM adds its space prefix only there).
  virtual void encode(std::string_view fragment, bool first, std::vector<int32_t>& out) const = 0;
  // The bytes this token stands for in the output text (may be a partial UTF-8 sequence
  // for byte tokens). Control tokens decode to their text only when `special` is true.
  virtual std::string decode_token(int32_t id, bool special) const = 0;
};

// The vocab must outlive the encoder. Errors name what is missing (e.g. no merges).
Expected<std::unique_ptr<Encoder>> make_spm_encoder(const Vocab& vocab);
Expected<std::unique_ptr<Encoder>> make_byte_bpe_encoder(const Vocab& vocab);
Expected<std::unique_ptr<Encoder>> make_wordpiece_encoder(const Vocab& vocab);

}  // namespace edge
