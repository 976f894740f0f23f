// BPE merged by rank, in two alphabets:
//  - byte-level (GPT-2, Llama-3, Qwen2/3, DeepSeek): regex pre-tokenisation, then every
//    byte of a piece is one symbol of the GPT-2 byte<->unicode alphabet;
//  - SentencePiece-style (HF tokenizer.json "BPE" + byte_fallback: Gemma-3, Llama-2 HF):
//    spaces become U+2581, every character is one symbol, characters missing from the
//    vocabulary become <0xXX> byte tokens.
// Merging repeatedly joins the adjacent pair with the lowest merge rank, leftmost first.
#include <cstdio>
#include <cstdlib>
#include <queue>
#include <unordered_map>

#include "tokenizer/encoder.h"
#include "tokenizer/pretokenize.h"

namespace edge {
namespace {

const char kSpace[] = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

std::string cp_to_utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, from.size(), from) == 0) {
      out.append(to);
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

class BpeEncoder final : public Encoder {
 public:
  explicit BpeEncoder(const Vocab& v) : v_(v) {}
  Status init();
  void encode(std::string_view fragment, bool first, std::vector<int32_t>& out) const override;
  std::string decode_token(int32_t id, bool special) const override;

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  void merge(std::vector<int32_t>& syms) const;
  std::string decode_bytes(const std::string& text) const;

  const Vocab& v_;
  PreTokenizer pre_;
  struct Merge { int32_t rank; int32_t id; };
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank, result id
  std::string byte_char_[256];                  // byte -> its GPT-2 alphabet character
  std::unordered_map<std::string, uint8_t> char_byte_;
  int32_t byte_token_[256];                     // <0xXX> ids (SentencePiece mode), -1 absent
};

Status BpeEncoder::init() {
  // GPT-2 alphabet: printable bytes stand for themselves, the other 68 map to U+0100+n.
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    byte_char_[b] = cp_to_utf8(printable ? static_cast<uint32_t>(b) : next++);
    char_byte_[byte_char_[b]] = static_cast<uint8_t>(b);
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    byte_token_[b] = v_.find(hex);
  }
  if (v_.merges.empty() && v_.n_tokens() > 256 && !v_.ignore_merges)
    return Status::invalid_format("BPE vocabulary has no merges (tokenizer.ggml.merges / model.merges)");
  merges_.reserve(v_.merges.size());
  for (size_t r = 0; r < v_.merges.size(); ++r) {
    const std::string& m = v_.merges[r];
    // Tokens of a byte-level vocabulary never hold a raw space; SentencePiece ones may,
    // so take the first split whose halves and join are all in the vocabulary.
    bool found = false;
    for (size_t sp = m.find(' ', 1); sp != std::string::npos && !found; sp = m.find(' ', sp + 1)) {
      const int32_t a = v_.find(m.substr(0, sp)), b = v_.find(m.substr(sp + 1));
      const int32_t ab = v_.find(m.substr(0, sp) + m.substr(sp + 1));
      if (a < 0 || b < 0 || ab < 0) continue;
      merges_.emplace(pair_key(a, b), Merge{static_cast<int32_t>(r), ab});  // first (best) rank wins
      found = true;
    }
    // A merge whose parts are not tokens can never fire; skip it like the references do.
  }
  const bool sp_mode = v_.model == TokenizerModel::kBpe && !v_.byte_level;
  std::vector<std::string> regexes = v_.pre_regexes;
  if (regexes.empty() && !sp_mode) {
    regexes = pretokenizer_regexes(v_.pre.empty() ? "default" : v_.pre);
    if (regexes.empty()) return Status::unsupported("unknown BPE pre-tokenizer '" + v_.pre + "'");
  }
  ASSIGN_OR_RETURN(pre_, PreTokenizer::compile(regexes));
  return Status();
}

