#include "server/openai_request.h"

#include <algorithm>
#include <random>

#include "runtime/grammar/grammar_guide.h"
#include "server/json_depth.h"
#include "server/request_fields.h"

namespace edge::server {
namespace {

using nlohmann::json;

// max_tokens or max_completion_tokens: an integer, within the runtime's rule.
void read_max_tokens(RequestFields& f, const char* field, const ServingLimits& limits,
                     std::optional<int64_t>& out) {
  f.integer(field, INT64_MIN, INT64_MAX, out);
  if (!out) return;
  if (Status st = check_max_tokens(*out, limits.max_model_len, field); !st.ok())
    f.fail(ApiError::bad_request(st.message(), field, "out_of_range"));
}

// model, n, max_tokens, stop, seed, stream, stream_options and the sampling knobs.
void read_common(RequestFields& f, const ServingLimits& limits, CommonRequest& out) {
  std::optional<std::string> model;
  f.string("model", model);
  if (model && !limits.serves(*model)) {
    ApiError e = ApiError::bad_request(
        "the model '" + *model + "' does not exist (this server serves '" + limits.reported_model_name() + "')",
        "model", "model_not_found");
    e.http_status = 404;
    f.fail(e);
  }
  f.boolean("stream", out.stream);
  const json& so = f.object("stream_options");
  if (so.is_object()) {
    RequestFields sf(so);
    sf.boolean("include_usage", out.include_usage);
    if (sf.error()) f.fail(*sf.error());
  }
  std::optional<int64_t> n, max_tokens, max_completion, seed, top_k;
  f.integer("n", 1, limits.max_n, n);
  if (n) out.n = static_cast<int32_t>(*n);
  read_max_tokens(f, "max_tokens", limits, max_tokens);
  read_max_tokens(f, "max_completion_tokens", limits, max_completion);
  out.max_tokens = max_completion ? max_completion : max_tokens;
  f.integer("seed", INT64_MIN, INT64_MAX, seed);
  if (seed) out.seed = static_cast<uint64_t>(*seed);
  f.string_or_list("stop", static_cast<size_t>(limits.max_stops), out.params.stop);
  f.boolean("ignore_eos", out.params.ignore_eos);

  // OpenAI defaults: temperature 1 and no truncation of the distribution.
  SamplingParams& s = out.params.sampling;
  s = SamplingParams{};
  s.temperature = 1.f;
  s.top_k = 0;
  s.top_p = 1.f;
  s.min_p = 0.f;
  std::optional<double> temperature, top_p, min_p, presence, frequency, repetition;
  f.number("temperature", 0, 2, temperature);
  f.number("top_p", 0, 1, top_p);
  f.integer("top_k", -1, INT32_MAX, top_k);
  f.number("min_p", 0, 1, min_p);
  f.number("presence_penalty", -2, 2, presence);
  f.number("frequency_penalty", -2, 2, frequency);
  f.number("repetition_penalty", 0, 10, repetition);
  if (temperature) s.temperature = static_cast<float>(*temperature);
  if (top_p) s.top_p = static_cast<float>(*top_p);
  if (top_k) s.top_k = static_cast<int32_t>(*top_k);
  if (min_p) s.min_p = static_cast<float>(*min_p);
  if (presence) s.presence_penalty = static_cast<float>(*presence);
  if (frequency) s.frequency_penalty = static_cast<float>(*frequency);
  if (repetition) s.repeat_penalty = static_cast<float>(*repetition);
  if (top_p && *top_p <= 0) f.fail(ApiError::bad_request("'top_p' must be greater than 0", "top_p", "out_of_range"));
  if (repetition && *repetition <= 0)
    f.fail(ApiError::bad_request("'repetition_penalty' must be greater than 0", "repetition_penalty",
                                 "out_of_range"));

  // Features we do not implement are refused rather than silently ignored.
  const json& bias = f.object("logit_bias");
  if (bias.is_object() && !bias.empty())
    f.fail(ApiError::bad_request("'logit_bias' is not supported", "logit_bias", "unsupported"));
  if (!f.error())
    if (auto e = parse_output_constraint(f.body(), out.constraint)) f.fail(*e);
  if (!f.error()) {
    Status st = s.validate();
    if (!st.ok()) f.fail(ApiError::bad_request(st.message(), "", "invalid_sampling"));
  }
}

// Content as the chat template expects it: a string (text parts joined) or null.
// Text parts are joined; image/audio parts leave a marker and go to `media`.
std::optional<ApiError> normalize_content(json& msg, size_t i, std::vector<MediaInput>& media) {
  const std::string param = "messages[" + std::to_string(i) + "].content";
  if (!msg.contains("content") || msg["content"].is_null() || msg["content"].is_string()) return std::nullopt;
  if (!msg["content"].is_array())
    return ApiError::bad_request("'" + param + "' must be a string or a list of content parts", param, "invalid_type");
  std::string text;
  for (size_t j = 0; j < msg["content"].size(); ++j) {
    const json& part = msg["content"][j];
    if (!part.is_object())
      return ApiError::bad_request("'" + param + "': each content part must be an object", param, "invalid_type");
    if (string_or(part, "type", "") != "text") {
      if (auto e = parse_media_part(part, param + "[" + std::to_string(j) + "]", text, media)) return e;
      continue;
    }
    if (!part.contains("text") || !part["text"].is_string())
      return ApiError::bad_request("'" + param + "': a text part needs a string 'text'", param, "invalid_type");
    text += part["text"].get<std::string>();
  }
  msg["content"] = text;
  return std::nullopt;
}

// Assistant tool calls: arguments arrive as JSON text; templates iterate them as objects.
std::optional<ApiError> normalize_tool_calls(json& msg, size_t i) {
  if (!msg.contains("tool_calls") || msg["tool_calls"].is_null()) return std::nullopt;
  const std::string param = "messages[" + std::to_string(i) + "].tool_calls";
  if (!msg["tool_calls"].is_array())
    return ApiError::bad_request("'" + param + "' must be an array", param, "invalid_type");
  for (auto& call : msg["tool_calls"]) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object() ||
        !call["function"].contains("name") || !call["function"]["name"].is_string())
      return ApiError::bad_request("'" + param + "': each call needs function.name", param, "invalid_type");
    json& fn = call["function"];
    if (fn.contains("arguments") && fn["arguments"].is_string() &&
        !json_nesting_exceeds(fn["arguments"].get_ref<const std::string&>())) {
      json parsed = json::parse(fn["arguments"].get<std::string>(), nullptr, false);
      if (parsed.is_object()) fn["arguments"] = std::move(parsed);
    }
  }
  return std::nullopt;
}

