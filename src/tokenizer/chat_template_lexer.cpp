// Lexer of the chat-template engine. Tokenization follows @huggingface/jinja so that
// whitespace handling is byte-identical: Template() there enables trim_blocks and
// lstrip_blocks (as transformers' Python ImmutableSandboxedEnvironment does), strips one
// trailing newline, and {%- / -%} strip all (Unicode) whitespace next to the tag.
#include <algorithm>
#include <cctype>
#include <cstring>

#include "tokenizer/chat_template_ast.h"

namespace edge::jinja {
namespace {

// Source text plus, per byte, its offset in the original template (for line numbers).
struct Mapped {
  std::string text;
  std::vector<int> origin;
  void push(char c, int o) { text += c; origin.push_back(o); }
};

bool at(const std::string& s, size_t i, const char* lit) { return s.compare(i, std::strlen(lit), lit) == 0; }

// lstrip_blocks: spaces/tabs that start a line are dropped before {% and {# (and {-).
Mapped lstrip_blocks(const Mapped& in) {
  Mapped out;
  const std::string& s = in.text;
  for (size_t i = 0; i < s.size();) {
    const bool line_start = i == 0 || s[i - 1] == '\n' || s[i - 1] == '\r';
    if (line_start) {
      size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j > i && j + 1 < s.size() && s[j] == '{' && (s[j + 1] == '#' || s[j + 1] == '%' || s[j + 1] == '-')) {
        i = j;
      }
    }
    // Copy up to and including the next line break so whitespace runs are judged once.
    do {
      out.push(s[i], in.origin[i]);
      ++i;
    } while (i < s.size() && s[i - 1] != '\n' && s[i - 1] != '\r');
  }
  return out;
}

// trim_blocks: the newline right after %}, #} (and -}) is dropped.
Mapped trim_blocks(const Mapped& in) {
  Mapped out;
  const std::string& s = in.text;
  for (size_t i = 0; i < s.size(); ++i) {
    out.push(s[i], in.origin[i]);
    if (s[i] == '}' && i > 0 && (s[i - 1] == '%' || s[i - 1] == '#' || s[i - 1] == '-') && i + 1 < s.size() &&
        s[i + 1] == '\n') {
      ++i;
    }
  }
  return out;
}

bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Length of a {% generation %} / {%- endgeneration -%} tag at s[i], 0 if none; the
// dash flags say whether surrounding whitespace goes with it.
size_t generation_tag(const std::string& s, size_t i, bool& lstrip, bool& rstrip) {
  if (!at(s, i, "{%")) return 0;
  size_t j = i + 2;
  lstrip = j < s.size() && s[j] == '-';
  if (lstrip) ++j;
  while (j < s.size() && ascii_space(s[j])) ++j;
  if (at(s, j, "end")) j += 3;
  if (!at(s, j, "generation")) return 0;
  j += 10;
  while (j < s.size() && ascii_space(s[j])) ++j;
  rstrip = j < s.size() && s[j] == '-';
  if (rstrip) ++j;
  if (!at(s, j, "%}")) return 0;
  return j + 2 - i;
}

// transformers' {% generation %} marks assistant spans for training masks; it renders nothing.
Mapped drop_generation_tags(const Mapped& in) {
  Mapped out;
  const std::string& s = in.text;
  for (size_t i = 0; i < s.size();) {
    bool lstrip = false, rstrip = false;
    const size_t len = generation_tag(s, i, lstrip, rstrip);
    if (len == 0) {
      out.push(s[i], in.origin[i]);
      ++i;
      continue;
    }
    if (lstrip) {
      while (!out.text.empty() && ascii_space(out.text.back())) {
        out.text.pop_back();
        out.origin.pop_back();
      }
    }
    i += len;
    if (rstrip) {
      while (i < s.size() && ascii_space(s[i])) ++i;
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : source_(source) {
    Mapped m;
    for (size_t i = 0; i < source.size(); ++i) m.push(source[i], static_cast<int>(i));
    if (!m.text.empty() && m.text.back() == '\n') {
      m.text.pop_back();
      m.origin.pop_back();
    }
    src_ = drop_generation_tags(trim_blocks(lstrip_blocks(m)));
    s_ = &src_.text;
    line_starts_.push_back(0);
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\n') line_starts_.push_back(static_cast<int>(i) + 1);
    }
  }

  std::vector<Token> run() {
    while (pos_ < s_->size()) step();
    return std::move(tokens_);
  }

 private:
  const std::string& source_;
  Mapped src_;
  const std::string* s_ = nullptr;
  size_t pos_ = 0;
  int curly_depth_ = 0;
  std::vector<Token> tokens_;
  std::vector<int> line_starts_;  // offsets in source_ where each line begins

  char ch(size_t off = 0) const { return pos_ + off < s_->size() ? (*s_)[pos_ + off] : '\0'; }
  bool here(const char* lit) const { return at(*s_, pos_, lit); }

  void position(size_t p, int& line, int& col) const {
    const int o = p < src_.origin.size() ? src_.origin[p] : static_cast<int>(source_.size());
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), o);
    line = static_cast<int>(it - line_starts_.begin());
    col = o - *(it - 1) + 1;
  }

