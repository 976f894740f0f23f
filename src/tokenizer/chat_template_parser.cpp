// Parser of the chat-template engine: tokens -> statement tree. Operator precedence
// follows @huggingface/jinja (lowest first): inline if, or, and, not, comparisons and
// `in`, + - ~, * / // %, **, `is` tests, | filters, unary sign, call/member, primary.
#include <cerrno>
#include <cstdlib>

#include "tokenizer/chat_template_ast.h"

namespace edge::jinja {
namespace {

constexpr int kMaxDepth = 200;  // nesting limit: a hostile template must not overflow the stack

std::string describe(const Token* t) {
  if (!t) return "end of template";
  switch (t->type) {
    case Tok::kText: return "text";
    case Tok::kString: return "string '" + t->value + "'";
    case Tok::kComment: return "comment";
    default: return "'" + t->value + "'";
  }
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Body parse_program() {
    Body body;
    while (cur_ < t_.size()) {
      if (StmtPtr s = parse_any()) body.push_back(std::move(s));
    }
    return body;
  }

 private:
  const std::vector<Token>& t_;
  size_t cur_ = 0;
  int depth_ = 0;

  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* parser) : p(parser) {
      if (++p->depth_ > kMaxDepth) p->fail("nesting too deep");
    }
    ~DepthGuard() { --p->depth_; }
  };

  const Token* peek(size_t off = 0) const { return cur_ + off < t_.size() ? &t_[cur_ + off] : nullptr; }
  bool is(Tok type, size_t off = 0) const { return peek(off) && peek(off)->type == type; }
  bool is_ident(const char* name, size_t off = 0) const { return is(Tok::kIdent, off) && peek(off)->value == name; }
  bool is_stmt(std::initializer_list<const char*> names) const {
    if (!is(Tok::kOpenStmt) || !is(Tok::kIdent, 1)) return false;
    for (const char* n : names) {
      if (peek(1)->value == n) return true;
    }
    return false;
  }

  [[noreturn]] void fail(const std::string& what, const Token* at = nullptr) const {
    if (!at) at = peek();
    if (!at && !t_.empty()) at = &t_.back();
    const int line = at ? at->line : 1, col = at ? at->col : 1;
    throw Error("syntax error at line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what,
                line);
  }

  const Token& expect(Tok type, const char* what) {
    if (!is(type)) fail(std::string("expected ") + what + ", got " + describe(peek()));
    return t_[cur_++];
  }
  void expect_ident(const char* name) {
    if (!is_ident(name)) fail(std::string("expected '") + name + "', got " + describe(peek()));
    ++cur_;
  }
  void expect_end_tag(const char* name, const char* opener, int line) {
    if (!peek()) {
      fail(std::string("unexpected end of template: expected {% ") + name + " %} to close the {% " + opener +
           " %} at line " + std::to_string(line));
    }
    expect(Tok::kOpenStmt, "'{%'");
    expect_ident(name);
    expect(Tok::kCloseStmt, "'%}'");
  }

  // Statements until one of `enders` ({% name ...) is next; end of input is an error.
  Body parse_until(std::initializer_list<const char*> enders, const char* opener, int line) {
    Body body;
    while (!is_stmt(enders)) {
      if (!peek()) {
        std::string names;
        for (const char* e : enders) names += std::string(names.empty() ? "" : " or ") + "{% " + e + " %}";
        fail("unexpected end of template: expected " + names + " to close the {% " + opener + " %} at line " +
             std::to_string(line));
      }
      if (StmtPtr s = parse_any()) body.push_back(std::move(s));
    }
    return body;
  }

  StmtPtr make(StmtKind kind, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }
  ExprPtr make_expr(ExprKind kind, const Token* at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    if (at) {
      e->line = at->line;
      e->col = at->col;
    }
    return e;
  }

  StmtPtr parse_any();
  StmtPtr parse_statement();
  StmtPtr parse_set(int line);
  StmtPtr parse_if(int line);
  StmtPtr parse_for(int line);
  StmtPtr parse_macro(int line);
  StmtPtr parse_call_block(int line);
  StmtPtr parse_filter_block(int line);
  std::vector<Param> parse_params();

