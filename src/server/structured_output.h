// Structured outputs: response_format json_object / json_schema and llama.cpp's `grammar`
// (GBNF) extension, one machinery: each becomes GBNF text (runtime/grammar/json_schema.h),
// compiled once per distinct text (cached), and every choice of the request samples under
// its own grammar guide (runtime/grammar/grammar_guide.h) over the tokenizer's trie.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_guide.h"
#include "server/api_error.h"
#include "tokenizer/tokenizer.h"

namespace edge::server {

// What a request asks its output to be, as GBNF: empty when unconstrained.
struct OutputConstraint {
  std::string gbnf;
  std::string param;    // the field it came from, for errors ("response_format", "grammar")
  bool schema = false;  // from a json_schema
  // A harmony forced call (tool_grammar.h): its grammar runs over the harmony trie, where the
  // header's special tokens have their text as pieces.
  bool harmony_tokens = false;
};

// Reads response_format ({"type": "text" | "json_object" | "json_schema"}, the latter with
// json_schema.schema and json_schema.strict) and `grammar`. 400s name the field and, for a
// schema outside the supported subset, the keyword and where it is.
std::optional<ApiError> parse_output_constraint(const nlohmann::json& body, OutputConstraint& out);
// nlohmann::json sorts an object's keys; a schema's properties must come out in the order
// the client wrote them. For a json_schema constraint this reads the schema again from the
// raw body, keeping that order.
std::optional<ApiError> schema_in_written_order(const std::string& raw_body, OutputConstraint& out);

// Compiled grammars by their text (the most recent kCapacity kept) and the tokenizer's trie
// (built on first use). Thread-safe.
class GrammarCache {
 public:
  static constexpr size_t kCapacity = 64;
  struct Entry {
    std::shared_ptr<const grammar::Grammar> grammar;
    std::shared_ptr<grammar::MaskCache> masks;  // its token masks, shared by its requests
  };
  // harmony_tokens: the grammar runs over the harmony trie (its token masks are its own).
  Expected<Entry> get(const std::string& gbnf, bool harmony_tokens = false);
  std::shared_ptr<const grammar::TokenTrie> trie(const Tokenizer& tok, bool harmony_tokens = false);
  uint64_t compiled() const;  // grammars compiled so far (cache misses)

 private:
  mutable std::mutex mu_;
  std::list<std::pair<std::string, Entry>> recent_;  // newest first
  std::shared_ptr<const grammar::TokenTrie> trie_, harmony_trie_;
  uint64_t compiled_ = 0;
};

}  // namespace edge::server