  [[noreturn]] void fail(const std::string& what, size_t p) const {
    int line, col;
    position(p, line, col);
    throw Error("syntax error at line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what,
                line);
  }

  void push(Tok t, std::string v, size_t start) {
    Token tok{t, std::move(v)};
    position(start, tok.line, tok.col);
    tokens_.push_back(std::move(tok));
  }

  Tok last_type() const { return tokens_.empty() ? Tok::kText : tokens_.back().type; }

  void strip_trailing_whitespace() {
    if (tokens_.empty() || tokens_.back().type != Tok::kText) return;
    tokens_.back().value = utf8_trim(tokens_.back().value, TrimSide::kRight);
    if (tokens_.back().value.empty()) tokens_.pop_back();
  }

  void skip_whitespace() {
    while (pos_ < s_->size()) {
      const unsigned char c = static_cast<unsigned char>(ch());
      if (c < 0x80) {
        if (!ascii_space(static_cast<char>(c))) return;
        ++pos_;
        continue;
      }
      const std::vector<std::string> one = utf8_chars(s_->substr(pos_, 4));
      const std::string& first = one.front();
      if (utf8_trim(first, TrimSide::kLeft).size() == first.size()) return;  // not whitespace
      pos_ += first.size();
    }
  }

  bool text_allowed_ = false;  // after {% endraw %}: literal text may follow a text token

  void step();
  bool lex_raw();
  size_t raw_tag(size_t i, const char* name, bool& dash_before, bool& dash_after) const;
  bool lex_text();
  void lex_comment();
  bool lex_sign();
  bool lex_operator();
  void lex_string();
  void lex_number();
};

bool Lexer::lex_text() {
  const bool after_tag = tokens_.empty() || last_type() == Tok::kCloseStmt || last_type() == Tok::kCloseExpr ||
                         last_type() == Tok::kComment || text_allowed_;
  text_allowed_ = false;
  if (!after_tag) return false;
  const size_t start = pos_;
  while (pos_ < s_->size() && !(ch() == '{' && (ch(1) == '%' || ch(1) == '{' || ch(1) == '#'))) ++pos_;
  if (pos_ == start) return false;
  push(Tok::kText, s_->substr(start, pos_ - start), start);
  return true;
}

void Lexer::lex_comment() {
  const size_t start = pos_;
  pos_ += 2;
  const bool strip_before = ch() == '-';
  if (strip_before) ++pos_;
  const size_t end = s_->find("#}", pos_);
  if (end == std::string::npos) fail("unterminated comment: expected '#}'", start);
  std::string body = s_->substr(pos_, end - pos_);
  const bool strip_after = !body.empty() && body.back() == '-';
  if (strip_before) strip_trailing_whitespace();
  push(Tok::kComment, body, start);
  pos_ = end + 2;
  if (strip_after) skip_whitespace();
}

