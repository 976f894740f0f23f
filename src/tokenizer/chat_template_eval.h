// Evaluator of the chat-template engine (internal to the tokenizer layer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "tokenizer/chat_template_ast.h"

namespace edge::jinja {

// Variables of one block level. Loops, macros and call blocks open a child scope;
// `if` does not (a `set` inside an `if` is seen after it, as in Jinja).
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  Value lookup(const std::string& name) const;
};
using ScopePtr = std::shared_ptr<Scope>;

// Builtins (chat_template_builtins.cpp).
Value apply_filter(const std::string& name, const Value& operand, const Args& args);
bool apply_test(const std::string& name, const Value& operand, const Args& args);
Value get_attribute(const Value& object, const std::string& name);  // obj.name, incl. bound methods
Value get_item(const Value& object, const Value& key);              // obj[key]
Value slice_value(const Value& object, const Value& start, const Value& stop, const Value& step);
void install_globals(Scope& scope);
std::string capitalize(const std::string& s);  // first code point upper-cased, rest as is
Value dict_items_value(const Value& dict);      // [[key, value], ...]

class Interpreter {
 public:
  std::string render(const Body& program, const ScopePtr& globals);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Flow exec_body(const Body& body, const ScopePtr& scope, std::string& out);
  Flow exec(const Stmt& s, const ScopePtr& scope, std::string& out);
  Flow exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  void exec_set(const Stmt& s, const ScopePtr& scope);
  void exec_macro(const Stmt& s, const ScopePtr& scope);
  void exec_call_block(const Stmt& s, const ScopePtr& scope, std::string& out);
  Value call_macro(const Stmt& macro, const std::weak_ptr<Scope>& defined_in, const Args& args);

  Value eval(const Expr& e, const ScopePtr& scope);  // eval_expr() and its cost, charged
  Value eval_expr(const Expr& e, const ScopePtr& scope);
  Value eval_binary(const Expr& e, const ScopePtr& scope);
  Value eval_unary(const Expr& e, const ScopePtr& scope);
  Value eval_literal_container(const Expr& e, const ScopePtr& scope);
  Args eval_args(const Expr& e, size_t first, const ScopePtr& scope);
  Value eval_call(const Expr& e, const ScopePtr& scope);

  int depth_ = 0;  // macro call nesting, bounded so a recursive macro cannot overflow the stack
  // Work done so far, bounded (see charge()): a template is code from a model file, and a
  // nested loop or a string doubled in a loop must end in an error, not hang or eat memory.
  void charge(uint64_t steps, uint64_t bytes);
  void emit(std::string& out, const std::string& text);  // out += text, charged
  uint64_t steps_ = 0;                                   // statements run and expressions evaluated
  uint64_t bytes_ = 0;  // bytes of strings produced and emitted, and of list items built
};

}  // namespace edge::jinja