  ExprPtr parse_sequence(bool primary_only);
  ExprPtr parse_expr();
  ExprPtr parse_keyword_level(const char* keyword, ExprPtr (Parser::*next)());
  ExprPtr parse_or() { return parse_keyword_level("or", &Parser::parse_and); }
  ExprPtr parse_and() { return parse_keyword_level("and", &Parser::parse_not); }
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_binary_level(Tok type, ExprPtr (Parser::*next)());
  ExprPtr parse_additive() { return parse_binary_level(Tok::kAdditive, &Parser::parse_multiplicative); }
  ExprPtr parse_multiplicative() { return parse_binary_level(Tok::kMultiplicative, &Parser::parse_power); }
  ExprPtr parse_power() { return parse_binary_level(Tok::kPower, &Parser::parse_test); }
  ExprPtr parse_test();
  ExprPtr parse_filter();
  ExprPtr parse_unary();
  ExprPtr parse_postfix();
  ExprPtr parse_subscript(ExprPtr object, const Token* at);
  void parse_call_args(Expr& call);
  ExprPtr parse_primary();
};

StmtPtr Parser::parse_any() {
  const Token& t = *peek();
  switch (t.type) {
    case Tok::kComment: ++cur_; return nullptr;
    case Tok::kText: {
      auto s = make(StmtKind::kText, t.line);
      s->text = t.value;
      ++cur_;
      return s;
    }
    case Tok::kOpenStmt: return parse_statement();
    case Tok::kOpenExpr: {
      ++cur_;
      auto s = make(StmtKind::kOutput, t.line);
      s->expr = parse_expr();
      expect(Tok::kCloseExpr, "'}}'");
      return s;
    }
    default: fail("unexpected " + describe(&t) + " outside of a tag");
  }
}

StmtPtr Parser::parse_statement() {
  DepthGuard guard(this);
  const int line = expect(Tok::kOpenStmt, "'{%'").line;
  if (!is(Tok::kIdent)) fail("expected a statement name, got " + describe(peek()));
  const std::string name = t_[cur_++].value;
  if (name == "set") return parse_set(line);
  if (name == "if") return parse_if(line);
  if (name == "for") return parse_for(line);
  if (name == "macro") return parse_macro(line);
  if (name == "call") return parse_call_block(line);
  if (name == "filter") return parse_filter_block(line);
  if (name == "break" || name == "continue") {
    expect(Tok::kCloseStmt, "'%}'");
    return make(name == "break" ? StmtKind::kBreak : StmtKind::kContinue, line);
  }
  --cur_;
  fail("unknown statement '" + name + "'");
}

StmtPtr Parser::parse_set(int line) {
  auto s = make(StmtKind::kSet, line);
  const Token* at = peek();
  s->target = parse_sequence(false);
  const ExprKind k = s->target->kind;
  bool ok = k == ExprKind::kIdent || k == ExprKind::kAttr;
  if (k == ExprKind::kTuple) {
    ok = true;
    for (const auto& kid : s->target->kids) ok = ok && kid->kind == ExprKind::kIdent;
  }
  if (!ok) fail("expected a variable name, a tuple of names or namespace.attribute to assign", at);
  if (is(Tok::kEquals)) {
    ++cur_;
    s->expr = parse_sequence(false);
    expect(Tok::kCloseStmt, "'%}'");
    return s;
  }
  expect(Tok::kCloseStmt, "'=' or '%}'");
  s->body = parse_until({"endset"}, "set", line);
  expect_end_tag("endset", "set", line);
  return s;
}

StmtPtr Parser::parse_if(int line) {
  auto s = make(StmtKind::kIf, line);
  s->expr = parse_expr();
  expect(Tok::kCloseStmt, "'%}'");
  s->body = parse_until({"elif", "else", "endif"}, "if", line);
  if (is_stmt({"elif"})) {
    const int elif_line = peek()->line;
    cur_ += 2;
    s->else_body.push_back(parse_if(elif_line));  // consumes the shared {% endif %}
    return s;
  }
  if (is_stmt({"else"})) {
    cur_ += 2;
    expect(Tok::kCloseStmt, "'%}'");
    s->else_body = parse_until({"endif"}, "if", line);
  }
  expect_end_tag("endif", "if", line);
  return s;
}