std::optional<ApiError> normalize_messages(const json& in, json& out, std::vector<MediaInput>& media) {
  if (!in.is_array() || in.empty())
    return ApiError::bad_request("'messages' must be a non-empty array", "messages",
                                 in.is_array() ? "empty_messages" : "invalid_type");
  out = in;
  for (size_t i = 0; i < out.size(); ++i) {
    json& m = out[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return ApiError::bad_request("'" + param + "' must be an object with a string 'role'", param, "invalid_type");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
      return ApiError::bad_request("'" + param + ".role' is not one of system, developer, user, assistant, tool",
                                   param + ".role", "invalid_value");
    if (auto e = normalize_content(m, i, media)) return e;
    if (auto e = normalize_tool_calls(m, i)) return e;
    // Templates test and split content as a string ('</think>' in message.content).
    if (!m.contains("content") || m["content"].is_null()) m["content"] = "";
  }
  return std::nullopt;
}

bool tool_named(const json& tools, const std::string& name) {
  for (const auto& t : tools)
    if (t["function"]["name"] == name) return true;
  return false;
}

// tools + tool_choice: which tools the template sees and whether output is parsed for
// calls; "required" and a named choice hold the output to a call (tool_grammar.h).
void read_tools(RequestFields& f, const json& body, ChatRequest& out) {
  f.boolean("parallel_tool_calls", out.parallel_tool_calls);
  const json& tools = f.array("tools");
  if (tools.is_array()) {
    for (const auto& t : tools)
      if (!t.is_object() || string_or(t, "type", "function") != "function" || !t.contains("function") ||
          !t["function"].is_object() || !t["function"].contains("name") || !t["function"]["name"].is_string())
        return f.fail(ApiError::bad_request("each of 'tools' must be {type: function, function: {name, ...}}",
                                            "tools", "invalid_type"));
  }
  const bool have_tools = tools.is_array() && !tools.empty();
  bool none = false;
  auto it = body.find("tool_choice");
  if (it != body.end() && !it->is_null()) {
    const json& tc = *it;
    if (tc.is_string()) {
      const std::string c = tc.get<std::string>();
      if (c != "none" && c != "auto" && c != "required")
        return f.fail(ApiError::bad_request("'tool_choice' must be none, auto, required or a function",
                                            "tool_choice", "invalid_value"));
      none = c == "none";
      out.tool_required = c == "required";
      if (c == "required" && !have_tools)
        return f.fail(ApiError::bad_request("'tool_choice' is required but no tools were given", "tool_choice",
                                            "invalid_value"));
    } else if (tc.is_object() && tc.contains("function") && tc["function"].is_object() &&
               tc["function"].contains("name") && tc["function"]["name"].is_string()) {
      if (!have_tools || !tool_named(tools, tc["function"]["name"].get<std::string>()))
        return f.fail(ApiError::bad_request("'tool_choice' names a function that is not in 'tools'",
                                            "tool_choice", "invalid_value"));
      out.tool_required = true;
      out.forced_tool = tc["function"]["name"].get<std::string>();
    } else {
      return f.fail(ApiError::bad_request("'tool_choice' must be none, auto, required or a function",
                                          "tool_choice", "invalid_type"));
    }
  }
  if (!have_tools || none) return;
  out.tools = tools;
  out.parse_tool_calls = true;
}

}  // namespace

