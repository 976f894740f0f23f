// Evaluator of the chat-template engine: statements render into a string, expressions
// produce Values. Runtime errors are thrown as jinja::Error tagged with the line of the
// innermost statement; ChatTemplate turns them into a Status.
#include "tokenizer/chat_template_eval.h"

#include <cmath>

namespace edge::jinja {
namespace {

constexpr int kMaxCallDepth = 100;
// One render's budget. Real chat templates stay far below both (a 1000-message chat is
// ~2x10^5 steps and a few MiB; any prompt that fits a context window is far less than 1 GiB of
// text), and past them render() is an error. A loop iteration costs kIterationSteps: it
// builds the `loop` object, about ten values.
constexpr uint64_t kMaxSteps = 1'000'000;
constexpr uint64_t kIterationSteps = 10;
constexpr uint64_t kMaxBytes = kMaxRenderBytes;

// Integer results past +-2^63 (or NaN) stay floats: the cast would be undefined behaviour.
Value numeric_result(double r, bool is_float) {
  if (is_float || !(r > -9.2e18 && r < 9.2e18)) return Value::number(r);
  return Value::integer(static_cast<int64_t>(r));
}

bool numeric(const Value& v) { return v.is_number() || v.kind == Kind::kBool; }

Value membership(const std::string& op, const Value& left, const Value& right) {
  bool found = false;
  if (right.is_undefined()) {
    found = false;
  } else if (right.is_array()) {
    for (const auto& e : *right.arr) {
      if (e.kind == left.kind || (e.is_number() && left.is_number())) {
        if (values_equal(e, left)) {
          found = true;
          break;
        }
      }
    }
  } else if (right.is_string() && left.is_string()) {
    found = right.s.find(left.s) != std::string::npos;
  } else if (right.has_attrs() && left.is_string()) {
    found = right.obj->find(left.s) != nullptr;
  } else {
    throw Error(std::string("cannot test membership of ") + left.type_name() + " in " + right.type_name());
  }
  return Value::boolean(op == "in" ? found : !found);
}

// + - * / // % ** and ordering on numbers (booleans count as 0/1 only for **, as in the reference).
Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  const bool is_float = a.kind == Kind::kFloat || b.kind == Kind::kFloat;
  const double x = a.as_double(), y = b.as_double();
  if (op == "+") return numeric_result(x + y, is_float);
  if (op == "-") return numeric_result(x - y, is_float);
  if (op == "*") return numeric_result(x * y, is_float);
  if (op == "<") return Value::boolean(x < y);
  if (op == ">") return Value::boolean(x > y);
  if (op == "<=") return Value::boolean(x <= y);
  if (op == ">=") return Value::boolean(x >= y);
  if (op == "**") {
    if (x == 0 && y < 0) throw Error("0.0 cannot be raised to a negative power");
    const double r = std::pow(x, y);
    if (!std::isfinite(r)) throw Error("exponentiation result is not a finite real number");
    return numeric_result(r, is_float || y < 0);
  }
  if (y == 0) throw Error("division by zero");
  if (op == "/") return Value::number(x / y);
  if (op == "//") return numeric_result(std::floor(x / y), is_float);
  if (op == "%") {
    if (!is_float) {  // Python modulo: the sign follows the divisor
      const int64_t r = a.i % b.i;
      return Value::integer(r != 0 && ((r < 0) != (b.i < 0)) ? r + b.i : r);
    }
    return Value::number(x - y * std::floor(x / y));
  }
  throw Error("unknown operator '" + op + "'");
}

Value concat_or_compare(const std::string& op, const Value& a, const Value& b) {
  if (a.is_array() && b.is_array() && op == "+") {
    Array items = *a.arr;
    items.insert(items.end(), b.arr->begin(), b.arr->end());
    return Value::array(std::move(items));
  }
  if ((a.is_string() || b.is_string()) && op == "+") return Value::string(to_display(a) + to_display(b));
  if (a.is_string() && b.is_string() && (op == "<" || op == ">" || op == "<=" || op == ">=")) {
    const int c = a.s.compare(b.s);
    return Value::boolean(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
  }
  throw Error("unsupported operand types for '" + op + "': " + a.type_name() + " and " + b.type_name());
}

}  // namespace

Value Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    const auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  return Value::undefined();
}

