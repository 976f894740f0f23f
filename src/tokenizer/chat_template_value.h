// Runtime values of the chat-template Jinja engine (internal to the tokenizer layer).
//
// Semantics follow @huggingface/jinja (the reference the conformance tests compare
// against): undefined is falsy and renders as "", booleans render as true/false, floats
// with an integral value render with ".0", containers render as Python-style JSON.
// Arrays, objects and namespaces are shared by reference (a namespace attribute set inside
// a loop must be seen after it); objects keep insertion order like JS Maps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace edge::jinja {

// Thrown inside the engine only; ChatTemplate converts it to a Status at the API boundary.
struct Error : std::runtime_error {
  explicit Error(const std::string& m, int line = 0) : std::runtime_error(m), line(line) {}
  int line;  // 1-based template line, 0 when unknown
};

// Limits that keep one render bounded (chat_template_eval.cpp charges the rest): text one
// render may build, and the widest indent a filter accepts (real templates use 2 or 4).
inline constexpr uint64_t kMaxRenderBytes = 256ull << 20;
inline constexpr int64_t kMaxIndent = 256;
// Throws when a string being built passes kMaxRenderBytes (for filters whose output can be
// far larger than their input: replace, indent).
void check_built_size(size_t bytes, const char* what);

struct Value;
struct Object;
struct Args;
using Array = std::vector<Value>;
using ArrayPtr = std::shared_ptr<Array>;
using ObjectPtr = std::shared_ptr<Object>;
using NativeFn = std::function<Value(const Args&)>;

enum class Kind { kUndefined, kNull, kBool, kInt, kFloat, kString, kArray, kObject, kNamespace, kFunction };

struct Value {
  Kind kind = Kind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  ArrayPtr arr;
  ObjectPtr obj;  // kObject and kNamespace
  std::shared_ptr<NativeFn> fn;

  static Value undefined() { return {}; }
  static Value null() { Value v; v.kind = Kind::kNull; return v; }
  static Value boolean(bool x) { Value v; v.kind = Kind::kBool; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.kind = Kind::kInt; v.i = x; return v; }
  static Value number(double x) { Value v; v.kind = Kind::kFloat; v.f = x; return v; }
  static Value string(std::string x) { Value v; v.kind = Kind::kString; v.s = std::move(x); return v; }
  static Value array(Array items = {});
  static Value object();
  static Value name_space();
  static Value function(NativeFn f);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNull; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat; }
  bool is_array() const { return kind == Kind::kArray; }
  bool is_object() const { return kind == Kind::kObject; }
  bool has_attrs() const { return kind == Kind::kObject || kind == Kind::kNamespace; }
  double as_double() const { return kind == Kind::kInt ? static_cast<double>(i) : kind == Kind::kBool ? b : f; }

  bool truthy() const;
  const char* type_name() const;
};

// Insertion-ordered string-keyed map (chat messages have a handful of keys: linear is fine).
struct Object {
  std::vector<std::pair<std::string, Value>> entries;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

// Call arguments: positional, then keyword in source order. `caller` carries the body of a
// {% call %} block into the macro it invokes.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  std::shared_ptr<Value> caller;
  const Value* kwarg(const std::string& name) const;
  // Positional index `i`, else keyword `name`, else null.
  const Value* get(size_t i, const std::string& name) const;
};

// Text conversions.
std::string to_display(const Value& v);  // what {{ v }} prints (undefined/null print nothing at the caller)
std::string js_number(double d);         // JS Number.prototype.toString
struct JsonOptions {
  int indent = -1;  // <0: single line
  bool ensure_ascii = false;
  bool sort_keys = false;
  bool custom_separators = false;
  std::string item_sep, key_sep;
};
// Python-json.dumps-like output as produced by @huggingface/jinja's tojson.
std::string to_json(const Value& v, const JsonOptions& opt, bool undefined_as_null = true, int depth = 0);
std::string json_quote(const std::string& s, bool ensure_ascii);

bool values_equal(const Value& a, const Value& b);
// Ordering for sort/dictsort; throws Error for incomparable types.
int compare_values(const Value& a, const Value& b, bool case_sensitive);

// UTF-8 helpers: code points, JS-style case mapping and whitespace trimming.
std::vector<std::string> utf8_chars(const std::string& s);
size_t utf16_length(const std::string& s);
std::string utf8_upper(const std::string& s);
std::string utf8_lower(const std::string& s);
enum class TrimSide { kLeft, kRight, kBoth };
// chars == nullptr: Unicode whitespace; else any of the code points in *chars (Python str.strip).
std::string utf8_trim(const std::string& s, TrimSide side, const std::string* chars = nullptr);
bool is_unicode_space(uint32_t cp);

// JSON input conversion. A float with an integral value becomes an integer, as it does
// after JSON.parse in JS (the reference renders 3.0 from JSON as 3).
template <typename Json>
Value from_json(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::null();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return Value::integer(static_cast<int64_t>(j.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float: {
      const double d = j.template get<double>();
      if (d == static_cast<double>(static_cast<int64_t>(d)) && d > -9.0e15 && d < 9.0e15) {
        return Value::integer(static_cast<int64_t>(d));
      }
      return Value::number(d);
    }
    case nlohmann::json::value_t::string: return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      Array items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return Value::array(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value v = Value::object();
      for (auto it = j.begin(); it != j.end(); ++it) v.obj->entries.emplace_back(it.key(), from_json(it.value()));
      return v;
    }
    default: return Value::undefined();  // binary / discarded: not produced by JSON text
  }
}

}  // namespace edge::jinja
