// Tokens and syntax tree of the chat-template Jinja engine (internal to the tokenizer layer).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/chat_template_value.h"

namespace edge::jinja {

enum class Tok {
  kText, kComment,
  kOpenStmt, kCloseStmt, kOpenExpr, kCloseExpr,
  kLParen, kRParen, kLBracket, kRBracket, kLBrace, kRBrace,
  kComma, kDot, kColon, kPipe, kEquals,
  kCompare,     // < > <= >= == !=
  kAdditive,    // + - ~
  kMultiplicative,  // * / // %
  kPower,       // **
  kUnary,       // + - not followed by a number, after an operator
  kString, kNumber, kIdent,
};

struct Token {
  Tok type;
  std::string value;
  int line = 0, col = 0;  // 1-based position in the original source
};

// Template text -> tokens. Applies the preprocessing @huggingface/jinja's Template does:
// drop one trailing newline, lstrip_blocks, trim_blocks, drop {% generation %} tags.
std::vector<Token> tokenize(const std::string& source);

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  kLiteral,   // value
  kIdent,     // name
  kList,      // kids
  kTuple,     // kids
  kDict,      // kids = key0, value0, key1, value1, ...
  kAttr,      // kids[0].name
  kIndex,     // kids[0][kids[1]]
  kSlice,     // kids[0][kids[1]:kids[2]:kids[3]] (null kids are omitted bounds)
  kCall,      // kids[0](kids[1..], kwargs)
  kFilter,    // kids[0] | name(kids[1..], kwargs)
  kTest,      // kids[0] is [not] name(kids[1..])
  kUnary,     // op kids[0]   (op: not, -, +)
  kBinary,    // kids[0] op kids[1]
  kTernary,   // kids[1] if kids[0] else kids[2] (kids[2] null: undefined when false)
  kSpread,    // *kids[0] inside a call
};

struct Expr {
  ExprKind kind;
  int line = 0, col = 0;
  Value value;       // kLiteral
  std::string name;  // kIdent, kAttr, kFilter, kTest; operator for kUnary/kBinary
  bool negate = false;
  std::vector<ExprPtr> kids;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind { kText, kOutput, kIf, kFor, kSet, kMacro, kCallBlock, kFilterBlock, kBreak, kContinue };

struct Param {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;                // kText; macro name
  ExprPtr expr;                    // output / if condition / for iterable / set value / call / filter
  ExprPtr target;                  // set target (ident, tuple, attr)
  ExprPtr cond;                    // for ... if cond
  std::vector<std::string> names;  // for loop variables
  std::vector<Param> params;       // macro parameters / call-block caller parameters
  Body body, else_body;
};

// Tokens -> statements; throws Error naming the line/column and what was expected.
Body parse_tokens(const std::vector<Token>& tokens);

}  // namespace edge::jinja