void Interpreter::charge(uint64_t steps, uint64_t bytes) {
  steps_ += steps;
  bytes_ += bytes;
  if (steps_ > kMaxSteps)
    throw Error("the template runs too long (over " + std::to_string(kMaxSteps) + " steps)");
  if (bytes_ > kMaxBytes)
    throw Error("the template builds too much text (over " + std::to_string(kMaxBytes >> 20) +
                " MiB)");
}

void Interpreter::emit(std::string& out, const std::string& text) {
  charge(0, text.size());
  out += text;
}

std::string Interpreter::render(const Body& program, const ScopePtr& globals) {
  std::string out;
  exec_body(program, globals, out);
  return out;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const auto& s : body) {
    const Flow f = exec(*s, scope, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
  try {
    charge(1, 0);
    switch (s.kind) {
      case StmtKind::kText:
        emit(out, s.text);
        return Flow::kNormal;
      case StmtKind::kOutput: {
        const Value v = eval(*s.expr, scope);
        if (!v.is_undefined() && !v.is_none()) emit(out, to_display(v));
        return Flow::kNormal;
      }
      case StmtKind::kIf: return exec_body(eval(*s.expr, scope).truthy() ? s.body : s.else_body, scope, out);
      case StmtKind::kFor: return exec_for(s, scope, out);
      case StmtKind::kSet: exec_set(s, scope); return Flow::kNormal;
      case StmtKind::kMacro: exec_macro(s, scope); return Flow::kNormal;
      case StmtKind::kCallBlock: exec_call_block(s, scope, out); return Flow::kNormal;
      case StmtKind::kFilterBlock: {
        std::string inner;
        exec_body(s.body, scope, inner);
        const Args args = eval_args(*s.expr, 1, scope);
        emit(out, to_display(apply_filter(s.expr->name, Value::string(std::move(inner)), args)));
        return Flow::kNormal;
      }
      case StmtKind::kBreak: return Flow::kBreak;
      case StmtKind::kContinue: return Flow::kContinue;
    }
  } catch (const Error& e) {
    if (e.line == 0) throw Error(e.what(), s.line);
    throw;
  }
  return Flow::kNormal;
}

namespace {

std::vector<Value> loop_items(const Value& v) {
  switch (v.kind) {
    case Kind::kArray: return *v.arr;
    case Kind::kObject: {  // iterating a dict yields its keys
      std::vector<Value> keys;
      for (const auto& [k, e] : v.obj->entries) keys.push_back(Value::string(k));
      return keys;
    }
    case Kind::kString: {
      std::vector<Value> chars;
      for (auto& c : utf8_chars(v.s)) chars.push_back(Value::string(std::move(c)));
      return chars;
    }
    case Kind::kUndefined: return {};  // Jinja's Undefined iterates as empty
    default: throw Error(std::string("cannot iterate over ") + v.type_name());
  }
}

void bind_loop_vars(const std::vector<std::string>& names, const Value& item, Scope& scope) {
  if (names.size() == 1) {
    scope.vars[names[0]] = item;
    return;
  }
  if (!item.is_array()) throw Error(std::string("cannot unpack ") + item.type_name() + " into loop variables");
  if (item.arr->size() != names.size()) {
    throw Error(std::string("too ") + (item.arr->size() < names.size() ? "few" : "many") + " values to unpack");
  }
  for (size_t i = 0; i < names.size(); ++i) scope.vars[names[i]] = (*item.arr)[i];
}

Value loop_object(const std::vector<Value>& items, size_t i) {
  const auto n = static_cast<int64_t>(items.size()), k = static_cast<int64_t>(i);
  Value loop = Value::object();
  Object& o = *loop.obj;
  o.set("index", Value::integer(k + 1));
  o.set("index0", Value::integer(k));
  o.set("revindex", Value::integer(n - k));
  o.set("revindex0", Value::integer(n - k - 1));
  o.set("first", Value::boolean(k == 0));
  o.set("last", Value::boolean(k == n - 1));
  o.set("length", Value::integer(n));
  o.set("previtem", k > 0 ? items[i - 1] : Value::undefined());
  o.set("nextitem", k < n - 1 ? items[i + 1] : Value::undefined());
  o.set("cycle", Value::function([k](const Args& a) {
          if (a.pos.empty()) throw Error("loop.cycle() needs at least one argument");
          return a.pos[static_cast<size_t>(k) % a.pos.size()];
        }));
  return loop;
}

}  // namespace

Interpreter::Flow Interpreter::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  auto loop_scope = std::make_shared<Scope>();
  loop_scope->parent = scope;
  std::vector<Value> all = loop_items(eval(*s.expr, loop_scope)), items;
  if (s.cond) {
    for (const auto& item : all) {
      auto probe = std::make_shared<Scope>();
      probe->parent = loop_scope;
      bind_loop_vars(s.names, item, *probe);
      if (eval(*s.cond, probe).truthy()) items.push_back(item);
    }
  } else {
    items = std::move(all);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    charge(kIterationSteps, 0);  // an empty body still costs its iterations
    loop_scope->vars["loop"] = loop_object(items, i);
    bind_loop_vars(s.names, items[i], *loop_scope);
    if (exec_body(s.body, loop_scope, out) == Flow::kBreak) break;
  }
  if (items.empty()) exec_body(s.else_body, loop_scope, out);
  return Flow::kNormal;
}