bool ServingLimits::serves(const std::string& name) const {
  return model_names.empty() || std::find(model_names.begin(), model_names.end(), name) != model_names.end();
}

const std::string& ServingLimits::reported_model_name() const {
  static const std::string kNone;
  return model_names.empty() ? kNone : model_names.front();
}

std::optional<ApiError> parse_json_object(const std::string& body, json& out) {
  if (json_nesting_exceeds(body))
    return ApiError::bad_request(
        "the request body nests arrays/objects deeper than " + std::to_string(kMaxJsonDepth) + " levels", "",
        "json_too_deep");
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded())
    return ApiError::bad_request("the request body is not valid JSON", "", "invalid_json");
  if (!out.is_object()) return ApiError::bad_request("the request body must be a JSON object", "", "invalid_json");
  return std::nullopt;
}

}  // namespace edge::server

namespace edge::server {

std::optional<ApiError> parse_chat_request(const json& body, const ServingLimits& limits, ChatRequest& out) {
  RequestFields f(body);
  read_common(f, limits, out.common);
  if (f.error()) return f.error();
  if (auto e = normalize_messages(body.contains("messages") ? body["messages"] : json(nullptr), out.messages, out.media))
    return e;
  read_tools(f, body, out);
  f.boolean("return_tokens", out.return_tokens);
  const json& kwargs = f.object("chat_template_kwargs");
  if (kwargs.is_object()) out.template_kwargs = kwargs;
  // OpenAI's reasoning_effort reaches the template as a variable (harmony's system message
  // says "Reasoning: low|medium|high"); chat_template_kwargs may set it too and wins.
  std::optional<std::string> effort;
  f.string("reasoning_effort", effort);
  if (effort && *effort != "low" && *effort != "medium" && *effort != "high")
    return ApiError::bad_request("'reasoning_effort' must be low, medium or high",
                                 "reasoning_effort", "invalid_value");
  if (effort && !out.template_kwargs.contains("reasoning_effort"))
    out.template_kwargs["reasoning_effort"] = *effort;
  f.boolean("logprobs", out.logprobs);
  std::optional<int64_t> top;
  f.integer("top_logprobs", 0, limits.max_logprobs, top);
  if (f.error()) return f.error();
  if (top && !out.logprobs)
    return ApiError::bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs", "invalid_value");
  out.common.params.logprobs = out.logprobs ? static_cast<int32_t>(top.value_or(0)) : -1;
  return std::nullopt;
}

namespace {

// prompt: a string, a list of token ids, or a one-item list of either.
std::optional<ApiError> read_prompt(const json& body, CompletionRequest& out) {
  auto bad = [](std::string m, const char* code) { return ApiError::bad_request(std::move(m), "prompt", code); };
  if (!body.contains("prompt") || body["prompt"].is_null()) return bad("'prompt' is required", "missing");
  json p = body["prompt"];
  if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) p = p[0];
  if (p.is_string()) {
    out.prompt_text = p.get<std::string>();
    if (out.prompt_text.empty()) return bad("'prompt' is empty", "empty_prompt");
    return std::nullopt;
  }
  if (!p.is_array()) return bad("'prompt' must be a string or a list of token ids", "invalid_type");
  if (p.empty()) return bad("'prompt' is empty", "empty_prompt");
  for (const auto& id : p) {
    if (id.is_string()) return bad("only one prompt per request is supported", "unsupported");
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      return bad("'prompt' token ids must be non-negative integers", "invalid_type");
    out.prompt_ids.push_back(id.get<int32_t>());
  }
  out.prompt_is_ids = true;
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_completion_request(const json& body, const ServingLimits& limits,
                                                 CompletionRequest& out) {
  RequestFields f(body);
  read_common(f, limits, out.common);
  std::optional<int64_t> logprobs, best_of;
  f.integer("logprobs", 0, limits.max_logprobs, logprobs);
  f.integer("best_of", 1, 1, best_of);
  bool echo = false;
  f.boolean("echo", echo);
  f.boolean("return_tokens", out.return_tokens);
  std::optional<std::string> suffix;
  f.string("suffix", suffix);
  if (f.error()) return f.error();
  if (echo) return ApiError::bad_request("'echo' is not supported", "echo", "unsupported");
  if (suffix && !suffix->empty()) return ApiError::bad_request("'suffix' is not supported", "suffix", "unsupported");
  out.common.params.logprobs = logprobs ? static_cast<int32_t>(*logprobs) : -1;
  return read_prompt(body, out);
}

std::optional<ApiError> fit_to_context(size_t prompt_tokens, const ServingLimits& limits, const char* prompt_field,
                                       CommonRequest& req) {
  const auto n = static_cast<int64_t>(prompt_tokens);
  if (Status st = check_prompt_not_empty(n); !st.ok())
    return ApiError::bad_request(st.message(), prompt_field, "empty_prompt");
  if (Status st = check_prompt_fits(n, limits.max_model_len); !st.ok())
    return ApiError::bad_request(st.message(), prompt_field, "context_length_exceeded");
  if (req.max_tokens)
    if (Status st = check_completion_fits(n, *req.max_tokens, limits.max_model_len); !st.ok())
      return ApiError::bad_request(st.message(), "max_tokens", "context_length_exceeded");
  req.params.max_tokens = static_cast<int32_t>(req.max_tokens.value_or(limits.max_model_len - n));
  return std::nullopt;
}

RequestParams params_for_choice(const CommonRequest& req, int32_t index) {
  RequestParams p = req.params;
  if (req.grammar && req.trie)  // a guide keeps state: one per choice
    p.guide = std::make_shared<grammar::GrammarGuide>(req.grammar, req.trie, p.max_tokens, req.masks);
  if (req.seed) {
    p.sampling.seed = *req.seed + static_cast<uint64_t>(index);
  } else {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    p.sampling.seed = rng();
  }
  return p;
}

}  // namespace edge::server
