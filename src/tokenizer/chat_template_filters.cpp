// Filters and tests of the chat-template engine. Behaviour follows @huggingface/jinja
// where chat templates depend on it (tojson formatting, trim on non-strings being an
// error, join/length/default semantics), plus a few common Jinja filters it lacks
// (select/reject, map to a filter, string reverse/first/last).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "tokenizer/chat_template_eval.h"

namespace edge::jinja {
namespace {

using FilterFn = Value (*)(const Value&, const Args&);

[[noreturn]] void bad_operand(const char* filter, const Value& v) {
  throw Error(std::string("cannot apply filter '") + filter + "' to " + v.type_name());
}

const std::string& need_string(const char* filter, const Value& v) {
  if (!v.is_string()) bad_operand(filter, v);
  return v.s;
}

bool flag(const Args& a, size_t i, const char* name, bool dflt) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none() || v->is_undefined()) return dflt;
  if (v->kind != Kind::kBool) throw Error(std::string(name) + " must be a boolean");
  return v->b;
}

// Attribute path "a.b.0" into nested objects/arrays (sort, map, selectattr).
Value attribute_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (v.has_attrs()) {
      const Value* e = v.obj->find(part);
      v = e ? *e : Value::undefined();
    } else if (v.is_array() && !part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
      const size_t i = std::strtoull(part.c_str(), nullptr, 10);
      v = i < v.arr->size() ? (*v.arr)[i] : Value::undefined();
    } else {
      return Value::undefined();
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return v;
}

Value f_tojson(const Value& v, const Args& a) {
  JsonOptions opt;
  if (const Value* indent = a.get(0, "indent"); indent && !indent->is_none()) {
    if (indent->kind != Kind::kInt) throw Error("tojson indent must be an integer");
    if (indent->i > kMaxIndent)
      throw Error("tojson indent " + std::to_string(indent->i) + " is too large");
    opt.indent = static_cast<int>(indent->i);
  }
  opt.ensure_ascii = flag(a, 99, "ensure_ascii", false);
  opt.sort_keys = flag(a, 99, "sort_keys", false);
  if (const Value* sep = a.kwarg("separators"); sep && !sep->is_none()) {
    if (!sep->is_array() || sep->arr->size() != 2 || !(*sep->arr)[0].is_string() || !(*sep->arr)[1].is_string()) {
      throw Error("tojson separators must be a pair of strings");
    }
    opt.custom_separators = true;
    opt.item_sep = (*sep->arr)[0].s;
    opt.key_sep = (*sep->arr)[1].s;
  }
  return Value::string(to_json(v, opt));
}

Value f_length(const Value& v, const Args&) {
  if (v.is_array()) return Value::integer(static_cast<int64_t>(v.arr->size()));
  if (v.is_string()) return Value::integer(static_cast<int64_t>(utf16_length(v.s)));
  if (v.has_attrs()) return Value::integer(static_cast<int64_t>(v.obj->entries.size()));
  bad_operand("length", v);
}

Value chars_of(const std::string& s) {
  Array out;
  for (auto& c : utf8_chars(s)) out.push_back(Value::string(std::move(c)));
  return Value::array(std::move(out));
}

Value f_list(const Value& v, const Args&) {
  if (v.is_array()) return v;
  if (v.is_string()) return chars_of(v.s);
  if (v.is_object()) return get_attribute(v, "keys").fn->operator()(Args{});
  bad_operand("list", v);
}

Value f_first_last(const Value& v, bool first) {
  Value seq = v.is_string() ? chars_of(v.s) : v;
  if (!seq.is_array()) bad_operand(first ? "first" : "last", v);
  if (seq.arr->empty()) return Value::undefined();
  return first ? seq.arr->front() : seq.arr->back();
}
Value f_first(const Value& v, const Args&) { return f_first_last(v, true); }
Value f_last(const Value& v, const Args&) { return f_first_last(v, false); }

Value f_reverse(const Value& v, const Args&) {
  Value seq = v.is_string() ? chars_of(v.s) : v;
  if (!seq.is_array()) bad_operand("reverse", v);
  Array items(seq.arr->rbegin(), seq.arr->rend());
  if (!v.is_string()) return Value::array(std::move(items));
  std::string out;
  for (const auto& c : items) out += c.s;
  return Value::string(out);
}