void Interpreter::exec_set(const Stmt& s, const ScopePtr& scope) {
  Value v;
  if (s.expr) {
    v = eval(*s.expr, scope);
  } else {
    std::string body;
    exec_body(s.body, scope, body);
    v = Value::string(std::move(body));
  }
  const Expr& t = *s.target;
  if (t.kind == ExprKind::kIdent) {
    scope->vars[t.name] = std::move(v);
  } else if (t.kind == ExprKind::kTuple) {
    std::vector<std::string> names;
    for (const auto& k : t.kids) names.push_back(k->name);
    bind_loop_vars(names, v, *scope);
  } else {
    const Value target = eval(*t.kids[0], scope);
    if (target.kind != Kind::kNamespace) {
      throw Error(std::string("cannot assign attribute '") + t.name + "' on " + target.type_name() +
                  " (only namespace() objects)");
    }
    target.obj->set(t.name, std::move(v));
  }
}

namespace {

void bind_params(Interpreter* interp, const std::vector<Param>& params, const Args& args, const ScopePtr& scope,
                 const std::function<Value(const Expr&, const ScopePtr&)>& eval) {
  Value extra_kw = Value::object();
  std::vector<bool> bound(params.size(), false);
  for (size_t i = 0; i < params.size(); ++i) {
    const Value* v = i < args.pos.size() ? &args.pos[i] : args.kwarg(params[i].name);
    if (v) {
      scope->vars[params[i].name] = *v;
      bound[i] = true;
    } else {
      scope->vars[params[i].name] = Value::undefined();
    }
  }
  for (const auto& [k, v] : args.kw) {
    bool known = false;
    for (const auto& p : params) known = known || p.name == k;
    if (!known) extra_kw.obj->set(k, v);
  }
  Array varargs;
  for (size_t i = params.size(); i < args.pos.size(); ++i) varargs.push_back(args.pos[i]);
  scope->vars["varargs"] = Value::array(std::move(varargs));
  scope->vars["kwargs"] = extra_kw;
  // Defaults are evaluated after every name is bound, so one may refer to an earlier one.
  for (size_t i = 0; i < params.size(); ++i) {
    if (!bound[i] && params[i].default_value) scope->vars[params[i].name] = eval(*params[i].default_value, scope);
  }
}

}  // namespace

