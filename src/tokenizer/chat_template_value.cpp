// Runtime values of the chat-template engine: truthiness, printing, JSON, comparisons and
// the UTF-8 string helpers the filters and methods share.
#include "tokenizer/chat_template_value.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace edge::jinja {

Value Value::array(Array items) {
  Value v;
  v.kind = Kind::kArray;
  v.arr = std::make_shared<Array>(std::move(items));
  return v;
}

Value Value::object() {
  Value v;
  v.kind = Kind::kObject;
  v.obj = std::make_shared<Object>();
  return v;
}

Value Value::name_space() {
  Value v = object();
  v.kind = Kind::kNamespace;
  return v;
}

Value Value::function(NativeFn f) {
  Value v;
  v.kind = Kind::kFunction;
  v.fn = std::make_shared<NativeFn>(std::move(f));
  return v;
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::kUndefined:
    case Kind::kNull: return false;
    case Kind::kBool: return b;
    case Kind::kInt: return i != 0;
    case Kind::kFloat: return f != 0 && !std::isnan(f);
    case Kind::kString: return !s.empty();
    case Kind::kArray: return !arr->empty();
    case Kind::kObject: return !obj->entries.empty();
    case Kind::kNamespace:
    case Kind::kFunction: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNull: return "none";
    case Kind::kBool: return "boolean";
    case Kind::kInt: return "integer";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kArray: return "list";
    case Kind::kObject: return "dict";
    case Kind::kNamespace: return "namespace";
    case Kind::kFunction: return "function";
  }
  return "?";
}

