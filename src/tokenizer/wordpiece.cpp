// BERT WordPiece, matching the Hugging Face BertNormalizer + BertPreTokenizer + WordPiece
// pipeline (which llama.cpp's "bert" vocabulary reproduces):
//   1. clean: drop NUL, U+FFFD and control/format/unassigned/private-use characters;
//      whitespace becomes a space.
//   2. CJK ideographs become words of their own.
//   3. uncased vocabularies: NFD, drop non-spacing marks (accents), lowercase.
//   4. split on whitespace; every punctuation character is a word of its own.
//   5. each word: greedy longest-match-first pieces; a word that cannot be covered, or
//      longer than 100 characters, becomes [UNK] as a whole.
// Two spellings of the vocabulary are accepted. GGUF (convert_hf_to_gguf): a word-initial
// piece is "▁the", a continuation piece is "hrer". Hugging Face vocab.txt /
// tokenizer.json: "the" and "##hrer". The spelling is detected from the tokens.
// Case: Vocab::lowercase, and always for the GGUF spelling: GGUF has no key for it and
// llama.cpp lowercases every "bert" vocabulary, so a GGUF vocab read without setting the
// flag still gives the reference ids.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <utf8proc.h>

#include "tokenizer/encoder.h"

namespace edge {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581
constexpr size_t kMaxWordChars = 100;                    // HF max_input_chars_per_word

// Rust char::is_whitespace (White_Space property), which the HF normaliser uses.
bool is_whitespace(int32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// HF is_control: "other" categories (Cc, Cf, Cn, Co, Cs) except tab, newline, return,
// which are whitespace.
bool is_control(int32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
      return true;
    default:
      return false;
  }
}

// ASCII punctuation (which includes symbols like $ + < = > ^ ` | ~) or any Unicode P*.
bool is_punctuation(int32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
    return true;
  const utf8proc_category_t cat = utf8proc_category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

// CJK Unified Ideographs blocks as the HF Rust normaliser lists them (its extension-E
// range starts at 0x2B920, not 0x2B820; kept for identical ids).
bool is_cjk(int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void append_utf8(std::string& s, int32_t c) {
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(c, buf);
  s.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

class WordPieceEncoder final : public Encoder {
 public:
  WordPieceEncoder(const Vocab& vocab, bool gguf_style, int32_t unk_id, size_t max_piece_bytes)
      : vocab_(vocab),
        gguf_style_(gguf_style),
        lowercase_(vocab.lowercase || gguf_style),
        unk_id_(unk_id),
        max_piece_bytes_(max_piece_bytes) {}

  void encode(std::string_view fragment, bool first, std::vector<int32_t>& out) const override;
  std::string decode_token(int32_t id, bool special) const override;

 private:
  // Normalised code points of the fragment (steps 1-3 above).
  std::vector<int32_t> normalize(std::string_view fragment) const;
  void encode_word(const std::vector<int32_t>& word, std::vector<int32_t>& out) const;

  const Vocab& vocab_;
  bool gguf_style_;
  bool lowercase_;  // also strips accents, as HF does when strip_accents is unset
  int32_t unk_id_;
  size_t max_piece_bytes_;  // longest piece without its marker, bounds the search
};

std::vector<int32_t> WordPieceEncoder::normalize(std::string_view fragment) const {
  std::vector<int32_t> cps;
  cps.reserve(fragment.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(fragment.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(fragment.size());
  utf8proc_int32_t decomposed[32];
  while (left > 0) {
    utf8proc_int32_t c = 0;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {  // malformed byte: U+FFFD, which cleaning drops
      n = 1;
      c = 0xFFFD;
    }
    p += n;
    left -= n;
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_whitespace(c)) {
      cps.push_back(' ');
    } else if (is_cjk(c)) {
      cps.push_back(' ');
      cps.push_back(c);
      cps.push_back(' ');
    } else if (!lowercase_) {
      cps.push_back(c);
    } else {
      int last_boundclass = 0;
      const utf8proc_ssize_t m = utf8proc_decompose_char(
          c, decomposed, 32, UTF8PROC_DECOMPOSE, &last_boundclass);
      if (m <= 0 || m > 32) {  // cannot happen for valid code points; keep the character
        cps.push_back(utf8proc_tolower(c));
        continue;
      }
      for (utf8proc_ssize_t i = 0; i < m; ++i) {
        if (utf8proc_category(decomposed[i]) == UTF8PROC_CATEGORY_MN) continue;
        cps.push_back(utf8proc_tolower(decomposed[i]));
      }
    }
  }
  return cps;
}

void WordPieceEncoder::encode_word(const std::vector<int32_t>& word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxWordChars) {
    out.push_back(unk_id_);
    return;
  }
  // bounds[i] is the byte offset of character i in `text`; bounds.back() == text.size().
  std::string text;
  std::vector<size_t> bounds;
  bounds.reserve(word.size() + 1);
  for (int32_t c : word) {
    bounds.push_back(text.size());
    append_utf8(text, c);
  }
  bounds.push_back(text.size());

  const size_t first_out = out.size();
  const std::string_view start_mark = gguf_style_ ? kSpaceMark : std::string_view();
  const std::string_view cont_mark = gguf_style_ ? std::string_view() : std::string_view("##");
  std::string key;
  size_t start = 0;  // character index
  while (start < word.size()) {
    int32_t found = -1;
    size_t end = word.size();
    for (; end > start; --end) {
      const size_t nbytes = bounds[end] - bounds[start];
      if (nbytes > max_piece_bytes_) continue;
      key.assign(start == 0 ? start_mark : cont_mark);
      key.append(text, bounds[start], nbytes);
      found = vocab_.find(key);
      if (found >= 0) break;
    }
    if (found < 0) {  // the word cannot be covered: all of it is [UNK]
      out.resize(first_out);
      out.push_back(unk_id_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

void WordPieceEncoder::encode(std::string_view fragment, bool first, std::vector<int32_t>& out) const {
  const std::vector<int32_t> cps = normalize(fragment);
  std::vector<int32_t> word;
  auto flush = [&] {
    if (!word.empty()) encode_word(word, out);
    word.clear();
  };
  for (int32_t c : cps) {
    if (is_whitespace(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      word.push_back(c);
      flush();
    } else {
      word.push_back(c);
    }
  }
  flush();
}

std::string WordPieceEncoder::decode_token(int32_t id, bool special) const {
  if (id < 0 || id >= vocab_.n_tokens()) return {};
  const std::string& text = vocab_.tokens[id];
  const TokenType type =
      id < static_cast<int32_t>(vocab_.types.size()) ? vocab_.types[id] : TokenType::kNormal;
  if (type == TokenType::kControl || type == TokenType::kUnknown || id == unk_id_)
    return special ? text : std::string();
  if (type == TokenType::kUnused) return {};
  // A word-initial piece renders with a leading space (the Tokenizer strips the very
  // first one), a continuation piece without.
  if (gguf_style_) {
    if (text.compare(0, kSpaceMark.size(), kSpaceMark) == 0)
      return " " + text.substr(kSpaceMark.size());
    return text;
  }
  if (text.compare(0, 2, "##") == 0 && text.size() > 2) return text.substr(2);
  return " " + text;
}

}  // namespace

Expected<std::unique_ptr<Encoder>> make_wordpiece_encoder(const Vocab& vocab) {
  if (vocab.tokens.empty()) return Status::invalid_argument("WordPiece vocabulary has no tokens");
  if (vocab.token_to_id.empty())
    return Status::invalid_argument("WordPiece vocabulary index is empty (Vocab::build_index not called)");
  int32_t unk = vocab.unk_id;
  if (unk < 0 || unk >= vocab.n_tokens()) unk = vocab.find("[UNK]");
  if (unk < 0) return Status::invalid_argument("WordPiece vocabulary has no [UNK] token");

  size_t n_marked = 0, n_hashed = 0, max_bytes = 0;
  for (const std::string& t : vocab.tokens) {
    if (t.compare(0, kSpaceMark.size(), kSpaceMark) == 0) ++n_marked;
    else if (t.size() > 2 && t.compare(0, 2, "##") == 0) ++n_hashed;
    max_bytes = std::max(max_bytes, t.size());
  }
  const bool gguf_style = n_marked > n_hashed;
  return std::unique_ptr<Encoder>(new WordPieceEncoder(vocab, gguf_style, unk, max_bytes));
}

}  // namespace edge