Value f_sort(const Value& v, const Args& a) {
  if (!v.is_array()) bad_operand("sort", v);
  const bool reverse = flag(a, 0, "reverse", false), case_sensitive = flag(a, 1, "case_sensitive", false);
  const Value* attr = a.get(2, "attribute");
  std::string path;
  if (attr && attr->kind == Kind::kInt) path = std::to_string(attr->i);
  if (attr && attr->is_string()) path = attr->s;
  Array items = *v.arr;
  auto key = [&](const Value& x) { return path.empty() ? x : attribute_path(x, path); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const int c = compare_values(key(x), key(y), case_sensitive);
    return reverse ? c > 0 : c < 0;
  });
  return Value::array(std::move(items));
}

Value f_dictsort(const Value& v, const Args& a) {
  if (!v.is_object()) bad_operand("dictsort", v);
  const bool case_sensitive = flag(a, 0, "case_sensitive", false), reverse = flag(a, 2, "reverse", false);
  const Value* by = a.get(1, "by");
  const bool by_value = by && by->is_string() && by->s == "value";
  if (by && !(by->is_string() && (by->s == "key" || by->s == "value"))) throw Error("dictsort: by must be key or value");
  Array items = *dict_items_value(v).arr;
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const int c = compare_values((*x.arr)[by_value], (*y.arr)[by_value], case_sensitive);
    return reverse ? c > 0 : c < 0;
  });
  return Value::array(std::move(items));
}

Value f_join(const Value& v, const Args& a) {
  const Value seq = v.is_string() ? chars_of(v.s) : v;
  if (!seq.is_array()) bad_operand("join", v);
  const Value* sep = a.get(0, "d");
  if (!sep) sep = a.kwarg("separator");
  if (sep && !sep->is_string()) throw Error("join separator must be a string");
  const Value* attr = a.kwarg("attribute");
  std::string out;
  for (size_t i = 0; i < seq.arr->size(); ++i) {
    if (i && sep) out += sep->s;
    const Value& e = (*seq.arr)[i];
    out += to_display(attr && attr->is_string() ? attribute_path(e, attr->s) : e);
  }
  return Value::string(out);
}

Value f_string(const Value& v, const Args&) { return Value::string(to_display(v)); }

Value f_unique(const Value& v, const Args&) {
  if (!v.is_array()) bad_operand("unique", v);
  Array out;
  for (const auto& e : *v.arr) {
    bool seen = false;
    for (const auto& o : out) seen = seen || (o.kind == e.kind && values_equal(o, e));
    if (!seen) out.push_back(e);
  }
  return Value::array(std::move(out));
}

Value f_upper(const Value& v, const Args&) { return Value::string(utf8_upper(need_string("upper", v))); }
Value f_lower(const Value& v, const Args&) { return Value::string(utf8_lower(need_string("lower", v))); }
Value f_title(const Value& v, const Args&) {
  return get_attribute(Value::string(need_string("title", v)), "title").fn->operator()(Args{});
}
Value f_capitalize(const Value& v, const Args&) { return Value::string(capitalize(need_string("capitalize", v))); }
Value f_trim(const Value& v, const Args& a) {
  const Value* chars = a.get(0, "chars");
  const std::string& s = need_string("trim", v);
  return Value::string(chars && chars->is_string() ? utf8_trim(s, TrimSide::kBoth, &chars->s)
                                                   : utf8_trim(s, TrimSide::kBoth));
}
Value f_replace(const Value& v, const Args& a) {
  return get_attribute(Value::string(need_string("replace", v)), "replace").fn->operator()(a);
}