// A sign after an operator (or opening bracket) is unary; followed by digits it becomes
// part of a numeric literal, like the reference lexer does.
bool Lexer::lex_sign() {
  const char c = ch();
  if (c != '-' && c != '+') return false;
  switch (last_type()) {
    case Tok::kIdent: case Tok::kNumber: case Tok::kString: case Tok::kRParen: case Tok::kRBracket:
      return false;  // binary operator
    default: break;
  }
  const size_t start = pos_++;
  std::string num;
  while (ch() >= '0' && ch() <= '9') num += (*s_)[pos_++];
  if (!num.empty() && ch() == '.' && ch(1) >= '0' && ch(1) <= '9') {
    num += (*s_)[pos_++];
    while (ch() >= '0' && ch() <= '9') num += (*s_)[pos_++];
  }
  push(num.empty() ? Tok::kUnary : Tok::kNumber, std::string(1, c) + num, start);
  return true;
}

bool Lexer::lex_operator() {
  struct Op { const char* text; Tok type; };
  static const Op kOps[] = {
      {"{%", Tok::kOpenStmt}, {"%}", Tok::kCloseStmt}, {"{{", Tok::kOpenExpr}, {"}}", Tok::kCloseExpr},
      {"(", Tok::kLParen}, {")", Tok::kRParen}, {"{", Tok::kLBrace}, {"}", Tok::kRBrace},
      {"[", Tok::kLBracket}, {"]", Tok::kRBracket}, {",", Tok::kComma}, {".", Tok::kDot},
      {":", Tok::kColon}, {"|", Tok::kPipe}, {"<=", Tok::kCompare}, {">=", Tok::kCompare},
      {"==", Tok::kCompare}, {"!=", Tok::kCompare}, {"<", Tok::kCompare}, {">", Tok::kCompare},
      {"+", Tok::kAdditive}, {"-", Tok::kAdditive}, {"~", Tok::kAdditive}, {"**", Tok::kPower},
      {"*", Tok::kMultiplicative}, {"//", Tok::kMultiplicative}, {"/", Tok::kMultiplicative},
      {"%", Tok::kMultiplicative}, {"=", Tok::kEquals},
  };
  for (const Op& op : kOps) {
    if (op.type == Tok::kCloseExpr && curly_depth_ > 0) continue;  // "}}" closing a dict literal
    if (!here(op.text)) continue;
    push(op.type, op.text, pos_);
    if (op.type == Tok::kOpenExpr) curly_depth_ = 0;
    if (op.type == Tok::kLBrace) ++curly_depth_;
    if (op.type == Tok::kRBrace) --curly_depth_;
    pos_ += std::strlen(op.text);
    return true;
  }
  return false;
}

void Lexer::lex_string() {
  const size_t start = pos_;
  const char quote = (*s_)[pos_++];
  std::string out;
  while (true) {
    if (pos_ >= s_->size()) fail(std::string("unterminated string: expected closing ") + quote, start);
    const char c = (*s_)[pos_++];
    if (c == quote) break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ >= s_->size()) fail("unterminated string escape", start);
    const char e = (*s_)[pos_++];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\'': case '"': case '\\': out += e; break;
      case 'x': case 'u': {
        const size_t len = e == 'x' ? 2 : 4;
        const std::string hex = s_->substr(pos_, len);
        if (hex.size() != len || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
          fail(std::string("invalid escape \\") + e + hex, pos_ - 2);
        }
        const auto cp = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
        // Encode the code point as UTF-8 (BMP only, as \u allows).
        if (cp < 0x80) {
          out += static_cast<char>(cp);
        } else if (cp < 0x800) {
          out += static_cast<char>(0xC0 | (cp >> 6));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        }
        pos_ += len;
        break;
      }
      default: fail(std::string("unexpected escaped character '") + e + "'", pos_ - 2);
    }
  }
  push(Tok::kString, out, start);
}

