#include "server/openai_response.h"

#include <chrono>

namespace edge::server {

using nlohmann::json;

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"completion_tokens_details",
           {{"accepted_prediction_tokens", u.accepted_prediction_tokens},
            {"rejected_prediction_tokens", u.rejected_prediction_tokens}}}};
}

namespace {

std::string token_string(const Tokenizer* tok, int32_t id) {
  return tok ? tok->decode({id}, /*special=*/true) : std::to_string(id);
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

json null_if_empty(const std::string& s) {
  return s.empty() ? json(nullptr) : json(s);
}

}  // namespace

json chat_logprobs_json(const std::vector<TokenLogprob>& lps, const Tokenizer* tok) {
  json content = json::array();
  for (const auto& lp : lps) {
    const std::string t = token_string(tok, lp.id);
    json top = json::array();
    for (const auto& [id, v] : lp.top) {
      const std::string a = token_string(tok, id);
      top.push_back({{"token", a}, {"logprob", v}, {"bytes", bytes_of(a)}});
    }
    content.push_back(
        {{"token", t}, {"logprob", lp.logprob}, {"bytes", bytes_of(t)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs_json(const std::vector<TokenLogprob>& lps, const Tokenizer* tok,
                              int64_t text_offset) {
  json tokens = json::array(), values = json::array(), tops = json::array(),
       offsets = json::array();
  for (const auto& lp : lps) {
    const std::string t = token_string(tok, lp.id);
    tokens.push_back(t);
    values.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [id, v] : lp.top) top[token_string(tok, id)] = v;
    tops.push_back(top);
    offsets.push_back(text_offset);
    text_offset += static_cast<int64_t>(t.size());
  }
  return {{"tokens", tokens},
          {"token_logprobs", values},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

json tool_calls_json(const std::vector<ToolCallOut>& calls, size_t first_index, bool streaming) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", calls[i].id},
              {"type", "function"},
              {"function", {{"name", calls[i].call.name}, {"arguments", calls[i].call.arguments}}}};
    if (streaming) c["index"] = first_index + i;
    out.push_back(std::move(c));
  }
  return out;
}

json chat_completion_json(const ResponseMeta& m, const std::vector<ChoiceResult>& choices,
                          const Usage& u, bool with_logprobs, const Tokenizer* tok) {
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    json msg = {{"role", "assistant"}, {"content", null_if_empty(c.content)}};
    if (!c.reasoning.empty()) msg["reasoning_content"] = c.reasoning;
    if (!c.calls.empty()) msg["tool_calls"] = tool_calls_json(c.calls, 0, false);
    cs.push_back({{"index", i},
                  {"message", msg},
                  {"logprobs", with_logprobs ? chat_logprobs_json(c.logprobs, tok) : json(nullptr)},
                  {"finish_reason", c.finish_reason}});
  }
  return {{"id", m.id},
          {"object", "chat.completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", cs},
          {"usage", usage_json(u)},
          {"system_fingerprint", nullptr}};
}

json text_completion_json(const ResponseMeta& m, const std::vector<ChoiceResult>& choices,
                          const Usage& u, bool with_logprobs, const Tokenizer* tok) {
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    cs.push_back(
        {{"index", i},
         {"text", c.content},
         {"logprobs", with_logprobs ? completion_logprobs_json(c.logprobs, tok, 0) : json(nullptr)},
         {"finish_reason", c.finish_reason}});
  }
  return {{"id", m.id},           {"object", "text_completion"},
          {"created", m.created}, {"model", m.model},
          {"choices", cs},        {"usage", usage_json(u)}};
}

json chat_chunk_json(const ResponseMeta& m, int index, json delta, const json& logprobs,
                     const std::string& finish_reason) {
  json choice = {{"index", index},
                 {"delta", std::move(delta)},
                 {"logprobs", logprobs},
                 {"finish_reason", null_if_empty(finish_reason)}};
  return {{"id", m.id},
          {"object", "chat.completion.chunk"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array({choice})}};
}

json text_chunk_json(const ResponseMeta& m, int index, const std::string& text,
                     const json& logprobs, const std::string& finish_reason) {
  json choice = {{"index", index},
                 {"text", text},
                 {"logprobs", logprobs},
                 {"finish_reason", null_if_empty(finish_reason)}};
  return {{"id", m.id},
          {"object", "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array({choice})}};
}

json usage_chunk_json(const ResponseMeta& m, const char* object, const Usage& u) {
  return {{"id", m.id},       {"object", object},         {"created", m.created},
          {"model", m.model}, {"choices", json::array()}, {"usage", usage_json(u)}};
}

}  // namespace edge::server
