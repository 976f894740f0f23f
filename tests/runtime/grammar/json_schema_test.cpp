// JSON Schema to grammar: the texts a schema's grammar matches (and refuses) for each
// supported keyword; strict mode's rules; keywords outside the subset refused by name and
// place. Then the guide: random walks over a made-up vocabulary, each step drawing any
// allowed token, always end in JSON that parses and that the grammar accepts, within the
// token budget.
#include "runtime/grammar/json_schema.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "convert/synthetic_vocab.h"
#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_guide.h"
#include "runtime/grammar/grammar_matcher.h"
#include "runtime/grammar/match.h"

namespace edge::grammar {
namespace {

using json = nlohmann::ordered_json;

Grammar schema_grammar(const json& schema, bool strict = false) {
  auto text = json_schema_to_gbnf(schema, strict);
  EXPECT_TRUE(text.ok()) << text.status().to_string();
  auto g = compile_gbnf(text.ok() ? *text : "root ::= \"\"");
  EXPECT_TRUE(g.ok()) << g.status().to_string() << "\n" << (text.ok() ? *text : "");
  return g.ok() ? std::move(*g) : Grammar{};
}

const json kPerson = json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 8},
    "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}, "maxItems": 2},
    "mood": {"anyOf": [{"type": "null"}, {"const": "happy"}]},
    "score": {"type": ["number", "boolean"]}
  },
  "required": ["name", "age", "tags", "mood", "score"],
  "additionalProperties": false
})");

TEST(JsonSchema, ObjectsWithEveryKindOfProperty) {
  const Grammar g = schema_grammar(kPerson, /*strict=*/true);
  EXPECT_EQ(run(g, R"({"name":"Ann","age":41,"tags":["a",3],"mood":null,"score":-1.5e3})"), 1);
  EXPECT_EQ(run(g,
                "{ \"name\" : \"Bo\",\n  \"age\": 0, \"tags\": [], \"mood\": \"happy\", \"score\": "
                "true }"),
            1);
  EXPECT_EQ(run(g, R"({"name":"","age":1,"tags":[],"mood":null,"score":1})"), -1);  // minLength
  EXPECT_EQ(run(g, R"({"name":"Ann","age":1.5)"), -1);                              // integer
  EXPECT_EQ(run(g, R"({"name":"Ann","age":1,"tags":["c"])"), -1);                   // enum
  EXPECT_EQ(run(g, R"({"name":"Ann","age":1,"tags":["a","b","a"])"), -1);           // maxItems
  EXPECT_EQ(run(g, R"({"age":1)"), -1);                                      // order, required
  EXPECT_EQ(run(g, R"({"name":"Ann","age":1,"tags":[],"mood":"sad")"), -1);  // const
  EXPECT_EQ(run(g, R"({"name":"Ann","age":01)"), -1);                        // JSON numbers
  EXPECT_EQ(run(g, R"({"name":"Ann","age":1,"tags":[],"mood":null,"score":1,"x":1})"), -1);
}

TEST(JsonSchema, OptionalPropertiesKeepTheirCommasRight) {
  const Grammar g = schema_grammar(json::parse(R"({"type":"object","properties":{
      "a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}},"required":["b"]})"));
  EXPECT_EQ(run(g, R"({"b":1})"), 1);
  EXPECT_EQ(run(g, R"({"a":1,"b":2,"c":3})"), 1);
  EXPECT_EQ(run(g, R"({"b":2,"c":3})"), 1);
  EXPECT_EQ(run(g, R"({"a":1,"c":3})"), -1);  // b is required
  EXPECT_EQ(run(g, R"({,"b":2})"), -1);
  const Grammar none =
      schema_grammar(json::parse(R"({"type":"object","properties":{"a":{"type":"null"}}})"));
  EXPECT_EQ(run(none, "{}"), 1);
  EXPECT_EQ(run(none, R"({"a":null})"), 1);
}

// Many optional properties: the grammar grows with their number, not its square.
TEST(JsonSchema, OptionalPropertiesCostLinearly) {
  json props = json::object();
  for (int i = 0; i < 3000; ++i) props["p" + std::to_string(i)] = {{"type", "integer"}};
  auto text = json_schema_to_gbnf(json{{"type", "object"}, {"properties", props}, {"required", {"p1500"}}}, false);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_LT(text->size(), size_t{1} << 20);
  auto g = compile_gbnf(*text);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(run(*g, R"({"p1500":1})"), 1);
  EXPECT_EQ(run(*g, R"({"p3":1,"p2999":2})"), -1);  // p1500 is required
  EXPECT_EQ(run(*g, R"({"p3":1,"p1500":2,"p2999":3})"), 1);
}

TEST(JsonSchema, DefsAndRecursiveReferences) {
  const json tree = json::parse(R"({
    "$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v", "kids"], "additionalProperties": false}},
    "$ref": "#/$defs/node"})");
  const Grammar g = schema_grammar(tree, true);
  EXPECT_EQ(run(g, R"({"v":1,"kids":[{"v":2,"kids":[]},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"), 1);
  EXPECT_EQ(run(g, R"({"v":1,"kids":[{"v":2}]})"), -1);
}

TEST(JsonSchema, JsonObjectModeTakesAnyObject) {
  auto g = compile_gbnf(json_object_gbnf());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(run(*g, R"({"a":[1,{"b":null}],"c":"\u00e9\n","d":true})"), 1);
  EXPECT_EQ(run(*g, "[1]"), -1);
  EXPECT_EQ(run(*g, R"({"a" 1})"), -1);
}

