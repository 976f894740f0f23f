#include "agent/tool_reply.h"

#include <regex>

#include "server/tool_calls.h"

namespace edge::agent {

using nlohmann::json;

const json& phone_tools() {
  static const json tools = [] {
    auto fn = [](const char* name, const char* what, json props, json required) {
      return json{
          {"type", "function"},
          {"function",
           {{"name", name},
            {"description", what},
            {"parameters", {{"type", "object"}, {"properties", props}, {"required", required}}}}}};
    };
    const json id = {{"type", "string"}, {"description", "element id, e.g. e3"}};
    return json::array({fn("tap", "Tap an element of the screen", {{"id", id}}, {"id"}),
                        fn("type", "Replace the text of a field",
                           {{"id", id}, {"text", {{"type", "string"}}}}, {"id", "text"}),
                        fn("back", "Go back one screen", json::object(), json::array()),
                        fn("done", "The goal is reached", json::object(), json::array())});
  }();
  return tools;
}

namespace {

// An action from a tool name and its arguments; false when they do not make one.
bool to_action(const std::string& name, const json& args, Action& out) {
  auto str = [&](const char* key) {
    if (!args.is_object() || !args.contains(key)) return std::string();
    const json& v = args[key];
    return v.is_string() ? v.get<std::string>() : v.is_number() ? v.dump() : std::string();
  };
  if (name == "back" || name == "done") {
    out = Action{name, "", ""};
    return true;
  }
  if (name != "tap" && name != "type") return false;
  out = Action{name, str("id"), str("text")};
  if (!out.id.empty() && out.id[0] != 'e' && std::isdigit(static_cast<unsigned char>(out.id[0])))
    out.id = "e" + out.id;  // "3" for "e3": the intent is plain
  return !out.id.empty();
}

// The first balanced {...} in the text that parses as JSON.
json first_json_object(const std::string& s) {
  for (size_t start = s.find('{'); start != std::string::npos; start = s.find('{', start + 1)) {
    int depth = 0;
    bool in_str = false;
    for (size_t i = start; i < s.size(); ++i) {
      const char c = s[i];
      if (in_str) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_str = false;
      } else if (c == '"') {
        in_str = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        json j = json::parse(s.substr(start, i - start + 1), nullptr, false);
        if (j.is_object()) return j;
        break;
      }
    }
  }
  return nullptr;
}

// {"name": "tap", "arguments": {"id": "e3"}}, {"tool": "tap", "id": "e3"}, {"action": ...}.
bool action_from_object(const json& j, Action& out) {
  for (const char* key : {"name", "tool", "action", "function"}) {
    if (!j.contains(key)) continue;
    const json& n = j[key];
    if (n.is_object() && n.contains("name")) return action_from_object(n, out);
    if (!n.is_string()) continue;
    json args = j.value("arguments", j.value("parameters", j));
    if (args.is_string()) args = json::parse(args.get<std::string>(), nullptr, false);
    return to_action(n.get<std::string>(), args, out);
  }
  return false;
}

bool from_content(const std::string& content, Decision& d) {
  server::ToolCallParser tags(phone_tools());
  server::ToolDelta got = tags.push(content);
  server::ToolDelta tail = tags.finish();
  got.calls.insert(got.calls.end(), tail.calls.begin(), tail.calls.end());
  if (!got.calls.empty() &&
      to_action(got.calls[0].name, json::parse(got.calls[0].arguments, nullptr, false), d.action)) {
    d.recoveries.push_back("tool_call_tag_in_content");
    return true;
  }
  const json obj = first_json_object(content);
  if (obj.is_object() && action_from_object(obj, d.action)) {
    d.recoveries.push_back("json_in_content");
    return true;
  }
  static const std::regex call(
      R"re((tap|type|back|done)\s*\(\s*"?(\w*)"?\s*(?:,\s*"([^"]*)")?\s*\))re");
  std::smatch m;
  if (std::regex_search(content, m, call) &&
      to_action(m[1], json{{"id", m[2].str()}, {"text", m[3].str()}}, d.action)) {
    d.recoveries.push_back("call_syntax_in_content");
    return true;
  }
  return false;
}

}  // namespace

Decision parse_reply(const json& completion) {
  Decision d;
  d.action.kind = "none";
  const json* msg = nullptr;
  if (completion.contains("choices") && completion["choices"].is_array() &&
      !completion["choices"].empty() && completion["choices"][0].contains("message"))
    msg = &completion["choices"][0]["message"];
  if (!msg || !msg->is_object()) {
    d.recoveries.push_back("no_message");
    return d;
  }
  const json calls = msg->value("tool_calls", json::array());
  if (calls.is_array() && !calls.empty()) {
    if (calls.size() > 1) d.recoveries.push_back("extra_tool_calls_ignored");
    const json fn = calls[0].value("function", json::object());
    const std::string name = fn.value("name", "");
    json args = fn.value("arguments", json::object());
    if (args.is_string()) {
      json parsed = json::parse(args.get<std::string>(), nullptr, false);
      if (parsed.is_discarded()) {
        d.recoveries.push_back("arguments_not_json");
        parsed = first_json_object(args.get<std::string>());
      }
      args = parsed;
    }
    if (to_action(name, args, d.action)) return d;
    d.recoveries.push_back("unusable_tool_call:" + name);
  }
  const json content = msg->value("content", json());
  if (content.is_string() && from_content(content.get<std::string>(), d)) return d;
  d.action = Action{"none", "", ""};
  d.recoveries.push_back("unparseable");
  d.unusable_reply = msg->dump(-1, ' ', false, json::error_handler_t::replace);
  if (d.unusable_reply.size() > 200) {  // cut at a character boundary, not inside UTF-8
    size_t cut = 200;
    while (cut > 0 && (static_cast<unsigned char>(d.unusable_reply[cut]) & 0xC0) == 0x80) --cut;
    d.unusable_reply.resize(cut);
  }
  return d;
}

}  // namespace edge::agent
