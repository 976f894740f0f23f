#include "server/tool_calls.h"

#include "server/json_depth.h"
#include "server/request_fields.h"
#include "server/tag_scan.h"

namespace edge::server {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kKeyOpen = "<arg_key>", kKeyClose = "</arg_key>";
constexpr std::string_view kValOpen = "<arg_value>", kValClose = "</arg_value>";

bool parse_hermes(std::string_view body, ParsedToolCall& out) {
  if (json_nesting_exceeds(body)) return false;  // model output is untrusted too
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  out.name = j["name"].get<std::string>();
  const char* key = j.contains("arguments") ? "arguments" : j.contains("parameters") ? "parameters" : nullptr;
  if (!key || j[key].is_null()) {
    out.arguments = "{}";
  } else if (j[key].is_string()) {
    out.arguments = j[key].get<std::string>();  // already JSON text
  } else if (j[key].is_object()) {
    out.arguments = j[key].dump();
  } else {
    return false;
  }
  return !out.name.empty();
}

// The declared JSON-schema type of `param` of tool `name` ("" when unknown).
std::string param_type(const nlohmann::json& tools, const std::string& name, const std::string& param) {
  if (!tools.is_array()) return "";
  for (const auto& t : tools) {
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
    const auto& f = t["function"];
    if (string_or(f, "name", "") != name) continue;
    const auto props = f.contains("parameters") && f["parameters"].is_object()
                           ? f["parameters"].value("properties", nlohmann::json::object())
                           : nlohmann::json::object();
    if (props.is_object() && props.contains(param) && props[param].is_object() &&
        props[param].contains("type") && props[param]["type"].is_string())
      return props[param]["type"].get<std::string>();
  }
  return "";
}

bool parse_glm(std::string_view body, const nlohmann::json& tools, ParsedToolCall& out) {
  size_t p = body.find(kKeyOpen);
  const std::string_view name = trim(body.substr(0, p));
  if (name.empty() || name.find_first_of("<>{}\"\n\t ") != std::string_view::npos) return false;
  out.name = std::string(name);
  nlohmann::json args = nlohmann::json::object();
  while (p != std::string_view::npos) {
    const size_t k_end = body.find(kKeyClose, p);
    if (k_end == std::string_view::npos) return false;
    const std::string key(trim(body.substr(p + kKeyOpen.size(), k_end - p - kKeyOpen.size())));
    size_t v = k_end + kKeyClose.size();
    while (v < body.size() && is_space(body[v])) ++v;
    if (body.substr(v, kValOpen.size()) != kValOpen) return false;
    v += kValOpen.size();
    const size_t v_end = body.find(kValClose, v);
    if (v_end == std::string_view::npos || key.empty()) return false;
    const std::string value(body.substr(v, v_end - v));
    nlohmann::json typed =
        json_nesting_exceeds(value) ? nlohmann::json(value) : nlohmann::json::parse(value, nullptr, false);
    if (typed.is_discarded() || param_type(tools, out.name, key) == "string") typed = value;
    args[key] = std::move(typed);
    p = v_end + kValClose.size();
    const size_t next = body.find(kKeyOpen, p);
    if (next == std::string_view::npos && !trim(body.substr(p)).empty()) return false;
    p = next;
  }
  out.arguments = args.dump();
  return true;
}

}  // namespace

bool parse_tool_call_body(std::string_view body, const nlohmann::json& tools, ParsedToolCall& out) {
  body = trim(body);
  if (body.empty()) return false;
  return body.front() == '{' ? parse_hermes(body, out) : parse_glm(body, tools, out);
}

ToolCallParser::ToolCallParser(nlohmann::json tools) : tools_(std::move(tools)) {}

void ToolCallParser::emit_text(std::string_view text, ToolDelta& out) {
  held_space_.append(text);
  const size_t keep = trailing_space(held_space_);
  out.content.append(held_space_, 0, held_space_.size() - keep);
  held_space_.erase(0, held_space_.size() - keep);
}

void ToolCallParser::end_call(std::string_view body, bool closed, ToolDelta& out) {
  ParsedToolCall call;
  if (parse_tool_call_body(body, tools_, call)) {
    out.calls.push_back(std::move(call));
    ++calls_seen_;
  } else {
    // Not a call after all: give the text back verbatim.
    emit_text(std::string(kOpen) + std::string(body) + (closed ? std::string(kClose) : ""), out);
  }
  in_call_ = false;
}

ToolDelta ToolCallParser::push(std::string_view text) {
  pending_.append(text);
  ToolDelta out;
  while (true) {
    if (in_call_) {
      const size_t p = pending_.find(kClose);
      if (p == std::string::npos) break;  // the whole body is needed to parse it
      const std::string body = pending_.substr(0, p);
      pending_.erase(0, p + kClose.size());
      end_call(body, /*closed=*/true, out);
      continue;
    }
    const size_t p = pending_.find(kOpen);
    if (p == std::string::npos) {
      const size_t hold = partial_tag_suffix(pending_, kOpen);
      emit_text(std::string_view(pending_).substr(0, pending_.size() - hold), out);
      pending_.erase(0, pending_.size() - hold);
      break;
    }
    emit_text(std::string_view(pending_).substr(0, p), out);
    held_space_.clear();  // whitespace before a call only separates it
    pending_.erase(0, p + kOpen.size());
    in_call_ = true;
  }
  return out;
}

ToolDelta ToolCallParser::finish() {
  ToolDelta out;
  if (in_call_) {
    const std::string body = std::move(pending_);
    end_call(body, /*closed=*/false, out);
  } else {
    emit_text(pending_, out);
  }
  pending_.clear();
  if (calls_seen_ == 0) out.content.append(held_space_);
  held_space_.clear();
  return out;
}

}  // namespace edge::server
