#include "convert/synthetic_vocab.h"

#include <fmt/format.h>

#include <random>
#include <string>
#include <unordered_set>

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

}  // namespace

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
