// Attribute and item access, string/dict methods and the global functions of the
// chat-template engine (raise_exception, range, namespace, strftime_now, dict).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>

#include "tokenizer/chat_template_eval.h"

namespace edge::jinja {
namespace {

const std::string& string_arg(const Args& a, size_t i, const char* method) {
  if (i >= a.pos.size() || !a.pos[i].is_string()) {
    throw Error(std::string(method) + "() argument " + std::to_string(i + 1) + " must be a string");
  }
  return a.pos[i].s;
}

bool affix_match(const std::string& s, const Value& pattern, bool prefix, const char* method) {
  auto one = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return prefix ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (pattern.is_string()) return one(pattern.s);
  if (pattern.is_array()) {
    for (const auto& p : *pattern.arr) {
      if (!p.is_string()) throw Error(std::string(method) + "() tuple elements must be strings");
      if (one(p.s)) return true;
    }
    return false;
  }
  throw Error(std::string(method) + "() argument must be a string or a tuple of strings");
}

// Python str.split(sep=None, maxsplit=-1).
Value split(const std::string& s, const Args& a) {
  const Value* sep = a.get(0, "sep");
  const Value* max_v = a.get(1, "maxsplit");
  const int64_t maxsplit = max_v && max_v->kind == Kind::kInt ? max_v->i : -1;
  Array parts;
  if (!sep || sep->is_none()) {
    const std::vector<std::string> chars = utf8_chars(s);
    size_t i = 0;
    auto space = [&](size_t k) { return utf8_trim(chars[k], TrimSide::kLeft).empty(); };
    while (i < chars.size()) {
      while (i < chars.size() && space(i)) ++i;
      if (i >= chars.size()) break;
      std::string word;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        for (; i < chars.size(); ++i) word += chars[i];
        parts.push_back(Value::string(word));
        break;
      }
      for (; i < chars.size() && !space(i); ++i) word += chars[i];
      parts.push_back(Value::string(word));
    }
    return Value::array(std::move(parts));
  }
  if (!sep->is_string()) throw Error("split() separator must be a string or none");
  if (sep->s.empty()) throw Error("split(): empty separator");
  size_t start = 0;
  while (true) {
    const size_t hit = s.find(sep->s, start);
    if (hit == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit)) break;
    parts.push_back(Value::string(s.substr(start, hit - start)));
    start = hit + sep->s.size();
  }
  parts.push_back(Value::string(s.substr(start)));
  return Value::array(std::move(parts));
}

// Python str.replace(old, new[, count]); an empty `old` inserts between code points.
std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (from.empty()) {
    for (const auto& c : utf8_chars(s)) {
      if (count < 0 || done < count) out += to, ++done;
      out += c;
      check_built_size(out.size(), "replace()");
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(from, start);
    if (hit == std::string::npos) break;
    out.append(s, start, hit - start);
    out += to;
    start = hit + from.size();
    ++done;
    check_built_size(out.size(), "replace()");
  }
  out.append(s, start);
  return out;
}

// The reference's title(): uppercase each ASCII word character that starts a word.
std::string title_case(const std::string& s) {
  std::string out = s;
  auto word = [](unsigned char c) { return std::isalnum(c) || c == '_'; };
  for (size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    if (word(c) && (i == 0 || !word(static_cast<unsigned char>(out[i - 1]))) && c >= 'a' && c <= 'z') {
      out[i] = static_cast<char>(c - 32);
    }
  }
  return out;
}

Value string_method(const std::string& s, const std::string& name, const Args& a) {
  if (name == "upper") return Value::string(utf8_upper(s));
  if (name == "lower") return Value::string(utf8_lower(s));
  if (name == "title") return Value::string(title_case(s));
  if (name == "capitalize") return Value::string(capitalize(s));
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const TrimSide side = name == "strip" ? TrimSide::kBoth : name == "lstrip" ? TrimSide::kLeft : TrimSide::kRight;
    const Value* chars = a.get(0, "chars");
    if (chars && chars->is_string()) return Value::string(utf8_trim(s, side, &chars->s));
    return Value::string(utf8_trim(s, side));
  }
  if (name == "startswith" || name == "endswith") {
    if (a.pos.empty()) throw Error(name + "() requires an argument");
    return Value::boolean(affix_match(s, a.pos[0], name == "startswith", name.c_str()));
  }
  if (name == "split") return split(s, a);
  if (name == "replace") {
    const Value* count = a.get(2, "count");
    const int64_t n = count && count->kind == Kind::kInt ? count->i : -1;
    return Value::string(replace_all(s, string_arg(a, 0, "replace"), string_arg(a, 1, "replace"), n));
  }
  if (name == "find") {
    const size_t hit = s.find(string_arg(a, 0, "find"));
    return Value::integer(hit == std::string::npos ? -1 : static_cast<int64_t>(utf16_length(s.substr(0, hit))));
  }
  if (name == "count") {
    const std::string& sub = string_arg(a, 0, "count");
    if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_chars(s).size()) + 1);
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Value::integer(n);
  }
  if (name == "join") {
    if (a.pos.empty() || !a.pos[0].is_array()) throw Error("join() argument must be a list");
    std::string out;
    for (size_t i = 0; i < a.pos[0].arr->size(); ++i) out += (i ? s : "") + to_display((*a.pos[0].arr)[i]);
    return Value::string(out);
  }
  throw Error("unknown string method '" + name + "'");
}