Value Interpreter::call_macro(const Stmt& macro, const std::weak_ptr<Scope>& defined_in, const Args& args) {
  if (depth_ >= kMaxCallDepth) throw Error("macro calls nested too deeply (recursion?)");
  ScopePtr parent = defined_in.lock();
  if (!parent) throw Error("macro '" + macro.text + "' called outside the scope that defined it");
  auto scope = std::make_shared<Scope>();
  scope->parent = parent;
  bind_params(this, macro.params, args, scope, [this](const Expr& e, const ScopePtr& s) { return eval(e, s); });
  scope->vars["caller"] = args.caller ? *args.caller : Value::undefined();
  ++depth_;
  std::string out;
  try {
    exec_body(macro.body, scope, out);
  } catch (...) {
    --depth_;
    throw;
  }
  --depth_;
  return Value::string(std::move(out));
}

void Interpreter::exec_macro(const Stmt& s, const ScopePtr& scope) {
  std::weak_ptr<Scope> weak = scope;  // weak: the scope holds this function (no cycle)
  const Stmt* macro = &s;
  scope->vars[s.text] = Value::function([this, macro, weak](const Args& a) { return call_macro(*macro, weak, a); });
}

void Interpreter::exec_call_block(const Stmt& s, const ScopePtr& scope, std::string& out) {
  std::weak_ptr<Scope> weak = scope;
  const Stmt* block = &s;
  Value caller = Value::function([this, block, weak](const Args& a) {
    ScopePtr parent = weak.lock();
    if (!parent) throw Error("caller() used outside its call block");
    auto inner = std::make_shared<Scope>();
    inner->parent = parent;
    bind_params(this, block->params, a, inner, [this](const Expr& e, const ScopePtr& sc) { return eval(e, sc); });
    std::string body;
    exec_body(block->body, inner, body);
    return Value::string(std::move(body));
  });
  const Expr& call = *s.expr;
  const Value fn = eval(*call.kids[0], scope);
  if (fn.kind != Kind::kFunction) throw Error(std::string("cannot call ") + fn.type_name() + " in {% call %}");
  Args args = eval_args(call, 1, scope);
  args.caller = std::make_shared<Value>(caller);
  emit(out, to_display((*fn.fn)(args)));
}

Args Interpreter::eval_args(const Expr& e, size_t first, const ScopePtr& scope) {
  Args args;
  for (size_t i = first; i < e.kids.size(); ++i) {
    const Expr& k = *e.kids[i];
    if (k.kind == ExprKind::kSpread) {
      const Value v = eval(*k.kids[0], scope);
      if (!v.is_array()) throw Error(std::string("cannot unpack ") + v.type_name() + " with *");
      args.pos.insert(args.pos.end(), v.arr->begin(), v.arr->end());
    } else {
      args.pos.push_back(eval(k, scope));
    }
  }
  for (const auto& [name, expr] : e.kwargs) {
    Value v = eval(*expr, scope);
    if (name != "**") {
      args.kw.emplace_back(name, std::move(v));
      continue;
    }
    if (!v.is_object()) throw Error(std::string("argument after ** must be a mapping, not ") + v.type_name());
    for (const auto& kv : v.obj->entries) args.kw.push_back(kv);
  }
  return args;
}

Value Interpreter::eval_call(const Expr& e, const ScopePtr& scope) {
  const Value fn = eval(*e.kids[0], scope);
  const Args args = eval_args(e, 1, scope);
  if (fn.kind != Kind::kFunction) {
    std::string what = e.kids[0]->kind == ExprKind::kIdent   ? "'" + e.kids[0]->name + "'"
                       : e.kids[0]->kind == ExprKind::kAttr ? "'." + e.kids[0]->name + "'"
                                                             : "expression";
    throw Error("cannot call " + what + ": it is " + fn.type_name() + ", not a function");
  }
  return (*fn.fn)(args);
}

