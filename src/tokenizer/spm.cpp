// SentencePiece-style BPE as llama.cpp runs it on a GGUF "llama" vocabulary: the text is
// cut into UTF-8 characters, then the adjacent pair whose concatenation is a vocabulary
// piece with the highest score is merged, again and again (ties: leftmost pair first).
// Characters that never became a piece fall back to byte tokens <0xXX>.
//
// The symbols form a doubly linked list over the text and candidate pairs sit in a
// max-heap; a pair popped after one of its sides changed is stale and skipped. Each merge
// pushes at most two new pairs, so a text of n characters costs O(n log n).
#include <array>
#include <cstdio>
#include <queue>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tokenizer/encoder.h"

namespace edge {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Byte length of the UTF-8 sequence that starts with `lead`. A stray continuation byte
// or an invalid lead counts as one byte so that malformed input still advances.
size_t utf8_len(unsigned char lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF8) return 4;
  return 1;
}

// "<0x41>" -> 0x41; -1 when the text is not a byte token.
int parse_byte_token(const std::string& t) {
  if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = t[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else return -1;
  }
  return v;
}

class SpmEncoder final : public Encoder {
 public:
  SpmEncoder(const Vocab& vocab, std::array<int32_t, 256> byte_ids)
      : vocab_(vocab), byte_ids_(byte_ids) {}

  void encode(std::string_view fragment, bool first, std::vector<int32_t>& out) const override;
  std::string decode_token(int32_t id, bool special) const override;

 private:
  struct Symbol {
    uint32_t start;  // byte offset into the escaped text
    uint32_t len;    // 0 once merged into its left neighbour
    int32_t prev, next;
  };
  struct Pair {
    float score;
    int32_t left, right;
    uint32_t len;  // byte length of the merged piece; detects stale pairs
  };
  struct PairLess {
    bool operator()(const Pair& a, const Pair& b) const {
      // std::priority_queue pops the largest: highest score, then smallest left index.
      return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
  };
  using PairQueue = std::priority_queue<Pair, std::vector<Pair>, PairLess>;

  void push_pair(const std::string& text, const std::vector<Symbol>& syms, int32_t l, int32_t r,
                 std::string& key, PairQueue& queue) const;
  void emit_symbol(std::string_view piece, std::string& key, std::vector<int32_t>& out) const;

  const Vocab& vocab_;
  std::array<int32_t, 256> byte_ids_;
};

void SpmEncoder::push_pair(const std::string& text, const std::vector<Symbol>& syms, int32_t l,
                           int32_t r, std::string& key, PairQueue& queue) const {
  if (l < 0 || r < 0) return;
  const uint32_t len = syms[l].len + syms[r].len;
  key.assign(text, syms[l].start, len);  // reuses key's buffer: no allocation per lookup
  const int32_t id = vocab_.find(key);
  if (id < 0 || id >= static_cast<int32_t>(vocab_.scores.size())) return;
  queue.push(Pair{vocab_.scores[id], l, r, len});
}

void SpmEncoder::emit_symbol(std::string_view piece, std::string& key,
                             std::vector<int32_t>& out) const {
  key.assign(piece);
  const int32_t id = vocab_.find(key);
  if (id >= 0) {
    out.push_back(id);
    return;
  }
  // Only single characters can miss (a merge always yields a piece): one token per byte.
  for (unsigned char b : piece) out.push_back(byte_ids_[b]);
}

void SpmEncoder::encode(std::string_view fragment, bool first, std::vector<int32_t>& out) const {
  if (fragment.empty()) return;  // llama.cpp makes no fragment of empty text: no "▁" alone
  std::string text;
  text.reserve(fragment.size() + 3 * 8);
  if (first && vocab_.add_space_prefix) text += kSpaceMark;
  for (char c : fragment) {
    if (c == ' ') text += kSpaceMark;
    else text += c;
  }

  std::vector<Symbol> syms;
  syms.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    const size_t n = std::min(utf8_len(static_cast<unsigned char>(text[off])), text.size() - off);
    const int32_t idx = static_cast<int32_t>(syms.size());
    syms.push_back(Symbol{static_cast<uint32_t>(off), static_cast<uint32_t>(n), idx - 1, idx + 1});
    off += n;
  }
  syms.back().next = -1;

  std::string key;
  PairQueue queue;
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) push_pair(text, syms, i - 1, i, key, queue);

  while (!queue.empty()) {
    const Pair p = queue.top();
    queue.pop();
    Symbol& left = syms[p.left];
    Symbol& right = syms[p.right];
    // Stale: a side was merged away, or grew since the pair was pushed.
    if (left.len == 0 || right.len == 0 || left.len + right.len != p.len) continue;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = p.left;
    push_pair(text, syms, left.prev, p.left, key, queue);
    push_pair(text, syms, p.left, left.next, key, queue);
  }

  for (int32_t i = 0; i >= 0; i = syms[i].next)
    emit_symbol(std::string_view(text).substr(syms[i].start, syms[i].len), key, out);
}

std::string SpmEncoder::decode_token(int32_t id, bool special) const {
  if (id < 0 || id >= vocab_.n_tokens()) return {};
  const std::string& text = vocab_.tokens[id];
  const TokenType type =
      id < static_cast<int32_t>(vocab_.types.size()) ? vocab_.types[id] : TokenType::kNormal;
  switch (type) {
    case TokenType::kByte: {
      const int b = parse_byte_token(text);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : text;
    }
    case TokenType::kControl:
    case TokenType::kUnknown:  // as llama.cpp: <unk> renders only with special
      return special ? text : std::string();
    case TokenType::kUserDefined:  // added tokens are stored verbatim
      return text;
    case TokenType::kUnused:
      return {};
    case TokenType::kNormal:
    case TokenType::kUndefined:
      break;
  }
  std::string result;
  result.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      result += ' ';
      i += kSpaceMark.size();
    } else {
      result += text[i++];
    }
  }
  return result;
}

}  // namespace

Expected<std::unique_ptr<Encoder>> make_spm_encoder(const Vocab& vocab) {
  if (vocab.tokens.empty()) return Status::invalid_argument("SPM vocabulary has no tokens");
  if (vocab.scores.size() != vocab.tokens.size())
    return Status::invalid_argument(fmt::format("SPM vocabulary has {} scores for {} tokens",
                                                vocab.scores.size(), vocab.tokens.size()));
  if (vocab.token_to_id.size() == 0)
    return Status::invalid_argument("SPM vocabulary index is empty (Vocab::build_index not called)");
  const bool unk_ok = vocab.unk_id >= 0 && vocab.unk_id < vocab.n_tokens();
  // Fallback for a character that is no piece: <0xXX>, else the byte itself as a piece
  // (some vocabularies list raw bytes), else <unk>.
  std::array<int32_t, 256> byte_ids{};
  for (int b = 0; b < 256; ++b) {
    int32_t id = vocab.find(fmt::format("<0x{:02X}>", b));
    if (id < 0) id = vocab.find(std::string(1, static_cast<char>(b)));
    if (id < 0) id = unk_ok ? vocab.unk_id : -1;
    if (id < 0)
      return Status::invalid_argument(fmt::format(
          "SPM vocabulary has no byte token <0x{:02X}> and no unknown token to fall back to", b));
    byte_ids[b] = id;
  }
  return std::unique_ptr<Encoder>(new SpmEncoder(vocab, byte_ids));
}

}  // namespace edge