StmtPtr Parser::parse_for(int line) {
  auto s = make(StmtKind::kFor, line);
  do {
    if (!is(Tok::kIdent)) fail("expected a loop variable name, got " + describe(peek()));
    s->names.push_back(t_[cur_++].value);
  } while (is(Tok::kComma) && (++cur_, true));
  expect_ident("in");
  s->expr = parse_or();
  if (is_ident("if")) {
    ++cur_;
    s->cond = parse_or();
  }
  if (is_ident("recursive")) fail("recursive loops are not supported");
  expect(Tok::kCloseStmt, "'%}'");
  s->body = parse_until({"endfor", "else"}, "for", line);
  if (is_stmt({"else"})) {
    cur_ += 2;
    expect(Tok::kCloseStmt, "'%}'");
    s->else_body = parse_until({"endfor"}, "for", line);
  }
  expect_end_tag("endfor", "for", line);
  return s;
}

std::vector<Param> Parser::parse_params() {
  std::vector<Param> params;
  expect(Tok::kLParen, "'('");
  while (!is(Tok::kRParen)) {
    Param p;
    p.name = expect(Tok::kIdent, "a parameter name").value;
    for (const auto& q : params) {
      if (q.name == p.name) fail("duplicate parameter '" + p.name + "'");
    }
    if (is(Tok::kEquals)) {
      ++cur_;
      p.default_value = parse_expr();
    } else if (!params.empty() && params.back().default_value) {
      fail("parameter '" + p.name + "' without a default follows one with a default");
    }
    params.push_back(std::move(p));
    if (!is(Tok::kRParen)) expect(Tok::kComma, "',' or ')'");
  }
  ++cur_;
  return params;
}

StmtPtr Parser::parse_macro(int line) {
  auto s = make(StmtKind::kMacro, line);
  s->text = expect(Tok::kIdent, "a macro name").value;
  s->params = parse_params();
  expect(Tok::kCloseStmt, "'%}'");
  s->body = parse_until({"endmacro"}, "macro", line);
  expect_end_tag("endmacro", "macro", line);
  return s;
}

StmtPtr Parser::parse_call_block(int line) {
  auto s = make(StmtKind::kCallBlock, line);
  if (is(Tok::kLParen)) s->params = parse_params();
  const Token* at = peek();
  s->expr = parse_postfix();
  if (s->expr->kind != ExprKind::kCall) fail("expected a macro call after {% call %}", at);
  expect(Tok::kCloseStmt, "'%}'");
  s->body = parse_until({"endcall"}, "call", line);
  expect_end_tag("endcall", "call", line);
  return s;
}

StmtPtr Parser::parse_filter_block(int line) {
  auto s = make(StmtKind::kFilterBlock, line);
  const Token* at = peek();
  auto f = make_expr(ExprKind::kFilter, at);
  f->name = expect(Tok::kIdent, "a filter name").value;
  f->kids.push_back(nullptr);  // operand: the rendered body
  if (is(Tok::kLParen)) parse_call_args(*f);
  s->expr = std::move(f);
  expect(Tok::kCloseStmt, "'%}'");
  s->body = parse_until({"endfilter"}, "filter", line);
  expect_end_tag("endfilter", "filter", line);
  return s;
}

ExprPtr Parser::parse_sequence(bool primary_only) {
  const Token* at = peek();
  ExprPtr first = primary_only ? parse_primary() : parse_expr();
  if (!is(Tok::kComma)) return first;
  auto tuple = make_expr(ExprKind::kTuple, at);
  tuple->kids.push_back(std::move(first));
  while (is(Tok::kComma)) {
    ++cur_;
    if (is(Tok::kRParen) || is(Tok::kEquals) || is(Tok::kCloseStmt)) break;  // trailing comma
    tuple->kids.push_back(primary_only ? parse_primary() : parse_expr());
  }
  return tuple;
}

ExprPtr Parser::parse_expr() {
  DepthGuard guard(this);
  const Token* at = peek();
  ExprPtr a = parse_or();
  if (!is_ident("if")) return a;
  ++cur_;
  auto t = make_expr(ExprKind::kTernary, at);
  t->kids.push_back(parse_or());
  t->kids.push_back(std::move(a));
  if (is_ident("else")) {
    ++cur_;
    t->kids.push_back(parse_expr());
  } else {
    t->kids.push_back(nullptr);
  }
  return t;
}