void Lexer::lex_number() {
  const size_t start = pos_;
  while (ch() >= '0' && ch() <= '9') ++pos_;
  if (last_type() != Tok::kDot && ch() == '.' && ch(1) >= '0' && ch(1) <= '9') {
    ++pos_;
    while (ch() >= '0' && ch() <= '9') ++pos_;
  }
  push(Tok::kNumber, s_->substr(start, pos_ - start), start);
}

// Length of a `{%[-] name [-]%}` tag at s[i] (0 if there is none), with its dash flags.
size_t Lexer::raw_tag(size_t i, const char* name, bool& dash_before, bool& dash_after) const {
  const std::string& s = *s_;
  if (!at(s, i, "{%")) return 0;
  size_t j = i + 2;
  dash_before = j < s.size() && s[j] == '-';
  if (dash_before) ++j;
  while (j < s.size() && ascii_space(s[j])) ++j;
  if (!at(s, j, name)) return 0;
  j += std::strlen(name);
  while (j < s.size() && ascii_space(s[j])) ++j;
  dash_after = j < s.size() && s[j] == '-';
  if (dash_after) ++j;
  return at(s, j, "%}") ? j + 2 - i : 0;
}

// {% raw %}...{% endraw %}: the body is literal text, honouring the tags' dashes.
bool Lexer::lex_raw() {
  bool open_before = false, open_after = false, close_before = false, close_after = false;
  const size_t open_len = raw_tag(pos_, "raw", open_before, open_after);
  if (open_len == 0) return false;
  size_t end = pos_ + open_len, close_len = 0;
  for (; end < s_->size(); ++end) {
    close_len = raw_tag(end, "endraw", close_before, close_after);
    if (close_len) break;
  }
  if (close_len == 0) fail("unterminated {% raw %}: expected {% endraw %}", pos_);
  std::string body = s_->substr(pos_ + open_len, end - pos_ - open_len);
  if (open_after) body = utf8_trim(body, TrimSide::kLeft);
  if (close_before) body = utf8_trim(body, TrimSide::kRight);
  if (open_before) strip_trailing_whitespace();
  if (!body.empty()) push(Tok::kText, body, pos_ + open_len);
  text_allowed_ = true;
  pos_ = end + close_len;
  if (close_after) skip_whitespace();
  return true;
}

void Lexer::step() {
  if (lex_text()) return;
  if (here("{#")) return lex_comment();
  if (here("{%") && lex_raw()) return;
  if (here("{%-") || here("{{-")) {
    strip_trailing_whitespace();
    const bool stmt = ch(1) == '%';
    push(stmt ? Tok::kOpenStmt : Tok::kOpenExpr, stmt ? "{%" : "{{", pos_);
    if (!stmt) curly_depth_ = 0;
    pos_ += 3;
    return;
  }
  skip_whitespace();
  if (pos_ >= s_->size()) return;
  if (here("-%}") || here("-}}")) {
    const bool stmt = ch(1) == '%';
    push(stmt ? Tok::kCloseStmt : Tok::kCloseExpr, stmt ? "%}" : "}}", pos_);
    pos_ += 3;
    skip_whitespace();
    return;
  }
  const char c = ch();
  if ((c == '-' || c == '+') && (tokens_.empty() || last_type() == Tok::kText)) {
    fail(std::string("unexpected character '") + c + "'", pos_);
  }
  if (lex_sign() || lex_operator()) return;
  if (c == '\'' || c == '"') return lex_string();
  if (c >= '0' && c <= '9') return lex_number();
  const auto word = [](char x) { return std::isalnum(static_cast<unsigned char>(x)) || x == '_'; };
  if (word(c)) {
    const size_t start = pos_;
    while (pos_ < s_->size() && word(ch())) ++pos_;
    push(Tok::kIdent, s_->substr(start, pos_ - start), start);
    return;
  }
  fail(std::string("unexpected character '") + c + "'", pos_);
}

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace edge::jinja
