// Tokenizer: special/added-token splitting, BOS/EOS, dispatch to the model's Encoder,
// decoding and streaming-safe decoding.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "formats/gguf.h"
#include "tokenizer/harmony.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab_io.h"

namespace edge {

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

namespace {

Status validate_vocab(Vocab& v) {
  if (v.tokens.empty()) return Status::invalid_format("tokenizer vocabulary is empty");
  const size_t n = v.tokens.size();
  if (v.types.empty()) v.types.assign(n, TokenType::kNormal);
  if (v.types.size() != n)
    return Status::invalid_format("token_type has " + std::to_string(v.types.size()) + " entries for " +
                                  std::to_string(n) + " tokens");
  if (!v.scores.empty() && v.scores.size() != n)
    return Status::invalid_format("scores has " + std::to_string(v.scores.size()) + " entries for " +
                                  std::to_string(n) + " tokens");
  const std::pair<const char*, int32_t*> ids[] = {{"bos", &v.bos_id}, {"eos", &v.eos_id}, {"unk", &v.unk_id},
                                                  {"pad", &v.pad_id}, {"sep", &v.sep_id}, {"cls", &v.cls_id}};
  for (const auto& [name, id] : ids) {
    if (*id >= static_cast<int32_t>(n))
      return Status::out_of_range(std::string(name) + " token id " + std::to_string(*id) + " is past the " +
                                  std::to_string(n) + "-token vocabulary");
    if (*id < -1) *id = -1;
  }
  for (int32_t id : v.eog_ids)
    if (id < 0 || id >= static_cast<int32_t>(n))
      return Status::out_of_range("end-of-generation id " + std::to_string(id) + " is outside the vocabulary");
  if (v.token_to_id.empty()) v.build_index();
  if (v.eog_ids.empty()) fill_eog_ids(v);
  apply_harmony_rules(v);
  return Status();
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// llama.cpp's rule for Phi-3 GGUFs: special tokens eat the whitespace after them, except
// <unk>, <s> and <|endoftext|>.
void apply_phi3_rstrip(Vocab& v, const std::string& name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n.find("phi3") == std::string::npos && n.find("phi-3") == std::string::npos) return;
  v.strip.resize(v.tokens.size(), 0);
  for (int32_t id = 0; id < v.n_tokens(); ++id) {
    const TokenType t = id < static_cast<int32_t>(v.types.size()) ? v.types[id] : TokenType::kNormal;
    const std::string& s = v.tokens[id];
    const bool exempt = s == "<unk>" || s == "<s>" || s == "<|endoftext|>";
    if ((t == TokenType::kControl || t == TokenType::kUserDefined || s == "</s>") && !exempt)
      v.strip[id] |= Vocab::kStripRight;
  }
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_vocab(Vocab vocab) {
  RETURN_IF_ERROR(validate_vocab(vocab));
  Tokenizer tok;
  tok.vocab_ = std::make_unique<Vocab>(std::move(vocab));
  const Vocab& v = *tok.vocab_;
  switch (v.model) {
    case TokenizerModel::kSpm: { ASSIGN_OR_RETURN(tok.encoder_, make_spm_encoder(v)); break; }
    case TokenizerModel::kBpe: { ASSIGN_OR_RETURN(tok.encoder_, make_byte_bpe_encoder(v)); break; }
    case TokenizerModel::kWordPiece: { ASSIGN_OR_RETURN(tok.encoder_, make_wordpiece_encoder(v)); break; }
  }
  // Control, unknown and user-defined tokens are matched in the text before the encoder.
  for (int32_t id = 0; id < v.n_tokens(); ++id) {
    const TokenType t = v.types[id];
    if ((t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) &&
        !v.tokens[id].empty())
      tok.special_ids_.push_back(id);
  }
  std::stable_sort(tok.special_ids_.begin(), tok.special_ids_.end(),
                   [&](int32_t a, int32_t b) { return v.tokens[a].size() > v.tokens[b].size(); });
  std::set<size_t, std::greater<size_t>> lens;
  for (int32_t id : tok.special_ids_) {
    lens.insert(v.tokens[id].size());
    tok.special_first_byte_[static_cast<uint8_t>(v.tokens[id][0])] = true;
  }
  tok.special_lens_.assign(lens.begin(), lens.end());
  return tok;
}

Expected<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf) {
  ASSIGN_OR_RETURN(Vocab vocab, read_vocab_gguf(gguf));
  apply_phi3_rstrip(vocab, gguf.get_string_or("general.name", ""));
  ASSIGN_OR_RETURN(Tokenizer tok, from_vocab(std::move(vocab)));
  tok.chat_template_ = gguf.get_string_or("tokenizer.chat_template", "");
  return tok;
}

void Tokenizer::encode_impl(std::string_view text, bool parse_special, std::vector<int32_t>& out) const {
  const Vocab& v = *vocab_;
  bool first = true;
  size_t frag_start = 0;
  auto flush = [&](size_t end) {
    if (end <= frag_start) return;
    std::string_view frag = text.substr(frag_start, end - frag_start);
    if (v.normalize_nfc) {
      encoder_->encode(utf8_nfc(frag), first, out);
    } else {
      encoder_->encode(frag, first, out);
    }
    first = false;
  };
  size_t i = 0;
  while (i < text.size()) {
    int32_t hit = -1;
    size_t hit_len = 0;
    if (special_first_byte_[static_cast<uint8_t>(text[i])]) {
      for (size_t len : special_lens_) {  // longest first
        if (i + len > text.size()) continue;
        const int32_t id = v.find(std::string(text.substr(i, len)));
        if (id < 0) continue;
        const TokenType t = v.types[id];
        // User-defined (HF non-special added) tokens always split; control ones only when
        // special text is parsed.
        const bool ok = t == TokenType::kUserDefined ||
                        (parse_special && (t == TokenType::kControl || t == TokenType::kUnknown));
        if (ok) { hit = id; hit_len = len; break; }
      }
    }
    if (hit < 0) { ++i; continue; }
    const uint8_t strip = static_cast<size_t>(hit) < v.strip.size() ? v.strip[hit] : 0;
    size_t end = i;
    if (strip & Vocab::kStripLeft)
      while (end > frag_start && is_space(text[end - 1])) --end;
    flush(end);
    out.push_back(hit);
    i += hit_len;
    if (strip & Vocab::kStripRight)
      while (i < text.size() && is_space(text[i])) ++i;
    frag_start = i;
    first = true;  // a fragment after a special token is a new start (SPM space prefix)
  }
  flush(text.size());
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  const Vocab& v = *vocab_;
  if (add_special && v.add_bos && v.bos_id >= 0) out.push_back(v.bos_id);
  encode_impl(text, parse_special, out);
  if (add_special && v.add_eos && v.eos_id >= 0) out.push_back(v.eos_id);
  return out;
}

bool Tokenizer::strips_leading_space() const {
  const Vocab& v = *vocab_;
  return v.add_space_prefix && (v.model == TokenizerModel::kSpm ||
                                (v.model == TokenizerModel::kBpe && !v.byte_level));
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool special) const {
  std::string out;
  bool started = false;
  for (int32_t id : ids) {
    std::string piece = encoder_->decode_token(id, special);
    if (!started && !piece.empty()) {
      started = true;
      if (strips_leading_space() && piece[0] == ' ') piece.erase(0, 1);
    }
    out += piece;
  }
  return out;
}

std::string Tokenizer::token_piece(int32_t id) const {
  if (id < 0 || id >= vocab_->n_tokens()) return "";
  return encoder_->decode_token(id, /*special=*/false);
}

std::string Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= vocab_->n_tokens()) return "";
  return vocab_->tokens[id];
}

bool Tokenizer::is_eog(int32_t id) const {
  if (id < 0) return false;
  if (id == vocab_->eos_id) return true;
  return std::find(vocab_->eog_ids.begin(), vocab_->eog_ids.end(), id) != vocab_->eog_ids.end();
}

std::string Tokenizer::StreamDecoder::push(int32_t id) {
  std::string piece = tok_.encoder_->decode_token(id, special_);
  if (!started_ && !piece.empty()) {
    started_ = true;
    if (tok_.strips_leading_space() && piece[0] == ' ') piece.erase(0, 1);
  }
  pending_ += piece;
  std::string out;
  const size_t used = utf8_sanitize(pending_, /*final=*/false, out);
  pending_.erase(0, used);
  return out;
}

std::string Tokenizer::StreamDecoder::flush() {
  std::string out;
  utf8_sanitize(pending_, /*final=*/true, out);
  pending_.clear();
  return out;
}

}  // namespace edge
