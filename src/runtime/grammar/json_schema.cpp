#include "runtime/grammar/json_schema.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "runtime/grammar/grammar.h"

namespace edge::grammar {

using json = nlohmann::ordered_json;

namespace {

// The JSON building blocks every generated grammar shares.
std::string base_rules() {
  return fmt::format(
      "ws ::= [ \\t\\n]{{0,{}}}\n"
      "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{{4}})\n"
      "string ::= \"\\\"\" char* \"\\\"\"\n"
      "integer ::= \"-\"? (\"0\" | [1-9] [0-9]{{0,15}})\n"
      "number ::= integer (\".\" [0-9]{{1,16}})? ([eE] [-+]? [0-9]{{1,2}})?\n"
      "boolean ::= \"true\" | \"false\"\n"
      "null ::= \"null\"\n"
      "value ::= object | array | string | number | boolean | null\n"
      "object ::= \"{{\" ws (string ws \":\" ws value ws (\",\" ws string ws \":\" ws value ws)*)? "
      "\"}}\"\n"
      "array ::= \"[\" ws (value ws (\",\" ws value ws)*)? \"]\"\n",
      kMaxWhitespace);
}

const std::set<std::string>& ignored_keywords() {
  static const std::set<std::string> k = {
      "title",      "description", "default",   "examples", "$schema",     "$id",   "$comment",
      "deprecated", "readOnly",    "writeOnly", "$defs",    "definitions", "strict"};
  return k;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, bool strict, std::string prefix)
      : root_(root), strict_(strict), prefix_(std::move(prefix)) {}

  // The rule `name` for the schema, and the rules it needs (the base rules not included).
  Expected<std::string> rules(const std::string& name) {
    ASSIGN_OR_RETURN(std::string top, visit(root_, "", 0));
    std::string out = name + " ::= " + top + "\n";
    for (const std::string& r : rules_) out += r;
    return out;
  }

 private:
  static Status refuse(const std::string& path, const std::string& what) {
    return Status::invalid_argument(
        fmt::format("json_schema{}: {}", path.empty() ? "" : " at " + path, what));
  }
  std::string add_rule(const std::string& hint, const std::string& body) {
    std::string name;
    for (char c : hint) name += (std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
    name = fmt::format("{}s{}-{}", prefix_, rules_.size(), name.substr(0, 24));
    rules_.push_back(name + " ::= " + body + "\n");
    return name;
  }

  Expected<std::string> visit(const json& s, const std::string& path, int depth) {
    if (depth > kMaxSchemaDepth)
      return refuse(path, fmt::format("nested deeper than {} levels", kMaxSchemaDepth));
    if (s.is_boolean()) {
      if (!s.get<bool>()) return refuse(path, "the schema 'false' matches nothing");
      return std::string("value");
    }
    if (!s.is_object()) return refuse(path, "a schema must be an object");
    for (const auto& [key, v] : s.items()) {
      static const std::set<std::string> known = {
          "type",    "properties", "required",  "additionalProperties",
          "items",   "enum",       "const",     "anyOf",
          "$ref",    "minLength",  "maxLength", "minItems",
          "maxItems"};
      if (!known.count(key) && !ignored_keywords().count(key))
        return refuse(path, fmt::format("keyword '{}' is not supported", key));
    }
    if (s.contains("$ref")) return ref(s, path);
    if (s.contains("const")) return literal(s["const"]);
    if (s.contains("enum")) return enumeration(s["enum"], path);
    if (s.contains("anyOf")) return any_of(s["anyOf"], path, depth);
    if (!s.contains("type")) {
      if (s.contains("properties")) return object(s, path, depth);
      if (s.contains("items")) return array(s, path, depth);
      return std::string("value");
    }
    const json& type = s["type"];
    if (type.is_string()) return typed(s, type.get<std::string>(), path, depth);
    if (!type.is_array() || type.empty())
      return refuse(path + "/type", "'type' must be a name or a list of names");
    std::string alts;
    for (const json& t : type) {
      if (!t.is_string()) return refuse(path + "/type", "'type' lists names");
      ASSIGN_OR_RETURN(std::string one, typed(s, t.get<std::string>(), path, depth));
      alts += (alts.empty() ? "" : " | ") + one;
    }
    return "(" + alts + ")";
  }

  Expected<std::string> typed(const json& s, const std::string& type, const std::string& path,
                              int depth) {
    if (type == "object") return object(s, path, depth);
    if (type == "array") return array(s, path, depth);
    if (type == "string") return string(s, path);
    if (type == "integer" || type == "number" || type == "boolean" || type == "null") return type;
    return refuse(path + "/type", fmt::format("type '{}' is not a JSON Schema type", type));
  }

  static Expected<int> count(const json& s, const char* key, const std::string& path) {
    if (!s.contains(key)) return -1;
    const json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 10000)
      return refuse(path + "/" + key, fmt::format("'{}' must be an integer in [0, 10000]", key));
    return v.get<int>();
  }
  static std::string bounds(int lo, int hi) {
    return hi < 0 ? fmt::format("{{{},}}", lo) : fmt::format("{{{},{}}}", lo, hi);
  }