bool is_string_method(const std::string& n) {
  static const char* kNames[] = {"upper",      "lower", "title", "capitalize", "strip", "lstrip", "rstrip",
                                 "startswith", "endswith", "split", "replace", "find",  "count",  "join"};
  for (const char* k : kNames) {
    if (n == k) return true;
  }
  return false;
}

Value dict_items(const Object& o) {
  Array items;
  for (const auto& [k, v] : o.entries) items.push_back(Value::array({Value::string(k), v}));
  return Value::array(std::move(items));
}

Value dict_method(const Value& self, const std::string& name, const Args& a) {
  const Object& o = *self.obj;
  if (name == "items") return dict_items(o);
  if (name == "keys" || name == "values") {
    Array out;
    for (const auto& [k, v] : o.entries) out.push_back(name == "keys" ? Value::string(k) : v);
    return Value::array(std::move(out));
  }
  if (name == "get") {
    if (a.pos.empty() || !a.pos[0].is_string()) throw Error("dict.get() key must be a string");
    const Value* v = o.find(a.pos[0].s);
    if (v) return *v;
    return a.pos.size() > 1 ? a.pos[1] : Value::null();
  }
  return apply_filter("dictsort", self, a);
}

}  // namespace

std::string capitalize(const std::string& s) {
  const std::vector<std::string> chars = utf8_chars(s);
  if (chars.empty()) return s;
  return utf8_upper(chars[0]) + s.substr(chars[0].size());
}

Value dict_items_value(const Value& v) { return dict_items(*v.obj); }

Value get_attribute(const Value& object, const std::string& name) {
  if (object.has_attrs()) {
    if (const Value* v = object.obj->find(name)) return *v;
    if (object.is_object() && (name == "items" || name == "keys" || name == "values" || name == "get" ||
                               name == "dictsort")) {
      return Value::function([object, name](const Args& a) { return dict_method(object, name, a); });
    }
    return Value::undefined();
  }
  if (object.is_string()) {
    if (name == "length") return Value::integer(static_cast<int64_t>(utf16_length(object.s)));
    if (is_string_method(name)) {
      return Value::function([s = object.s, name](const Args& a) { return string_method(s, name, a); });
    }
    return Value::undefined();
  }
  if (object.is_array() && name == "length") return Value::integer(static_cast<int64_t>(object.arr->size()));
  if (object.is_array() && name == "append") {  // Python list.append: lists are shared, as in Python
    return Value::function([arr = object.arr](const Args& a) {
      if (a.pos.size() != 1) throw Error("append() takes exactly one argument");
      arr->push_back(a.pos[0]);
      return Value::null();
    });
  }
  return Value::undefined();
}

Value get_item(const Value& object, const Value& key) {
  if (key.is_string()) return get_attribute(object, key.s);
  if (key.kind != Kind::kInt) {
    throw Error(std::string("cannot index ") + object.type_name() + " with " + key.type_name());
  }
  if (object.is_array() || object.is_string()) {
    std::vector<std::string> chars;
    if (object.is_string()) chars = utf8_chars(object.s);
    const auto n = static_cast<int64_t>(object.is_array() ? object.arr->size() : chars.size());
    const int64_t i = key.i < 0 ? key.i + n : key.i;
    if (i < 0 || i >= n) return Value::undefined();
    return object.is_array() ? (*object.arr)[static_cast<size_t>(i)] : Value::string(chars[static_cast<size_t>(i)]);
  }
  if (object.is_undefined() || object.is_none()) return Value::undefined();
  throw Error(std::string("cannot index ") + object.type_name() + " with an integer");
}