Value f_indent(const Value& v, const Args& a) {
  const std::string& s = need_string("indent", v);
  const Value* width = a.get(0, "width");
  std::string pad(4, ' ');
  if (width && width->kind == Kind::kInt) {
    if (width->i > kMaxIndent)
      throw Error("indent width " + std::to_string(width->i) + " is too large");
    pad.assign(static_cast<size_t>(std::max<int64_t>(width->i, 0)), ' ');
  }
  if (width && width->is_string()) pad = width->s;
  const bool first = flag(a, 1, "first", false), blank = flag(a, 2, "blank", false);
  std::string out;
  size_t start = 0;
  for (size_t line = 0;; ++line) {
    const size_t nl = s.find('\n', start);
    const std::string text = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if ((line > 0 || first) && (blank || !text.empty())) out += pad;
    out += text;
    check_built_size(out.size(), "indent");
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return Value::string(out);
}

Value to_number(const Value& v, const Args& a, bool to_int) {
  const Value* dflt = a.get(0, "default");
  const Value fallback = dflt ? *dflt : to_int ? Value::integer(0) : Value::number(0);
  if (v.kind == Kind::kBool) return to_int ? Value::integer(v.b) : Value::number(v.b);
  if (v.kind == Kind::kInt) return to_int ? v : Value::number(v.as_double());
  if (v.kind == Kind::kFloat) {
    const double fl = std::floor(v.f);
    if (!to_int) return v;
    return fl > -9.2e18 && fl < 9.2e18 ? Value::integer(static_cast<int64_t>(fl)) : fallback;
  }
  if (!v.is_string()) bad_operand(to_int ? "int" : "float", v);
  const char* p = v.s.c_str();
  char* end = nullptr;
  const double d = to_int ? static_cast<double>(std::strtoll(p, &end, 10)) : std::strtod(p, &end);
  if (end == p || (to_int && !(d > -9.2e18 && d < 9.2e18))) return fallback;
  return to_int ? Value::integer(static_cast<int64_t>(d)) : Value::number(d);
}
Value f_int(const Value& v, const Args& a) { return to_number(v, a, true); }
Value f_float(const Value& v, const Args& a) { return to_number(v, a, false); }

Value f_abs(const Value& v, const Args&) {
  if (v.kind == Kind::kInt) return v.i < 0 && v.i > INT64_MIN ? Value::integer(-v.i) : v;
  if (v.kind == Kind::kFloat) return Value::number(std::fabs(v.f));
  bad_operand("abs", v);
}

Value f_default(const Value& v, const Args& a) {
  const Value* dflt = a.get(0, "default_value");
  const bool boolean = flag(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return dflt ? *dflt : Value::string("");
  return v;
}

Value f_items(const Value& v, const Args&) {
  if (v.is_object()) return dict_items_value(v);
  if (v.is_undefined()) return Value::array();
  bad_operand("items", v);
}

Value dict_view(const Value& v, const char* name) {
  if (!v.is_object()) bad_operand(name, v);
  return get_attribute(v, name).fn->operator()(Args{});
}
Value f_keys(const Value& v, const Args&) { return dict_view(v, "keys"); }
Value f_values(const Value& v, const Args&) { return dict_view(v, "values"); }

// selectattr/rejectattr(attr[, test[, arg]]): a missing attribute never passes the test.
Value select_attr(const Value& v, const Args& a, bool select) {
  if (!v.is_array()) bad_operand(select ? "selectattr" : "rejectattr", v);
  if (a.pos.empty() || !a.pos[0].is_string()) throw Error("selectattr/rejectattr need an attribute name");
  Args test_args;
  test_args.pos.assign(a.pos.begin() + std::min<size_t>(a.pos.size(), 2), a.pos.end());
  Array out;
  for (const auto& item : *v.arr) {
    if (!item.has_attrs()) throw Error("selectattr/rejectattr can only be applied to a list of objects");
    const Value attr = attribute_path(item, a.pos[0].s);
    bool pass = false;
    if (!attr.is_undefined()) pass = a.pos.size() > 1 ? apply_test(a.pos[1].s, attr, test_args) : attr.truthy();
    if (pass == select) out.push_back(item);
  }
  return Value::array(std::move(out));
}
Value f_selectattr(const Value& v, const Args& a) { return select_attr(v, a, true); }
Value f_rejectattr(const Value& v, const Args& a) { return select_attr(v, a, false); }

// select/reject([test[, arg]]): items passing the test (default: truthy).
Value select_items(const Value& v, const Args& a, bool select) {
  if (!v.is_array()) bad_operand(select ? "select" : "reject", v);
  Args test_args;
  if (a.pos.size() > 1) test_args.pos.assign(a.pos.begin() + 1, a.pos.end());
  Array out;
  for (const auto& item : *v.arr) {
    const bool pass = a.pos.empty() ? item.truthy() : apply_test(to_display(a.pos[0]), item, test_args);
    if (pass == select) out.push_back(item);
  }
  return Value::array(std::move(out));
}
Value f_select(const Value& v, const Args& a) { return select_items(v, a, true); }
Value f_reject(const Value& v, const Args& a) { return select_items(v, a, false); }

Value f_map(const Value& v, const Args& a) {
  if (!v.is_array()) bad_operand("map", v);
  Array out;
  if (const Value* attr = a.kwarg("attribute")) {
    if (!attr->is_string()) throw Error("map: attribute must be a string");
    const Value* dflt = a.kwarg("default");
    for (const auto& item : *v.arr) {
      const Value x = attribute_path(item, attr->s);
      out.push_back(x.is_undefined() && dflt ? *dflt : x);
    }
    return Value::array(std::move(out));
  }
  if (a.pos.empty() || !a.pos[0].is_string()) throw Error("map needs attribute= or a filter name");
  Args rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  for (const auto& item : *v.arr) out.push_back(apply_filter(a.pos[0].s, item, rest));
  return Value::array(std::move(out));
}

Value f_safe(const Value& v, const Args&) { return v; }
Value f_bool(const Value& v, const Args&) { return Value::boolean(v.truthy()); }

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> kFilters = {
      {"tojson", f_tojson},   {"length", f_length},     {"count", f_length},       {"list", f_list},
      {"first", f_first},     {"last", f_last},         {"reverse", f_reverse},    {"sort", f_sort},
      {"dictsort", f_dictsort}, {"join", f_join},       {"string", f_string},      {"unique", f_unique},
      {"upper", f_upper},     {"lower", f_lower},       {"title", f_title},        {"capitalize", f_capitalize},
      {"trim", f_trim},       {"replace", f_replace},   {"indent", f_indent},      {"int", f_int},
      {"float", f_float},     {"abs", f_abs},           {"default", f_default},    {"d", f_default},
      {"items", f_items},     {"keys", f_keys},         {"values", f_values},      {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr}, {"select", f_select}, {"reject", f_reject},    {"map", f_map},
      {"safe", f_safe},       {"bool", f_bool},
  };
  return kFilters;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& operand, const Args& args) {
  const auto& table = filters();
  const auto it = table.find(name);
  if (it == table.end()) throw Error("unknown filter '" + name + "'");
  return it->second(operand, args);
}

bool apply_test(const std::string& name, const Value& v, const Args& a) {
  const Value* arg = a.pos.empty() ? nullptr : &a.pos[0];
  auto need_arg = [&]() -> const Value& {
    if (!arg) throw Error("test '" + name + "' needs an argument");
    return *arg;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind == Kind::kBool;
  if (name == "true") return v.kind == Kind::kBool && v.b;
  if (name == "false") return v.kind == Kind::kBool && !v.b;
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == Kind::kInt;
  if (name == "float") return v.kind == Kind::kFloat;
  if (name == "mapping") return v.is_object();
  if (name == "iterable") return v.is_array() || v.is_string();  // the reference: not dicts
  if (name == "sequence") return v.is_array() || v.is_string() || v.is_object();
  if (name == "callable") return v.kind == Kind::kFunction;
  if (name == "lower") return v.is_string() && utf8_lower(v.s) == v.s;
  if (name == "upper") return v.is_string() && utf8_upper(v.s) == v.s;
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (v.kind != Kind::kInt) throw Error("test '" + name + "' needs an integer, got " + v.type_name());
    if (name == "divisibleby") {
      const Value& d = need_arg();
      if (d.kind != Kind::kInt || d.i == 0) throw Error("divisibleby needs a non-zero integer");
      return v.i % d.i == 0;
    }
    return (v.i % 2 != 0) == (name == "odd");
  }
  if (name == "eq" || name == "equalto" || name == "==") return values_equal(v, need_arg());
  if (name == "ne" || name == "!=") return !values_equal(v, need_arg());
  if (name == "sameas") return v.kind == need_arg().kind && values_equal(v, *arg);
  if (name == "in") {
    const Value& c = need_arg();
    if (c.is_array()) {
      return std::any_of(c.arr->begin(), c.arr->end(), [&](const Value& e) { return values_equal(e, v); });
    }
    if (c.is_string() && v.is_string()) return c.s.find(v.s) != std::string::npos;
    if (c.is_object() && v.is_string()) return c.obj->find(v.s) != nullptr;
    return false;
  }
  for (const char* op : {"lt", "le", "gt", "ge", "<", "<=", ">", ">="}) {
    if (name != op) continue;
    const int c = compare_values(v, need_arg(), true);
    const std::string n = name;
    return n == "lt" || n == "<" ? c < 0 : n == "le" || n == "<=" ? c <= 0 : n == "gt" || n == ">" ? c > 0 : c >= 0;
  }
  throw Error("unknown test '" + name + "'");
}

}  // namespace edge::jinja
