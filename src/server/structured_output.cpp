#include "server/structured_output.h"

#include <fmt/format.h>

#include "runtime/grammar/json_schema.h"

namespace edge::server {

using nlohmann::json;

namespace {

template <typename Json>
std::optional<ApiError> response_format(const Json& rf, OutputConstraint& out) {
  using json = Json;
  if (!rf.is_object())
    return ApiError::bad_request("'response_format' must be an object", "response_format",
                                 "invalid_type");
  const json type = rf.value("type", json("text"));
  if (!type.is_string())
    return ApiError::bad_request("'response_format.type' must be a string", "response_format.type",
                                 "invalid_type");
  const std::string t = type.template get<std::string>();
  if (t == "text") return std::nullopt;
  out.param = "response_format";
  if (t == "json_object") {
    out.gbnf = grammar::json_object_gbnf();
    return std::nullopt;
  }
  if (t != "json_schema")
    return ApiError::bad_request(
        fmt::format("'response_format.type' is '{}': text, json_object or json_schema", t),
        "response_format.type", "invalid_value");
  const json js = rf.value("json_schema", json());
  if (!js.is_object() || !js.contains("schema"))
    return ApiError::bad_request("'response_format.json_schema' must be an object with a 'schema'",
                                 "response_format.json_schema", "invalid_value");
  const json strict = js.value("strict", json(false));
  if (!strict.is_boolean() && !strict.is_null())
    return ApiError::bad_request("'response_format.json_schema.strict' must be a boolean",
                                 "response_format.json_schema.strict", "invalid_type");
  out.schema = true;
  auto gbnf = grammar::json_schema_to_gbnf(nlohmann::ordered_json(js["schema"]),
                                           strict.is_boolean() && strict.template get<bool>());
  if (!gbnf)
    return ApiError::bad_request(gbnf.status().message(), "response_format.json_schema.schema",
                                 "unsupported_schema");
  out.gbnf = std::move(*gbnf);
  return std::nullopt;
}

template <typename Json>
std::optional<ApiError> output_constraint(const Json& body, OutputConstraint& out) {
  out = {};
  if (auto rf = body.find("response_format"); rf != body.end() && !rf->is_null())
    if (auto e = response_format(*rf, out)) return e;
  auto g = body.find("grammar");
  if (g == body.end() || g->is_null()) return std::nullopt;
  if (!g->is_string())
    return ApiError::bad_request("'grammar' must be a string (GBNF)", "grammar", "invalid_type");
  if (!out.gbnf.empty())
    return ApiError::bad_request(
        "'grammar' and a response_format other than text both constrain the output: use one",
        "grammar", "invalid_value");
  if (!g->template get_ref<const std::string&>().empty())
    out = {g->template get<std::string>(), "grammar", false};
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_output_constraint(const json& body, OutputConstraint& out) {
  return output_constraint(body, out);
}

std::optional<ApiError> schema_in_written_order(const std::string& raw_body,
                                                OutputConstraint& out) {
  if (!out.schema) return std::nullopt;
  const auto body = nlohmann::ordered_json::parse(raw_body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return std::nullopt;  // parsed once already: cannot happen
  return output_constraint(body, out);
}

Expected<GrammarCache::Entry> GrammarCache::get(const std::string& gbnf, bool harmony_tokens) {
  // Masks belong to one trie: the same text over the harmony trie is another entry.
  const std::string key = (harmony_tokens ? "harmony\n" : "\n") + gbnf;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = recent_.begin(); it != recent_.end(); ++it)
      if (it->first == key) {
        recent_.splice(recent_.begin(), recent_, it);
        return it->second;
      }
  }
  // Compiled outside the lock: a large schema does not hold up other requests.
  auto g = grammar::compile_gbnf(gbnf);
  if (!g) return g.status();
  Entry e{std::make_shared<const grammar::Grammar>(std::move(*g)),
          std::make_shared<grammar::MaskCache>()};
  std::lock_guard<std::mutex> l(mu_);
  ++compiled_;
  recent_.emplace_front(key, e);
  if (recent_.size() > kCapacity) recent_.pop_back();
  return e;
}

std::shared_ptr<const grammar::TokenTrie> GrammarCache::trie(const Tokenizer& tok,
                                                              bool harmony_tokens) {
  std::lock_guard<std::mutex> l(mu_);
  if (!harmony_tokens) {
    if (!trie_) trie_ = std::make_shared<const grammar::TokenTrie>(tok);
    return trie_;
  }
  if (!harmony_trie_) {
    std::vector<int32_t> header;  // a forced call's header tokens (tool_grammar.h)
    for (const char* t : {"<|constrain|>", "<|message|>"})
      if (const int32_t id = tok.vocab().find(t); id >= 0) header.push_back(id);
    harmony_trie_ = std::make_shared<const grammar::TokenTrie>(tok, header);
  }
  return harmony_trie_;
}

uint64_t GrammarCache::compiled() const {
  std::lock_guard<std::mutex> l(mu_);
  return compiled_;
}

}  // namespace edge::server