  Expected<std::string> string(const json& s, const std::string& path) {
    ASSIGN_OR_RETURN(int lo, count(s, "minLength", path));
    ASSIGN_OR_RETURN(int hi, count(s, "maxLength", path));
    if (lo < 0 && hi < 0) return std::string("string");
    if (hi >= 0 && lo > hi) return refuse(path, "minLength exceeds maxLength");
    return add_rule("string", "\"\\\"\" char" + bounds(std::max(lo, 0), hi) + " \"\\\"\"");
  }

  Expected<std::string> literal(const json& v) {
    return gbnf_literal(v.dump());  // compact JSON: the only spelling allowed
  }
  Expected<std::string> enumeration(const json& e, const std::string& path) {
    if (!e.is_array() || e.empty())
      return refuse(path + "/enum", "'enum' must be a non-empty array");
    if (e.size() > kMaxEnumValues)
      return refuse(path + "/enum", fmt::format("more than {} values", kMaxEnumValues));
    std::string alts;
    for (const json& v : e) alts += (alts.empty() ? "" : " | ") + gbnf_literal(v.dump());
    return "(" + alts + ")";
  }

  Expected<std::string> any_of(const json& a, const std::string& path, int depth) {
    if (!a.is_array() || a.empty())
      return refuse(path + "/anyOf", "'anyOf' must be a non-empty array");
    std::string alts;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSIGN_OR_RETURN(std::string one,
                       visit(a[i], fmt::format("{}/anyOf/{}", path, i), depth + 1));
      alts += (alts.empty() ? "" : " | ") + one;
    }
    return add_rule("anyof", alts);
  }

  // "#" (the whole schema), "#/$defs/NAME" or "#/definitions/NAME": one rule each, made once
  // (so recursive schemas terminate here).
  Expected<std::string> ref(const json& s, const std::string& path) {
    if (!s["$ref"].is_string()) return refuse(path + "/$ref", "'$ref' must be a string");
    const std::string r = s["$ref"].get<std::string>();
    if (auto it = refs_.find(r); it != refs_.end()) return it->second;
    const json* target = nullptr;
    if (r == "#") {
      target = &root_;
    } else {
      for (const char* where : {"#/$defs/", "#/definitions/"}) {
        const std::string prefix = where;
        if (r.rfind(prefix, 0) != 0) continue;
        const std::string name = r.substr(prefix.size());
        auto defs = root_.find(prefix.substr(2, prefix.size() - 3));  // "$defs" or "definitions"
        if (defs == root_.end() || !defs->is_object()) continue;
        if (auto def = defs->find(name); def != defs->end()) target = &*def;
      }
    }
    if (!target)
      return refuse(path + "/$ref", fmt::format("'$ref' '{}' names nothing in $defs", r));
    // The rule's name first, its body once visited: a reference inside resolves to it.
    const std::string name = fmt::format("{}ref{}", prefix_, refs_.size());
    refs_[r] = name;
    ASSIGN_OR_RETURN(std::string body, visit(*target, r.substr(1), 1));
    rules_.push_back(name + " ::= " + body + "\n");
    return name;
  }

  Expected<std::string> array(const json& s, const std::string& path, int depth) {
    std::string item = "value";
    if (s.contains("items")) {
      ASSIGN_OR_RETURN(item, visit(s["items"], path + "/items", depth + 1));
    }
    ASSIGN_OR_RETURN(int lo, count(s, "minItems", path));
    ASSIGN_OR_RETURN(int hi, count(s, "maxItems", path));
    lo = std::max(lo, 0);
    if (hi >= 0 && lo > hi) return refuse(path, "minItems exceeds maxItems");
    if (hi == 0) return std::string("\"[\" ws \"]\"");
    const std::string more =
        "(\",\" ws " + item + " ws)" + bounds(std::max(lo - 1, 0), hi < 0 ? -1 : hi - 1);
    const std::string some = item + " ws " + more;
    return add_rule("array", "\"[\" ws " + (lo == 0 ? "(" + some + ")?" : some) + " \"]\"");
  }