const Value* Object::find(const std::string& key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Object::set(const std::string& key, Value v) {
  for (auto& [k, old] : entries) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  entries.emplace_back(key, std::move(v));
}

const Value* Args::kwarg(const std::string& name) const {
  for (const auto& [k, v] : kw) {
    if (k == name) return &v;
  }
  return nullptr;
}

const Value* Args::get(size_t i, const std::string& name) const {
  if (i < pos.size()) return &pos[i];
  return kwarg(name);
}

// JS Number.prototype.toString: shortest round-trip digits, plain notation for decimal
// exponents in [-6, 21), exponent notation ("1e+21", "1.5e-7") outside.
std::string js_number(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  if (d == 0) return "0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-d.ddde+XX"
  std::string out;
  if (sci[0] == '-') {
    out = "-";
    sci.erase(0, 1);
  }
  const size_t epos = sci.find('e');
  const int exp10 = std::stoi(sci.substr(epos + 1));
  std::string digits = sci.substr(0, epos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;
  if (k <= n && n <= 21) return out + digits + std::string(n - k, '0');
  if (0 < n && n <= 21) return out + digits.substr(0, n) + "." + digits.substr(n);
  if (-6 < n && n <= 0) return out + "0." + std::string(-n, '0') + digits;
  std::string mant = digits.substr(0, 1);
  if (k > 1) mant += "." + digits.substr(1);
  return out + mant + "e" + (n - 1 >= 0 ? "+" : "-") + std::to_string(std::abs(n - 1));
}

static std::string float_display(double f) {
  if (f == 0 && std::signbit(f)) return "-0.0";
  std::string s = js_number(f);
  if (std::isfinite(f) && f == std::floor(f) && s.find('e') == std::string::npos) s += ".0";
  return s;
}

std::string to_display(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
    case Kind::kNull: return "";
    case Kind::kBool: return v.b ? "true" : "false";
    case Kind::kInt: return std::to_string(v.i);
    case Kind::kFloat: return float_display(v.f);
    case Kind::kString: return v.s;
    case Kind::kArray:
    case Kind::kObject:
    case Kind::kNamespace: return to_json(v, JsonOptions{}, /*undefined_as_null=*/false);
    case Kind::kFunction: return "<function>";
  }
  return "";
}

// Decodes one UTF-8 code point at s[i] (advancing i); invalid bytes decode as themselves.
static uint32_t next_cp(const std::string& s, size_t& i) {
  utf8proc_int32_t cp = 0;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                  static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
  if (n <= 0) {
    return static_cast<unsigned char>(s[i++]);
  }
  i += static_cast<size_t>(n);
  return static_cast<uint32_t>(cp);
}

static void append_cp(std::string& out, uint32_t cp) {
  utf8proc_uint8_t buf[4];
  const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

// JSON.stringify string escaping: only quote, backslash and controls are escaped; with
// ensure_ascii every UTF-16 unit >= 0x7f becomes \uXXXX (lowercase hex).
std::string json_quote(const std::string& s, bool ensure_ascii) {
  std::string out = "\"";
  char hex[16];
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const uint32_t cp = next_cp(s, i);
      if (!ensure_ascii) {
        append_cp(out, cp);
      } else if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        std::snprintf(hex, sizeof(hex), "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
        out += hex;
      } else {
        std::snprintf(hex, sizeof(hex), "\\u%04x", cp);
        out += hex;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
          std::snprintf(hex, sizeof(hex), "\\u%04x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void check_built_size(size_t bytes, const char* what) {
  if (bytes > kMaxRenderBytes)
    throw Error(std::string(what) + " builds too much text (over " +
                std::to_string(kMaxRenderBytes >> 20) + " MiB)");
}

static std::string json_container(const Value& v, const JsonOptions& opt, bool undef_null, int depth) {
  std::string item_sep = opt.indent > 0 ? "," : ", ", key_sep = ": ";
  if (opt.custom_separators) {
    item_sep = opt.item_sep;
    key_sep = opt.key_sep;
  }
  const std::string unit = opt.indent > 0 ? std::string(static_cast<size_t>(opt.indent), ' ') : "";
  std::string base = "\n", child;
  for (int d = 0; d < depth; ++d) base += unit;
  child = base + unit;
  const bool pretty = opt.indent > 0;
  std::vector<std::string> parts;
  if (v.kind == Kind::kArray) {
    for (const auto& e : *v.arr) parts.push_back(to_json(e, opt, undef_null, depth + 1));
  } else {
    auto entries = v.obj->entries;
    if (opt.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    for (const auto& [k, e] : entries) {
      parts.push_back((pretty ? child : "") + json_quote(k, opt.ensure_ascii) + key_sep +
                      to_json(e, opt, undef_null, depth + 1));
    }
  }
  const bool is_arr = v.kind == Kind::kArray;
  std::string out = is_arr ? "[" : "{";
  if (pretty && !parts.empty() && is_arr) out += child;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += item_sep + (pretty && is_arr ? child : "");
    out += parts[i];
  }
  if (pretty && !parts.empty()) out += base;
  return out + (is_arr ? "]" : "}");
}

std::string to_json(const Value& v, const JsonOptions& opt, bool undefined_as_null, int depth) {
  switch (v.kind) {
    case Kind::kUndefined: return undefined_as_null ? "null" : "undefined";
    case Kind::kNull: return "null";
    case Kind::kBool: return v.b ? "true" : "false";
    case Kind::kInt: return std::to_string(v.i);
    case Kind::kFloat: return std::isfinite(v.f) ? js_number(v.f) : "null";
    case Kind::kString: return json_quote(v.s, opt.ensure_ascii);
    case Kind::kArray:
    case Kind::kObject:
    case Kind::kNamespace: return json_container(v, opt, undefined_as_null, depth);
    case Kind::kFunction: throw Error("cannot convert a function to JSON");
  }
  return "null";
}

bool values_equal(const Value& a, const Value& b) {
  const bool a_num = a.is_number() || a.kind == Kind::kBool, b_num = b.is_number() || b.kind == Kind::kBool;
  if (a_num && b_num) return a.as_double() == b.as_double();
  const bool a_nil = a.is_none() || a.is_undefined(), b_nil = b.is_none() || b.is_undefined();
  if (a_nil || b_nil) return a_nil && b_nil;  // JS: null == undefined
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::kString: return a.s == b.s;
    case Kind::kArray:
      if (a.arr->size() != b.arr->size()) return false;
      for (size_t i = 0; i < a.arr->size(); ++i) {
        if (!values_equal((*a.arr)[i], (*b.arr)[i])) return false;
      }
      return true;
    case Kind::kObject:
    case Kind::kNamespace:
      if (a.obj->entries.size() != b.obj->entries.size()) return false;
      for (const auto& [k, v] : a.obj->entries) {
        const Value* o = b.obj->find(k);
        if (!o || !values_equal(v, *o)) return false;
      }
      return true;
    default: return a.fn == b.fn;
  }
}

int compare_values(const Value& a, const Value& b, bool case_sensitive) {
  const bool a_num = a.is_number() || a.kind == Kind::kBool, b_num = b.is_number() || b.kind == Kind::kBool;
  if (a_num && b_num) {
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.kind == b.kind && (a.is_none() || a.is_undefined())) return 0;
  if (a.is_string() && b.is_string()) {
    const std::string x = case_sensitive ? a.s : utf8_lower(a.s), y = case_sensitive ? b.s : utf8_lower(b.s);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  throw Error(std::string("cannot compare ") + a.type_name() + " with " + b.type_name());
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    next_cp(s, i);
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

size_t utf16_length(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) n += next_cp(s, i) >= 0x10000 ? 2 : 1;
  return n;
}

static std::string map_case(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const uint32_t cp = next_cp(s, i);
    if (cp < 0x80) {
      const char c = static_cast<char>(cp);
      out += upper ? static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c)
                   : static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
      continue;
    }
    const auto cp32 = static_cast<utf8proc_int32_t>(cp);
    append_cp(out, static_cast<uint32_t>(upper ? utf8proc_toupper(cp32) : utf8proc_tolower(cp32)));
  }
  return out;
}

std::string utf8_upper(const std::string& s) { return map_case(s, true); }
std::string utf8_lower(const std::string& s) { return map_case(s, false); }

// The code points JS's \s and String.prototype.trim treat as whitespace.
bool is_unicode_space(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return true;
  switch (cp) {
    case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000: case 0xFEFF:
      return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string utf8_trim(const std::string& s, TrimSide side, const std::string* chars) {
  std::vector<uint32_t> set;
  if (chars) {
    for (size_t i = 0; i < chars->size();) set.push_back(next_cp(*chars, i));
  }
  auto strip = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_unicode_space(cp);
  };
  size_t begin = 0, end = s.size();
  if (side != TrimSide::kRight) {
    while (begin < end) {
      size_t j = begin;
      if (!strip(next_cp(s, j))) break;
      begin = j;
    }
  }
  if (side != TrimSide::kLeft) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      size_t j = start;
      if (!strip(next_cp(s, j))) break;
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

}  // namespace edge::jinja