TEST(JsonSchema, OutsideTheSubsetIsRefusedByNameAndPlace) {
  auto refused = [](const std::string& schema, bool strict, const std::string& words) {
    auto r = json_schema_to_gbnf(json::parse(schema), strict);
    ASSERT_FALSE(r.ok()) << schema;
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
  };
  refused(R"({"type":"string","pattern":"^a"})", false, "keyword 'pattern' is not supported");
  refused(R"({"type":"object","properties":{"n":{"type":"integer","minimum":3}}})", false,
          "at /properties/n: keyword 'minimum'");
  refused(R"({"oneOf":[{"type":"null"}]})", false, "'oneOf'");
  refused(R"({"type":"object","properties":{"a":{"type":"null"}},"required":["a"]})", true,
          "additionalProperties: false");
  refused(R"({"type":"object","properties":{"a":{"type":"null"}},"additionalProperties":false})",
          true, "every property is required ('a'");
  refused(R"({"type":"object","properties":{},"required":["zz"]})", false, "not in properties");
  refused(R"({"$ref":"#/$defs/missing"})", false, "names nothing");
  refused(R"({"type":"tuple"})", false, "type 'tuple'");
  json deep = {{"type", "string"}};
  for (int i = 0; i < 12; ++i) deep = {{"type", "array"}, {"items", deep}};
  refused(deep.dump(), false, "nested deeper than 10");
}

// A draw of any allowed token at every step: the guide alone keeps the text valid.
std::string random_walk(GrammarGuide& guide, const TokenTrie& trie, const Tokenizer& tok,
                        std::mt19937& rng, int32_t max_tokens, bool& ended) {
  std::vector<int32_t> generated;
  ended = false;
  while (static_cast<int32_t>(generated.size()) < max_tokens) {
    auto allowed = guide.allowed(generated);
    EXPECT_FALSE(allowed.empty());
    const int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    if (tok.is_eog(id)) {
      ended = true;
      break;
    }
    generated.push_back(id);
  }
  (void)trie;
  return tok.decode(generated);
}

TEST(GrammarGuide, RandomWalksAlwaysEndInValidJsonWithinTheBudget) {
  auto vocab = make_synthetic_vocab(2000, 3);
  ASSERT_TRUE(vocab.ok());
  auto tok = Tokenizer::from_vocab(std::move(*vocab));
  ASSERT_TRUE(tok.ok());
  auto trie = std::make_shared<const TokenTrie>(*tok);
  std::mt19937 rng(11);
  for (const json& schema :
       {kPerson, json::parse(R"({"type":"array","items":{"type":"string"}})")}) {
    auto g = std::make_shared<const Grammar>(schema_grammar(schema));
    for (int walk = 0; walk < 30; ++walk) {
      GrammarGuide guide(g, trie, 120);
      bool ended = false;
      const std::string text = random_walk(guide, *trie, *tok, rng, 120, ended);
      EXPECT_TRUE(ended) << text;
      EXPECT_EQ(run(*g, text), 1) << text;
      EXPECT_FALSE(json::parse(text, nullptr, false).is_discarded()) << text;
    }
  }
}

// Guides of one grammar share their masks: a second request walking the same states finds
// them cached, and gets the same tokens allowed.
TEST(GrammarGuide, RequestsOfOneGrammarShareTheirMasks) {
  auto vocab = make_synthetic_vocab(1200, 4);
  ASSERT_TRUE(vocab.ok());
  auto tok = Tokenizer::from_vocab(std::move(*vocab));
  ASSERT_TRUE(tok.ok());
  auto trie = std::make_shared<const TokenTrie>(*tok);
  auto g = std::make_shared<const Grammar>(schema_grammar(kPerson));
  auto masks = std::make_shared<MaskCache>();
  auto follow = [&](std::vector<std::vector<int32_t>>& seen) {
    GrammarGuide guide(g, trie, 100, masks);
    std::vector<int32_t> generated;
    for (int step = 0; step < 12; ++step) {
      auto allowed = guide.allowed(generated);
      seen.emplace_back(allowed.begin(), allowed.end());
      generated.push_back(allowed[allowed.size() / 2]);  // the same choices both times
    }
  };
  std::vector<std::vector<int32_t>> first, second;
  follow(first);
  const uint64_t hits = masks->hits();
  follow(second);
  EXPECT_EQ(first, second);
  EXPECT_GE(masks->hits(), hits + 12);
}

TEST(GrammarGuide, AnEndIsAllowedOnlyOnACompleteMatch) {
  auto vocab = make_synthetic_vocab(600, 5);
  ASSERT_TRUE(vocab.ok());
  auto tok = Tokenizer::from_vocab(std::move(*vocab));
  ASSERT_TRUE(tok.ok());
  auto trie = std::make_shared<const TokenTrie>(*tok);
  auto g = compile_gbnf(R"(root ::= "ok")");
  ASSERT_TRUE(g.ok());
  GrammarGuide guide(std::make_shared<const Grammar>(std::move(*g)), trie, 0);
  std::vector<int32_t> generated;
  for (int step = 0; step < 4; ++step) {
    auto allowed = guide.allowed(generated);
    bool has_end = false;
    for (int32_t id : allowed) has_end |= tok->is_eog(id);
    const std::string so_far = tok->decode(generated);
    EXPECT_EQ(has_end, so_far == "ok") << so_far;
    if (has_end) break;
    // Every allowed token keeps "ok" reachable.
    for (int32_t id : allowed) {
      std::vector<int32_t> next = generated;
      next.push_back(id);
      const std::string t = tok->decode(next);
      EXPECT_EQ(std::string("ok").rfind(t, 0), 0u) << "'" << t << "'";
    }
    generated.push_back(allowed[0]);
  }
  EXPECT_EQ(tok->decode(generated), "ok");
}

}  // namespace
}  // namespace edge::grammar