  Expected<std::string> object(const json& s, const std::string& path, int depth) {
    const json props = s.value("properties", json::object());
    if (!props.is_object()) return refuse(path + "/properties", "'properties' must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array())
        return refuse(path + "/required", "'required' must be an array of names");
      for (const json& n : s["required"]) {
        if (!n.is_string() || !props.contains(n.get<std::string>()))
          return refuse(path + "/required",
                        fmt::format("'required' names {}, which is not in properties", n.dump()));
        required.insert(n.get<std::string>());
      }
    }
    const json extra = s.value("additionalProperties", json(true));
    if (strict_) {
      if (!(extra.is_boolean() && !extra.get<bool>()))
        return refuse(path, "strict mode: every object sets additionalProperties: false");
      for (const auto& [name, v] : props.items())
        if (!required.count(name))
          return refuse(path + "/required",
                        fmt::format("strict mode: every property is required ('{}' is not)", name));
    }
    properties_ += static_cast<int>(props.size());
    if (properties_ > kMaxSchemaProperties)
      return refuse(path,
                    fmt::format("more than {} properties in the schema", kMaxSchemaProperties));
    if (props.empty()) {
      if (extra.is_boolean() && !extra.get<bool>()) return std::string("\"{\" ws \"}\"");
      if (extra.is_object()) {  // a map: any keys, values of one schema
        ASSIGN_OR_RETURN(std::string v, visit(extra, path + "/additionalProperties", depth + 1));
        const std::string pair = "string ws \":\" ws " + v + " ws";
        return add_rule("map", "\"{\" ws (" + pair + " (\",\" ws " + pair + ")*)? \"}\"");
      }
      return std::string("object");
    }
    // Declared properties only (also where more are allowed: the output still validates).
    struct Prop {
      std::string pair;
      bool required;
    };
    std::vector<Prop> list;
    for (const auto& [name, v] : props.items()) {
      ASSIGN_OR_RETURN(std::string value, visit(v, path + "/properties/" + name, depth + 1));
      list.push_back({gbnf_literal(json(name).dump()) + " ws \":\" ws " + value + " ws",
                      required.count(name) > 0});
    }
    const bool all_required = required.size() == list.size();
    if (all_required) {  // the strict case: one sequence
      std::string seq = list[0].pair;
      for (size_t j = 1; j < list.size(); ++j) seq += " \",\" ws " + list[j].pair;
      return add_rule("object", "\"{\" ws " + seq + " \"}\"");
    }
    // With optional properties, as rules (linear in their number): after_j, the properties
    // from j on once one is written (each required one with its comma, each optional one
    // maybe); from_k, the properties when the first written is at k or later.
    const size_t n = list.size();
    std::vector<std::string> after(n + 1), from(n + 1);
    after[n] = add_rule("after", "\"\"");
    for (size_t j = n; j-- > 0;) {
      const std::string item = "\",\" ws " + list[j].pair;
      after[j] =
          add_rule("after", (list[j].required ? item : "(" + item + ")?") + " " + after[j + 1]);
    }
    from[n] = add_rule("from", "\"\"");  // reached only when every property is optional
    for (size_t k = n; k-- > 0;)
      from[k] = add_rule("from", list[k].pair + " " + after[k + 1] +
                                     (list[k].required ? "" : " | " + from[k + 1]));
    return add_rule("object", "\"{\" ws " + from[0] + " \"}\"");
  }

  const json& root_;
  const bool strict_;
  const std::string prefix_;  // of every generated rule's name
  std::vector<std::string> rules_;
  std::map<std::string, std::string> refs_;
  int properties_ = 0;
};

}  // namespace

Expected<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema, bool strict) {
  ASSIGN_OR_RETURN(std::string rules, SchemaCompiler(schema, strict, "").rules("root"));
  return rules + base_rules();
}

Expected<std::string> json_schema_rules(const nlohmann::ordered_json& schema, bool strict,
                                        const std::string& name) {
  return SchemaCompiler(schema, strict, name + "-").rules(name);
}

std::string json_base_rules() {
  return base_rules();
}

std::string json_object_gbnf() {
  return "root ::= object\n" + base_rules();
}

}  // namespace edge::grammar
