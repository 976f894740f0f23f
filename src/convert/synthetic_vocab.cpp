#include "convert/synthetic_vocab.h"

#include <fmt/format.h>

#include <random>
#include <string>
#include <unordered_set>

#include "tokenizer/harmony.h"

namespace edge {
namespace {

constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Single-character pieces, most frequent first (English-ish order), so that early merges
// look like real word pieces.
std::vector<std::string> base_characters() {
  std::vector<std::string> chars = {kSpace};
  for (char c : std::string("etaoinshrdlcumwfgypbvkjxqz")) chars.emplace_back(1, c);
  for (char c : std::string("ETAOINSHRDLCUMWFGYPBVKJXQZ")) chars.emplace_back(1, c);
  for (char c : std::string("0123456789.,'\"!?;:-()[]{}<>/\\*&%$#@+=_~`|^")) chars.emplace_back(1, c);
  return chars;
}

void add_token(Vocab& v, std::string text, float score, TokenType type) {
  v.tokens.push_back(std::move(text));
  v.scores.push_back(score);
  v.types.push_back(type);
}

// The GPT-2 byte alphabet: printable bytes stand for themselves, the other 68 map to
// U+0100 + n in byte order (so byte-level tokens never hold a raw space or control byte).
std::vector<std::string> byte_alphabet() {
  std::vector<std::string> out(256);
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
    if (cp < 0x80) {
      out[b] = std::string(1, static_cast<char>(cp));
    } else {
      out[b] = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
  }
  return out;
}

}  // namespace

Expected<Vocab> make_synthetic_harmony_vocab(int32_t n_vocab, uint64_t seed) {
  const int32_t n_special = harmony_token_count();
  if (n_vocab < 256 + n_special + 1)
    return Status::invalid_argument(
        fmt::format("vocabulary size {} is too small for a synthetic harmony vocab (minimum {})",
                    n_vocab, 256 + n_special + 1));
  Vocab v;
  v.model = TokenizerModel::kBpe;
  v.byte_level = true;
  v.pre = "gpt-4o";
  std::unordered_set<std::string> seen;
  for (const std::string& c : byte_alphabet()) {
    seen.insert(c);
    add_token(v, c, 0.f, TokenType::kNormal);
  }
  // Merged pieces, favouring early (short, frequent-looking) ones; a space ("Ġ", U+0120)
  // only at the start of a piece, as the o200k split never puts one inside a word.
  const std::string space = "\xC4\xA0";
  std::mt19937_64 rng(seed);
  std::geometric_distribution<size_t> pick(0.01);
  while (v.n_tokens() < n_vocab - n_special) {
    const size_t n = static_cast<size_t>(v.n_tokens());
    // Left halves from byte 32 (the space) on, right halves from 33: control bytes rarely merge.
    const std::string& a = v.tokens[32 + pick(rng) % (n - 32)];
    const std::string& b = v.tokens[33 + pick(rng) % (n - 33)];
    const std::string merged = a + b;
    if (merged.size() > 16 || merged.find(space, 1) != std::string::npos || seen.count(merged))
      continue;
    seen.insert(merged);
    v.merges.push_back(a + " " + b);
    add_token(v, merged, 0.f, TokenType::kNormal);
  }
  append_harmony_tokens(v);
  v.scores.clear();  // byte-level BPE ranks by merges, not scores
  v.bos_id = v.find("<|startoftext|>");
  v.eos_id = v.find(harmony::kReturn);
  v.pad_id = v.find("<|endoftext|>");
  v.add_bos = false;
  v.build_index();
  return v;
}

Expected<Vocab> make_synthetic_vocab(int32_t n_vocab, uint64_t seed) {
  const std::vector<std::string> chars = base_characters();
  const int32_t min_vocab = 3 + 256 + static_cast<int32_t>(chars.size());
  if (n_vocab < min_vocab)
    return Status::invalid_argument(
        fmt::format("vocabulary size {} is too small for a synthetic vocab (minimum {})", n_vocab, min_vocab));
  Vocab v;
  v.model = TokenizerModel::kSpm;
  v.pre = "default";
  add_token(v, "<unk>", 0.f, TokenType::kUnknown);
  add_token(v, "<s>", 0.f, TokenType::kControl);
  add_token(v, "</s>", 0.f, TokenType::kControl);
  for (int b = 0; b < 256; ++b) add_token(v, fmt::format("<0x{:02X}>", b), 0.f, TokenType::kByte);
  std::vector<int32_t> pieces;  // ids of normal pieces, candidates for merging
  std::unordered_set<std::string> seen;
  float score = -1.f;
  for (const auto& c : chars) {
    pieces.push_back(v.n_tokens());
    seen.insert(c);
    add_token(v, c, score, TokenType::kNormal);
    score -= 1.f;
  }
  // Merged pieces: pair two existing pieces, favouring early (frequent, short) ones.
  std::mt19937_64 rng(seed);
  while (v.n_tokens() < n_vocab) {
    std::geometric_distribution<size_t> pick(0.02);
    const std::string& a = v.tokens[pieces[pick(rng) % pieces.size()]];
    const std::string& b = v.tokens[pieces[pick(rng) % pieces.size()]];
    std::string merged = a + b;
    // "▁" only at the start of a piece, as in real SentencePiece vocabularies.
    if (merged.size() > 24 || merged.find(kSpace, 1) != std::string::npos || seen.count(merged)) continue;
    seen.insert(merged);
    // Every split of `merged` into two existing pieces is a merge of this rank.
    for (size_t cut = 1; cut < merged.size(); ++cut) {
      std::string l = merged.substr(0, cut), r = merged.substr(cut);
      if (seen.count(l) && seen.count(r) && l != merged && r != merged) v.merges.push_back(l + " " + r);
    }
    pieces.push_back(v.n_tokens());
    add_token(v, merged, score, TokenType::kNormal);
    score -= 1.f;
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.eog_ids = {2};
  v.add_bos = true;
  v.add_space_prefix = true;
  v.byte_fallback = true;
  v.build_index();
  return v;
}

}  // namespace edge