Value Interpreter::eval_binary(const Expr& e, const ScopePtr& scope) {
  const std::string& op = e.name;
  const Value a = eval(*e.kids[0], scope);
  if (op == "and") return a.truthy() ? eval(*e.kids[1], scope) : a;
  if (op == "or") return a.truthy() ? a : eval(*e.kids[1], scope);
  const Value b = eval(*e.kids[1], scope);
  if (op == "==") return Value::boolean(values_equal(a, b));
  if (op == "!=") return Value::boolean(!values_equal(a, b));
  if (op == "in" || op == "not in") return membership(op, a, b);
  if (op == "~") return Value::string(to_display(a) + to_display(b));
  if (a.is_undefined() || b.is_undefined()) throw Error("cannot apply '" + op + "' to an undefined value");
  if (a.is_none() || b.is_none()) throw Error("cannot apply '" + op + "' to none");
  const bool bool_ok = op == "**";  // the reference treats booleans as numbers only for **
  const bool na = a.is_number() || (bool_ok && numeric(a)), nb = b.is_number() || (bool_ok && numeric(b));
  if (na && nb) return arithmetic(op, a, b);
  return concat_or_compare(op, a, b);
}

Value Interpreter::eval_unary(const Expr& e, const ScopePtr& scope) {
  const Value v = eval(*e.kids[0], scope);
  if (e.name == "not") return Value::boolean(!v.truthy());
  if (!numeric(v)) throw Error("bad operand type for unary " + e.name + ": " + v.type_name());
  const double sign = e.name == "-" ? -1 : 1;
  if (v.kind == Kind::kFloat) return Value::number(sign * v.f);
  return Value::integer(static_cast<int64_t>(sign) * (v.kind == Kind::kBool ? v.b : v.i));
}

Value Interpreter::eval_literal_container(const Expr& e, const ScopePtr& scope) {
  if (e.kind != ExprKind::kDict) {
    Array items;
    for (const auto& k : e.kids) items.push_back(eval(*k, scope));
    return Value::array(std::move(items));
  }
  Value d = Value::object();
  for (size_t i = 0; i + 1 < e.kids.size(); i += 2) {
    const Value key = eval(*e.kids[i], scope);
    if (!key.is_string()) throw Error(std::string("dict keys must be strings, got ") + key.type_name());
    d.obj->set(key.s, eval(*e.kids[i + 1], scope));
  }
  return d;
}

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  Value v = eval_expr(e, scope);
  uint64_t bytes = v.is_string() ? v.s.size() : 0;
  if (v.is_array()) {  // items are copied with the list; their strings are held by value
    for (const Value& item : *v.arr)
      bytes += sizeof(Value) + (item.is_string() ? item.s.size() : 0);
  }
  charge(1, bytes);
  return v;
}

Value Interpreter::eval_expr(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::kLiteral: return e.value;
    case ExprKind::kIdent: return scope->lookup(e.name);
    case ExprKind::kList:
    case ExprKind::kTuple:
    case ExprKind::kDict: return eval_literal_container(e, scope);
    case ExprKind::kAttr: return get_attribute(eval(*e.kids[0], scope), e.name);
    case ExprKind::kIndex: return get_item(eval(*e.kids[0], scope), eval(*e.kids[1], scope));
    case ExprKind::kSlice: {
      auto part = [&](size_t i) { return e.kids[i] ? eval(*e.kids[i], scope) : Value::undefined(); };
      return slice_value(eval(*e.kids[0], scope), part(1), part(2), part(3));
    }
    case ExprKind::kCall: return eval_call(e, scope);
    case ExprKind::kFilter: return apply_filter(e.name, eval(*e.kids[0], scope), eval_args(e, 1, scope));
    case ExprKind::kTest: {
      const bool r = apply_test(e.name, eval(*e.kids[0], scope), eval_args(e, 1, scope));
      return Value::boolean(e.negate ? !r : r);
    }
    case ExprKind::kUnary: return eval_unary(e, scope);
    case ExprKind::kBinary: return eval_binary(e, scope);
    case ExprKind::kTernary: {
      if (eval(*e.kids[0], scope).truthy()) return eval(*e.kids[1], scope);
      return e.kids[2] ? eval(*e.kids[2], scope) : Value::undefined();
    }
    case ExprKind::kSpread: throw Error("'*' unpacking is only allowed in call arguments");
  }
  return Value::undefined();
}

}  // namespace edge::jinja