// `and` / `or`: left-associative keyword operators.
ExprPtr Parser::parse_keyword_level(const char* keyword, ExprPtr (Parser::*next)()) {
  ExprPtr left = (this->*next)();
  while (is_ident(keyword)) {
    auto b = make_expr(ExprKind::kBinary, peek());
    ++cur_;
    b->name = keyword;
    b->kids.push_back(std::move(left));
    b->kids.push_back((this->*next)());
    left = std::move(b);
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (!is_ident("not")) return parse_compare();
  DepthGuard guard(this);
  auto u = make_expr(ExprKind::kUnary, peek());
  ++cur_;
  u->name = "not";
  u->kids.push_back(parse_not());
  return u;
}

ExprPtr Parser::parse_compare() {
  ExprPtr left = parse_additive();
  while (true) {
    std::string op;
    const Token* at = peek();
    if (is_ident("not") && is_ident("in", 1)) {
      op = "not in";
      cur_ += 2;
    } else if (is_ident("in")) {
      op = "in";
      ++cur_;
    } else if (is(Tok::kCompare)) {
      op = t_[cur_++].value;
    } else {
      return left;
    }
    auto b = make_expr(ExprKind::kBinary, at);
    b->name = op;
    b->kids.push_back(std::move(left));
    b->kids.push_back(parse_additive());
    left = std::move(b);
  }
}

ExprPtr Parser::parse_binary_level(Tok type, ExprPtr (Parser::*next)()) {
  ExprPtr left = (this->*next)();
  while (is(type)) {
    auto b = make_expr(ExprKind::kBinary, peek());
    b->name = t_[cur_++].value;
    b->kids.push_back(std::move(left));
    b->kids.push_back((this->*next)());
    left = std::move(b);
  }
  return left;
}

ExprPtr Parser::parse_test() {
  ExprPtr operand = parse_filter();
  while (is_ident("is")) {
    auto t = make_expr(ExprKind::kTest, peek());
    ++cur_;
    if (is_ident("not")) {
      t->negate = true;
      ++cur_;
    }
    t->name = expect(Tok::kIdent, "a test name after 'is'").value;
    t->kids.push_back(std::move(operand));
    if (is(Tok::kLParen)) {
      parse_call_args(*t);
    } else if (is(Tok::kNumber) || is(Tok::kString) || is_ident("none") || is_ident("true") || is_ident("false")) {
      t->kids.push_back(parse_primary());  // Jinja's one-argument form: `x is divisibleby 3`
    }
    operand = std::move(t);
  }
  return operand;
}

ExprPtr Parser::parse_filter() {
  ExprPtr operand = parse_unary();
  while (is(Tok::kPipe)) {
    ++cur_;
    auto f = make_expr(ExprKind::kFilter, peek());
    f->name = expect(Tok::kIdent, "a filter name after '|'").value;
    f->kids.push_back(std::move(operand));
    if (is(Tok::kLParen)) parse_call_args(*f);
    operand = std::move(f);
  }
  return operand;
}

ExprPtr Parser::parse_unary() {
  if ((is(Tok::kUnary) || is(Tok::kAdditive)) && (peek()->value == "-" || peek()->value == "+")) {
    DepthGuard guard(this);
    auto u = make_expr(ExprKind::kUnary, peek());
    u->name = t_[cur_++].value;
    u->kids.push_back(parse_unary());
    return u;
  }
  return parse_postfix();
}

ExprPtr Parser::parse_postfix() {
  ExprPtr e = parse_primary();
  while (true) {
    const Token* at = peek();
    if (is(Tok::kDot)) {
      ++cur_;
      if (is(Tok::kIdent)) {
        auto a = make_expr(ExprKind::kAttr, at);
        a->name = t_[cur_++].value;
        a->kids.push_back(std::move(e));
        e = std::move(a);
      } else if (is(Tok::kNumber) && peek()->value.find('.') == std::string::npos) {
        auto idx = make_expr(ExprKind::kIndex, at);
        auto lit = make_expr(ExprKind::kLiteral, peek());
        lit->value = Value::integer(std::strtoll(t_[cur_++].value.c_str(), nullptr, 10));
        idx->kids.push_back(std::move(e));
        idx->kids.push_back(std::move(lit));
        e = std::move(idx);
      } else {
        fail("expected an attribute name after '.', got " + describe(peek()));
      }
    } else if (is(Tok::kLBracket)) {
      ++cur_;
      e = parse_subscript(std::move(e), at);
    } else if (is(Tok::kLParen)) {
      auto c = make_expr(ExprKind::kCall, at);
      c->kids.push_back(std::move(e));
      parse_call_args(*c);
      e = std::move(c);
    } else {
      return e;
    }
  }
}

// After '[': an index `x[i]` or a slice `x[a:b:c]` with any part omitted.
ExprPtr Parser::parse_subscript(ExprPtr object, const Token* at) {
  std::vector<ExprPtr> parts;
  bool slice = false;
  while (!is(Tok::kRBracket)) {
    if (!peek()) fail("expected ']'");
    if (is(Tok::kColon)) {
      parts.push_back(nullptr);
      ++cur_;
      slice = true;
    } else {
      parts.push_back(parse_expr());
      if (is(Tok::kColon)) {
        ++cur_;
        slice = true;
      } else if (!is(Tok::kRBracket)) {
        fail("expected ':' or ']', got " + describe(peek()));
      }
    }
  }
  ++cur_;
  if (parts.empty()) fail("expected an index or a slice inside '[]'", at);
  if (slice && parts.size() > 3) fail("a slice takes at most 3 parts", at);
  auto e = make_expr(slice ? ExprKind::kSlice : ExprKind::kIndex, at);
  e->kids.push_back(std::move(object));
  for (auto& p : parts) e->kids.push_back(std::move(p));
  if (slice) e->kids.resize(4);
  return e;
}

// `(a, *rest, key=value, **mapping)` appended to call.kids / call.kwargs.
void Parser::parse_call_args(Expr& call) {
  expect(Tok::kLParen, "'('");
  while (!is(Tok::kRParen)) {
    if (!peek()) fail("expected ')'");
    const Token* at = peek();
    if (is(Tok::kPower)) {
      ++cur_;
      call.kwargs.emplace_back("**", parse_expr());
    } else if (is(Tok::kMultiplicative) && peek()->value == "*") {
      ++cur_;
      auto spread = make_expr(ExprKind::kSpread, at);
      spread->kids.push_back(parse_expr());
      call.kids.push_back(std::move(spread));
    } else if (is(Tok::kIdent) && is(Tok::kEquals, 1)) {
      const std::string key = t_[cur_].value;
      cur_ += 2;
      call.kwargs.emplace_back(key, parse_expr());
    } else {
      if (!call.kwargs.empty()) fail("positional argument follows keyword argument");
      call.kids.push_back(parse_expr());
    }
    if (!is(Tok::kRParen)) expect(Tok::kComma, "',' or ')'");
  }
  ++cur_;
}

ExprPtr Parser::parse_primary() {
  DepthGuard guard(this);
  const Token* t = peek();
  if (!t) fail("expected an expression, got end of template");
  ++cur_;
  switch (t->type) {
    case Tok::kNumber: {
      auto e = make_expr(ExprKind::kLiteral, t);
      const bool is_float = t->value.find('.') != std::string::npos;
      errno = 0;
      const long long n = is_float ? 0 : std::strtoll(t->value.c_str(), nullptr, 10);
      e->value = is_float || errno == ERANGE ? Value::number(std::strtod(t->value.c_str(), nullptr)) : Value::integer(n);
      return e;
    }
    case Tok::kString: {
      auto e = make_expr(ExprKind::kLiteral, t);
      std::string s = t->value;
      while (is(Tok::kString)) s += t_[cur_++].value;  // adjacent literals concatenate
      e->value = Value::string(std::move(s));
      return e;
    }
    case Tok::kIdent: {
      auto e = make_expr(ExprKind::kIdent, t);
      e->name = t->value;
      return e;
    }
    case Tok::kLParen: {
      ExprPtr e = parse_sequence(false);
      expect(Tok::kRParen, "')'");
      return e;
    }
    case Tok::kLBracket: {
      auto e = make_expr(ExprKind::kList, t);
      while (!is(Tok::kRBracket)) {
        e->kids.push_back(parse_expr());
        if (!is(Tok::kRBracket)) expect(Tok::kComma, "',' or ']'");
      }
      ++cur_;
      return e;
    }
    case Tok::kLBrace: {
      auto e = make_expr(ExprKind::kDict, t);
      while (!is(Tok::kRBrace)) {
        e->kids.push_back(parse_expr());
        expect(Tok::kColon, "':' between key and value");
        e->kids.push_back(parse_expr());
        if (!is(Tok::kRBrace)) expect(Tok::kComma, "',' or '}'");
      }
      ++cur_;
      return e;
    }
    default: fail("expected an expression, got " + describe(t), t);
  }
}

}  // namespace

Body parse_tokens(const std::vector<Token>& tokens) { return Parser(tokens).parse_program(); }

}  // namespace edge::jinja