// Lowest-rank adjacent pair first, leftmost on ties, over a linked list of symbols.
void BpeEncoder::merge(std::vector<int32_t>& syms) const {
  const int n = static_cast<int>(syms.size());
  if (n < 2) return;
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) { prev[i] = i - 1; next[i] = i + 1 < n ? i + 1 : -1; }
  struct Cand { int32_t rank; int pos; int32_t left, right; };
  auto worse = [](const Cand& a, const Cand& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; };
  std::priority_queue<Cand, std::vector<Cand>, decltype(worse)> heap(worse);
  auto push = [&](int i) {
    if (i < 0 || next[i] < 0 || syms[i] < 0 || syms[next[i]] < 0) return;
    auto it = merges_.find(pair_key(syms[i], syms[next[i]]));
    if (it != merges_.end()) heap.push({it->second.rank, i, syms[i], syms[next[i]]});
  };
  for (int i = 0; i < n; ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    const int j = next[c.pos];
    // Stale entry: one side was merged away or changed since it was queued.
    if (syms[c.pos] != c.left || j < 0 || syms[j] != c.right) continue;
    syms[c.pos] = merges_.at(pair_key(c.left, c.right)).id;
    syms[j] = -2;  // dead
    next[c.pos] = next[j];
    if (next[j] >= 0) prev[next[j]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  int w = 0;
  for (int i = 0; i >= 0 && i < n; i = next[i]) syms[w++] = syms[i];
  syms.resize(w);
}

void BpeEncoder::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<int32_t> syms;
  if (v_.byte_level) {
    std::string mapped;
    for (char ch : word) mapped += byte_char_[static_cast<uint8_t>(ch)];
    if (v_.ignore_merges) {
      const int32_t id = v_.find(mapped);
      if (id >= 0) { out.push_back(id); return; }
    }
    for (char ch : word) syms.push_back(v_.find(byte_char_[static_cast<uint8_t>(ch)]));
  } else {
    if (v_.ignore_merges) {
      const int32_t id = v_.find(std::string(word));
      if (id >= 0) { out.push_back(id); return; }
    }
    for (std::string_view ch : utf8_chars(word)) {
      const int32_t id = v_.find(std::string(ch));
      bool have_bytes = v_.byte_fallback;
      for (char b : ch) have_bytes = have_bytes && byte_token_[static_cast<uint8_t>(b)] >= 0;
      if (id >= 0) {
        syms.push_back(id);
      } else if (have_bytes) {
        for (char b : ch) syms.push_back(byte_token_[static_cast<uint8_t>(b)]);
      } else {
        syms.push_back(-1);
      }
    }
  }
  merge(syms);
  for (size_t i = 0; i < syms.size(); ++i) {
    if (syms[i] >= 0) { out.push_back(syms[i]); continue; }
    // Unknown symbol: one <unk> for a run of them (HF fuse_unk), nothing if there is none.
    if (v_.unk_id >= 0 && (i == 0 || syms[i - 1] >= 0)) out.push_back(v_.unk_id);
  }
}

void BpeEncoder::encode(std::string_view fragment, bool first, std::vector<int32_t>& out) const {
  if (v_.byte_level) {
    for (std::string_view piece : pre_.split(fragment)) encode_word(piece, out);
    return;
  }
  std::string text = replace_all(fragment, " ", kSpace);
  if (v_.add_space_prefix && first && !text.empty()) text.insert(0, kSpace);
  if (pre_.empty()) {
    encode_word(text, out);
    return;
  }
  for (std::string_view piece : pre_.split(text)) encode_word(piece, out);
}

std::string BpeEncoder::decode_bytes(const std::string& text) const {
  std::string out;
  for (std::string_view ch : utf8_chars(text)) {
    auto it = char_byte_.find(std::string(ch));
    if (it == char_byte_.end()) return text;  // not byte-level text (e.g. an added token)
    out += static_cast<char>(it->second);
  }
  return out;
}

std::string BpeEncoder::decode_token(int32_t id, bool special) const {
  if (id < 0 || id >= v_.n_tokens()) return "";
  const std::string& text = v_.tokens[id];
  const TokenType t = id < static_cast<int32_t>(v_.types.size()) ? v_.types[id] : TokenType::kNormal;
  if (t == TokenType::kControl || t == TokenType::kUnknown) return special ? text : "";
  // Added (user-defined) tokens of a byte-level vocabulary are stored as raw text, not
  // in the byte alphabet (DeepSeek-Coder's "ü" would otherwise decode as byte 0xFC).
  if (v_.byte_level) return t == TokenType::kUserDefined ? text : decode_bytes(text);
  if (t == TokenType::kByte || (v_.byte_fallback && text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>')) {
    const long b = std::strtol(text.substr(3, 2).c_str(), nullptr, 16);
    return std::string(1, static_cast<char>(b));
  }
  return replace_all(text, kSpace, " ");
}

}  // namespace

Expected<std::unique_ptr<Encoder>> make_byte_bpe_encoder(const Vocab& vocab) {
  auto enc = std::make_unique<BpeEncoder>(vocab);
  RETURN_IF_ERROR(enc->init());
  return std::unique_ptr<Encoder>(std::move(enc));
}

}  // namespace edge
