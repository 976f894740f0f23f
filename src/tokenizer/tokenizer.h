// The tokenizer: splits out special/added tokens, adds BOS/EOS by the vocabulary's rules,
// and hands plain fragments to the model's Encoder. Decoding is streaming-safe through
// StreamDecoder (never emits half a UTF-8 character).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/encoder.h"
#include "tokenizer/vocab.h"

namespace edge {

class GgufFile;

class Tokenizer {
 public:
  static Expected<Tokenizer> from_vocab(Vocab vocab);
  // tokenizer.ggml.* metadata of a GGUF file.
  static Expected<Tokenizer> from_gguf(const GgufFile& gguf);
  // A Hugging Face tokenizer.json; tokenizer_config.json (optional, may be "") supplies
  // add_bos/add_eos, bos/eos tokens and the chat template.
  static Expected<Tokenizer> from_tokenizer_json(const std::string& tokenizer_json_path,
                                                 const std::string& tokenizer_config_path);
  // Qwen2-style byte-level BPE from vocab.json + merges.txt (checkpoints that ship no
  // tokenizer.json, such as Qwen3-TTS): the pipeline transformers' Qwen2 converter builds
  // (NFC, the Qwen2 split regex, byte level), special tokens from tokenizer_config.json's
  // added_tokens_decoder (config path "" = none).
  static Expected<Tokenizer> from_vocab_merges(const std::string& vocab_json_path,
                                               const std::string& merges_path,
                                               const std::string& tokenizer_config_path);
  // The same from the files' text (config "" = none); `name` labels errors.
  static Expected<Tokenizer> from_tokenizer_json_text(const std::string& tokenizer_json,
                                                      const std::string& tokenizer_config,
                                                      const std::string& name);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // add_special: add BOS/EOS as the vocabulary says. parse_special: text like
  // "<|im_start|>" becomes its special id (false: it is encoded as plain text).
  std::vector<int32_t> encode(std::string_view text, bool add_special = true,
                              bool parse_special = true) const;
  // Bytes of the ids joined (special tokens rendered only if `special`).
  std::string decode(const std::vector<int32_t>& ids, bool special = false) const;
  std::string token_text(int32_t id) const;  // raw vocab entry, for inspect/debug
  // The bytes one token adds to the text in mid-stream ("" for control tokens): what
  // decode() appends for it after the first piece.
  std::string token_piece(int32_t id) const;
  bool strips_leading_space() const;  // SPM-style: decoding drops the first piece's space

  const Vocab& vocab() const { return *vocab_; }
  int32_t n_vocab() const { return vocab_->n_tokens(); }
  int32_t bos_id() const { return vocab_->bos_id; }
  int32_t eos_id() const { return vocab_->eos_id; }
  bool is_eog(int32_t id) const;
  const std::string& chat_template() const { return chat_template_; }
  void set_chat_template(std::string t) { chat_template_ = std::move(t); }

  // Incremental decoder: push ids one by one; returns only complete UTF-8 text.
  class StreamDecoder {
   public:
    explicit StreamDecoder(const Tokenizer& tok, bool special = false) : tok_(tok), special_(special) {}
    std::string push(int32_t id);
    std::string flush();  // whatever is left (invalid bytes become U+FFFD)

   private:
    const Tokenizer& tok_;
    bool special_;
    std::string pending_;
    bool started_ = false;  // a piece was seen (SPM leading-space strip applies once)
  };

 private:
  Tokenizer();
  std::unique_ptr<Vocab> vocab_;  // heap so the encoder's reference survives moves
  std::unique_ptr<Encoder> encoder_;
  std::vector<int32_t> special_ids_;  // control + user-defined tokens, longest text first
  std::vector<size_t> special_lens_;  // distinct lengths of their texts, longest first
  bool special_first_byte_[256] = {};  // quick reject for positions no special can start at
  // Splits text into plain fragments and special ids, then encodes the fragments.
  void encode_impl(std::string_view text, bool parse_special, std::vector<int32_t>& out) const;
  std::string chat_template_;
};

}  // namespace edge
