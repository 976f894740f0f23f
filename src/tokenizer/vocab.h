// Vocabulary data shared by every tokenizer model, filled either from GGUF metadata
// (tokenizer.ggml.*) or from a Hugging Face tokenizer.json (+ tokenizer_config.json).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace edge {

// GGUF token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4,
  kUnused = 5, kByte = 6,
};

enum class TokenizerModel { kSpm, kBpe, kWordPiece };

struct Vocab {
  TokenizerModel model = TokenizerModel::kBpe;
  std::vector<std::string> tokens;     // id -> text (SPM uses U+2581 for space,
                                       // byte-level BPE uses the GPT-2 byte alphabet)
  std::vector<float> scores;           // SPM piece scores; may be empty for BPE
  std::vector<TokenType> types;        // id -> type
  std::vector<std::string> merges;     // BPE merges "left right", highest priority first
  std::unordered_map<std::string, int32_t> token_to_id;
  std::string pre;                     // pre-tokeniser name: "default", "llama3"/"llama-bpe",
                                       // "qwen2", "gpt-2", "deepseek-coder", ...
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1, sep_id = -1, cls_id = -1;
  std::vector<int32_t> eog_ids;        // end-of-generation ids (eos, <|im_end|>, <eot_id> ...)
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;       // SPM: prepend a space to the text
  bool byte_fallback = false;          // SPM/BPE: unknown bytes become <0xXX> tokens
  bool ignore_merges = false;          // Llama-3: a word found whole in the vocab is one token
  bool lowercase = false;              // WordPiece (BERT uncased)
  // kBpe only: true = GPT-2 byte-level alphabet; false = SentencePiece-style pieces
  // (U+2581 for space, <0xXX> byte fallback) merged by rank, as in HF tokenizer.json
  // "BPE" models with byte_fallback (Gemma-3, Llama-2 HF).
  bool byte_level = true;
  bool normalize_nfc = false;          // HF "NFC" normalizer (Qwen2/3), per plain fragment
  // Split regexes from a tokenizer.json that match no known `pre` name (pre = "custom").
  std::vector<std::string> pre_regexes;
  // Per id (empty = none): kStripLeft / kStripRight make a special token swallow the
  // whitespace before / after it (HF added-token lstrip/rstrip; llama.cpp's Phi-3 rule).
  static constexpr uint8_t kStripLeft = 1, kStripRight = 2;
  std::vector<uint8_t> strip;

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t find(const std::string& s) const {
    auto it = token_to_id.find(s);
    return it == token_to_id.end() ? -1 : it->second;
  }
  void build_index() {
    token_to_id.clear();
    for (int32_t i = 0; i < n_tokens(); ++i) token_to_id.emplace(tokens[i], i);
  }
};

}  // namespace edge
