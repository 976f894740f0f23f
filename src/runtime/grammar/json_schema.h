// JSON Schema to GBNF (grammar.h), for structured outputs: the subset OpenAI's strict mode
// accepts. Objects (properties, required, additionalProperties), strings (minLength,
// maxLength), numbers, integers, booleans, null, enum, const, arrays (items, minItems,
// maxItems), anyOf, type lists, $defs/definitions and $ref (recursion included); the
// annotation keywords (title, description, default, examples, $schema, $id, $comment) are
// ignored. Any other keyword is refused, naming it and where it is: a schema the grammar
// cannot honour must not be silently loosened.
//
// Properties come out in the schema's order. Whitespace between tokens is bounded (at most
// kMaxWhitespace characters in a row), as are a number's digits: a model cannot stall
// forever inside one value.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace edge::grammar {

inline constexpr int kMaxSchemaDepth = 10;         // nested schemas (OpenAI's limit)
inline constexpr int kMaxSchemaProperties = 5000;  // across the whole schema
inline constexpr int kMaxEnumValues = 1000;
inline constexpr int kMaxWhitespace = 20;

// `strict`: OpenAI's rules on top: every object sets additionalProperties: false and lists
// every property in `required`. An ordered_json keeps the properties in the order written
// (nlohmann::json sorts them).
Expected<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema, bool strict);

// Any JSON object (response_format json_object).
std::string json_object_gbnf();

// For grammars that embed schemas (tool calls): the rule `name` matching the schema and
// the rules it needs, every generated name prefixed with `name-`; and the shared JSON rules
// (ws, string, number, integer, boolean, null, value, object, array) they refer to, to add
// once.
Expected<std::string> json_schema_rules(const nlohmann::ordered_json& schema, bool strict,
                                        const std::string& name);
std::string json_base_rules();

}  // namespace edge::grammar