// Python slicing semantics (negative bounds count from the end, step may be negative).
Value slice_value(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (!object.is_array() && !object.is_string()) throw Error(std::string("cannot slice ") + object.type_name());
  for (const Value* v : {&start_v, &stop_v, &step_v}) {
    if (!v->is_undefined() && !v->is_none() && v->kind != Kind::kInt) throw Error("slice indices must be integers");
  }
  std::vector<std::string> chars;
  if (object.is_string()) chars = utf8_chars(object.s);
  const auto n = static_cast<int64_t>(object.is_array() ? object.arr->size() : chars.size());
  const int64_t step = step_v.kind == Kind::kInt ? step_v.i : 1;
  if (step == 0) throw Error("slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (v.kind != Kind::kInt) return dflt;
    int64_t x = v.i < 0 ? v.i + n : v.i;
    if (step > 0) return std::min(std::max<int64_t>(x, 0), n);
    return std::min(std::max<int64_t>(x, -1), n - 1);
  };
  const int64_t start = clamp(start_v, step > 0 ? 0 : n - 1), stop = clamp(stop_v, step > 0 ? n : -1);
  Array items;
  std::string text;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (object.is_array()) {
      items.push_back((*object.arr)[static_cast<size_t>(i)]);
    } else {
      text += chars[static_cast<size_t>(i)];
    }
  }
  return object.is_array() ? Value::array(std::move(items)) : Value::string(std::move(text));
}

namespace {

Value range_fn(const Args& a) {
  for (const auto& v : a.pos) {
    if (v.kind != Kind::kInt) throw Error("range() arguments must be integers");
  }
  if (a.pos.empty() || a.pos.size() > 3) throw Error("range() takes 1 to 3 arguments");
  int64_t start = 0, stop = a.pos[0].i, step = 1;
  if (a.pos.size() >= 2) start = a.pos[0].i, stop = a.pos[1].i;
  if (a.pos.size() == 3) step = a.pos[2].i;
  if (step == 0) throw Error("range() step must not be zero");
  Array out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= 1000000) throw Error("range() too large");
    out.push_back(Value::integer(i));
  }
  return Value::array(std::move(out));
}

Value namespace_fn(const Args& a) {
  Value ns = Value::name_space();
  if (a.pos.size() > 1) throw Error("namespace() takes at most 1 positional argument");
  if (a.pos.size() == 1) {
    const Value& src = a.pos[0];
    if (src.is_object()) {
      for (const auto& [k, v] : src.obj->entries) ns.obj->set(k, v);
    } else if (src.is_array()) {
      for (const auto& pair : *src.arr) {
        if (!pair.is_array() || pair.arr->size() != 2 || !(*pair.arr)[0].is_string()) {
          throw Error("namespace() expects a mapping or a list of [key, value] pairs");
        }
        ns.obj->set((*pair.arr)[0].s, (*pair.arr)[1]);
      }
    } else {
      throw Error(std::string("namespace() argument must be a mapping, not ") + src.type_name());
    }
  }
  for (const auto& [k, v] : a.kw) ns.obj->set(k, v);
  return ns;
}

// Python-style strftime for the directives the reference supports, in local time.
Value strftime_now_fn(const Args& a) {
  const std::string& fmt = string_arg(a, 0, "strftime_now");
  static const char* kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                  "July",    "August",   "September", "October", "November", "December"};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  auto pad2 = [](int v) { return (v < 10 ? "0" : "") + std::to_string(v); };
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%' || i + 1 >= fmt.size()) {
      out += fmt[i];
      continue;
    }
    const char d = fmt[++i];
    switch (d) {
      case 'Y': out += std::to_string(tm.tm_year + 1900); break;
      case 'm': out += pad2(tm.tm_mon + 1); break;
      case 'd': out += pad2(tm.tm_mday); break;
      case 'H': out += pad2(tm.tm_hour); break;
      case 'M': out += pad2(tm.tm_min); break;
      case 'B': out += kMonths[tm.tm_mon]; break;
      case 'b': out += std::string(kMonths[tm.tm_mon]).substr(0, 3); break;
      case '%': out += '%'; break;
      default: out += '%', out += d;
    }
  }
  return Value::string(out);
}

}  // namespace

void install_globals(Scope& scope) {
  for (const char* t : {"true", "True"}) scope.vars[t] = Value::boolean(true);
  for (const char* f : {"false", "False"}) scope.vars[f] = Value::boolean(false);
  for (const char* n : {"none", "None"}) scope.vars[n] = Value::null();
  scope.vars["raise_exception"] = Value::function([](const Args& a) -> Value {
    throw Error(a.pos.empty() ? std::string("raise_exception() called") : to_display(a.pos[0]));
  });
  scope.vars["range"] = Value::function(range_fn);
  scope.vars["namespace"] = Value::function(namespace_fn);
  scope.vars["strftime_now"] = Value::function(strftime_now_fn);
  scope.vars["dict"] = Value::function([](const Args& a) {
    Value d = Value::object();
    for (const auto& [k, v] : a.kw) d.obj->set(k, v);
    return d;
  });
}

}  // namespace edge::jinja
