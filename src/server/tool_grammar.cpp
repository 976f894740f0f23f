#include "server/tool_grammar.h"

#include <fmt/format.h>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/json_schema.h"

namespace edge::server {

using json = nlohmann::ordered_json;
using grammar::gbnf_literal;

namespace {

// A tool's parameters; a missing schema takes any object (arguments are always one).
json parameters_of(const json& tool) {
  const json& fn = tool["function"];
  auto p = fn.find("parameters");
  if (p == fn.end() || !p->is_object() || p->empty()) return json{{"type", "object"}};
  return *p;
}

Expected<std::string> hermes_call(const json& tool, const std::string& rule, std::string& rules) {
  const std::string name = tool["function"]["name"].get<std::string>();
  ASSIGN_OR_RETURN(std::string args,
                   grammar::json_schema_rules(parameters_of(tool), false, rule + "-args"));
  rules += args;
  return gbnf_literal("<tool_call>\n{\"name\": " + json(name).dump() + ", \"arguments\": ") + " " +
         rule + "-args " + gbnf_literal("}\n</tool_call>");
}

// A string parameter's value is the raw text (up to the next tag); any other is JSON.
bool raw_string(const json& schema) {
  return schema.is_object() && schema.value("type", json()) == "string" &&
         !schema.contains("enum") && !schema.contains("const");
}

Expected<std::string> glm_call(const json& tool, const std::string& rule, std::string& rules) {
  const std::string name = tool["function"]["name"].get<std::string>();
  const json params = parameters_of(tool);
  const json props = params.value("properties", json::object());
  std::vector<std::string> required;
  for (const json& r : params.value("required", json::array()))
    if (r.is_string()) required.push_back(r.get<std::string>());
  std::string seq = gbnf_literal("<tool_call>" + name + "\n");
  int k = 0;
  for (const auto& [key, schema] : props.items()) {
    std::string value = "[^<]*";
    if (raw_string(schema) && (schema.contains("minLength") || schema.contains("maxLength"))) {
      const int64_t lo = schema.value("minLength", int64_t{0}),
                    hi = schema.value("maxLength", int64_t{-1});
      if (lo < 0 || lo > 10000 || hi > 10000 || (hi >= 0 && hi < lo))
        return Status::invalid_argument(fmt::format("'{}': minLength/maxLength out of range", key));
      value = hi < 0 ? fmt::format("[^<]{{{},}}", lo) : fmt::format("[^<]{{{},{}}}", lo, hi);
    } else if (!raw_string(schema)) {
      const std::string vrule = fmt::format("{}-v{}", rule, k);
      ASSIGN_OR_RETURN(std::string r, grammar::json_schema_rules(schema, false, vrule));
      rules += r;
      value = vrule;
    }
    const std::string arg = "(" + gbnf_literal("<arg_key>" + key + "</arg_key>\n<arg_value>") +
                            " " + value + " " + gbnf_literal("</arg_value>\n") + ")";
    const bool req = std::find(required.begin(), required.end(), key) != required.end();
    seq += " " + arg + (req ? "" : "?");
    ++k;
  }
  return seq + " " + gbnf_literal("</tool_call>");
}

}  // namespace

ToolFormat tool_format_of(const std::string& chat_template) {
  return chat_template.find("<arg_key>") != std::string::npos ? ToolFormat::kGlm
                                                              : ToolFormat::kHermes;
}

Expected<std::string> tool_call_gbnf(const json& tools, const std::string& only, bool parallel,
                                     ToolFormat format) {
  std::string rules, calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    if (!t.contains("function") || !t["function"].is_object() ||
        !t["function"].value("name", json()).is_string())
      continue;
    const std::string name = t["function"]["name"].get<std::string>();
    if (!only.empty() && name != only) continue;
    const std::string rule = fmt::format("tool{}", i);
    auto call = format == ToolFormat::kGlm ? glm_call(t, rule, rules) : hermes_call(t, rule, rules);
    if (!call)
      return call.status().with_context(fmt::format("tools[{}] ('{}') parameters", i, name));
    rules += rule + " ::= " + *call + "\n";
    calls += (calls.empty() ? "" : " | ") + rule;
  }
  if (calls.empty()) return Status::invalid_argument("no tool to call");
  std::string root = "root ::= call";
  if (parallel) root += " (\"\\n\" call)*";
  return root + "\ncall ::= " + calls + "\n" + rules + grammar::json_base_rules();
}

Expected<HarmonyForcedCall> harmony_call_gbnf(const json& tools, const std::string& only) {
  constexpr const char* kOpen = "<|channel|>commentary to=functions.";
  constexpr const char* kBody = " <|constrain|>json<|message|>";
  std::vector<size_t> callable;
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    if (!t.contains("function") || !t["function"].is_object() ||
        !t["function"].value("name", json()).is_string())
      continue;
    if (only.empty() || t["function"]["name"].get<std::string>() == only) callable.push_back(i);
  }
  if (callable.empty()) return Status::invalid_argument("no tool to call");
  HarmonyForcedCall out;
  std::string rules, calls;
  for (size_t i : callable) {
    const std::string name = tools[i]["function"]["name"].get<std::string>();
    const std::string rule = fmt::format("tool{}", i);
    auto args = grammar::json_schema_rules(parameters_of(tools[i]), false, rule + "-args");
    if (!args)
      return args.status().with_context(fmt::format("tools[{}] ('{}') parameters", i, name));
    rules += *args;
    if (callable.size() == 1) {  // the whole header goes in the prompt
      out.prefix = kOpen + name + kBody;
      calls = rule + "-args";
    } else {
      rules += rule + " ::= " + gbnf_literal(name + kBody) + " " + rule + "-args\n";
      calls += (calls.empty() ? "" : " | ") + rule;
    }
  }
  if (out.prefix.empty()) out.prefix = kOpen;
  // A raw '<' in a string could begin "<|message|>", which the trie lets a special token spell:
  // strings write it as \u003c instead (the same value), so no tag appears inside the body.
  std::string base = grammar::json_base_rules();
  const size_t at = base.find("char ::= [^");
  if (at != std::string::npos) base.insert(at + 11, "<");
  out.gbnf = "root ::= " + calls + "\n" + rules + base;
  return out;
}

}  // namespace edge::server
