// GBNF grammars and their matcher: what each notation matches and refuses, prefixes that
// can still complete, UTF-8 taken byte by byte (a sequence in progress is alive only while
// some code point it starts could match), and the compile-time refusals (undefined rule,
// left recursion, syntax, naming the line).
#include "runtime/grammar/grammar.h"

#include <gtest/gtest.h>

#include "runtime/grammar/grammar_matcher.h"
#include "runtime/grammar/match.h"

namespace edge::grammar {
namespace {

Grammar compile(std::string_view text) {
  auto g = compile_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? std::move(*g) : Grammar{};
}

TEST(Grammar, LiteralsClassesAndAlternatives) {
  const Grammar g = compile(R"(root ::= "yes" | "no" | [0-9] [a-c^]  # a comment
)");
  EXPECT_EQ(run(g, "yes"), 1);
  EXPECT_EQ(run(g, "no"), 1);
  EXPECT_EQ(run(g, "ye"), 0);
  EXPECT_EQ(run(g, "yess"), -1);
  EXPECT_EQ(run(g, "7b"), 1);
  EXPECT_EQ(run(g, "7^"), 1);
  EXPECT_EQ(run(g, "7d"), -1);
  EXPECT_EQ(run(g, "x"), -1);
  EXPECT_EQ(run(g, ""), 0);
}

TEST(Grammar, RepetitionsAndGroups) {
  const Grammar g = compile(R"(
root ::= "a"* b+ c? d{2} e{1,3} ("xy" | "z"){0,}
b ::= "b"
c ::= "c"
d ::= "d"
e ::= "e"
)");
  EXPECT_EQ(run(g, "bdde"), 1);
  EXPECT_EQ(run(g, "aaabbbcddeee"), 1);
  EXPECT_EQ(run(g, "aaabbbcddeeee"), -1);  // e{1,3}
  EXPECT_EQ(run(g, "bdd"), 0);             // e needs one more
  EXPECT_EQ(run(g, "bdddd"), -1);          // d{2}
  EXPECT_EQ(run(g, "bddexyzxy"), 1);
  EXPECT_EQ(run(g, "bddexz"), -1);
  EXPECT_EQ(run(g, "dde"), -1);  // b+ needs one
  // A postfix applies to a whole literal.
  const Grammar w = compile(R"(root ::= "ab"+)");
  EXPECT_EQ(run(w, "ababab"), 1);
  EXPECT_EQ(run(w, "abb"), -1);
}

TEST(Grammar, NegatedClassesEscapesAndAnyCharacter) {
  const Grammar g = compile(R"(root ::= "\"" [^"\\\n]* "\"" . [\x41-\x43] "\u00e9")");
  EXPECT_EQ(run(g, "\"hi there\"!Bé"), 1);
  EXPECT_EQ(run(g, "\"a\"b"), 0);
  EXPECT_EQ(run(g, "\"a\nb\""), -1);
  EXPECT_EQ(run(g, "\"\"xD"), -1);
}

TEST(Grammar, Utf8IsTakenByteByByte) {
  const Grammar g = compile(R"(root ::= [α-ω]+ "→")");
  EXPECT_EQ(run(g, "αβγ→"), 1);
  EXPECT_EQ(run(g, "αβ"), 0);
  const std::string alpha = "α";             // CE B1
  EXPECT_EQ(run(g, alpha.substr(0, 1)), 0);  // could still be a Greek letter
  EXPECT_EQ(run(g, "\xD0"), -1);             // starts only Cyrillic (U+0400..)
  EXPECT_EQ(run(g, "\xCE\x41"), -1);         // not a continuation byte
  EXPECT_EQ(run(g, "\xC0\x80"), -1);         // overlong
  const Grammar any = compile(R"(root ::= .*)");
  EXPECT_EQ(run(any, "\xED\xA0\x80"), -1);  // a surrogate is not a code point
  EXPECT_EQ(run(any, "\xED\xA0"), -1);      // nor can this become anything else
  EXPECT_EQ(run(any, "日本"), 1);
}

TEST(Grammar, RecursionThatConsumesIsFine) {
  const Grammar g = compile(R"(
root ::= list
list ::= "[" (item ("," item)*)? "]"
item ::= list | [0-9]
)");
  EXPECT_EQ(run(g, "[1,[2,[]],3]"), 1);
  EXPECT_EQ(run(g, "[[[["), 0);
  EXPECT_EQ(run(g, "[1,]"), -1);
}

TEST(Grammar, DistanceCountsTheFewestCharactersToFinish) {
  const Grammar g = compile(R"(root ::= "{" [a-z]* "}" "!"?)");
  Matcher m(g);
  Matcher::State s = m.initial();
  EXPECT_EQ(s.dist, 2);
  s = m.advance(s, '{');
  EXPECT_EQ(s.dist, 1);
  s = m.advance(s, 'q');
  EXPECT_EQ(s.dist, 1);
  s = m.advance(s, '}');
  EXPECT_TRUE(s.accept);
  EXPECT_EQ(s.dist, 0);
}

TEST(Grammar, CompactKeepsTheState) {
  const Grammar g = compile(R"g(root ::= ("(" [a-z]* ")")+)g");
  Matcher m(g);
  Matcher::State s = m.initial();
  const std::string text = "(abc)(de)(f";
  for (unsigned char c : text) s = m.advance(s, c);
  const size_t before = m.arena_size();
  m.compact(s);
  EXPECT_LT(m.arena_size(), before);
  for (unsigned char c : std::string(")(x)")) s = m.advance(s, c);
  EXPECT_TRUE(s.accept);
}

TEST(Grammar, RefusalsNameTheProblem) {
  auto refused = [](std::string_view text, const std::string& words) {
    auto g = compile_gbnf(text);
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_NE(g.status().message().find(words), std::string::npos) << g.status().message();
  };
  refused("root ::= thing", "'thing' is used but not defined");
  refused("root ::= root \"a\" | \"b\"", "left-recursive");
  refused("root ::= a | \"y\"\na ::= \"x\"? root", "left-recursive");
  refused("root ::= \"a\" root", "matches no finite text");
  refused("root ::= \"a\"\nroot ::= \"b\"", "defined twice");
  refused("root ::= \"a\n", "grammar line");
  refused("root ::= [b-a]", "grammar line 1");
  refused("root := \"a\"", "'::='");
  refused("start ::= \"a\"", "no rule 'root'");
  refused("root ::= \"a\"{900000} \"b\"{900000}", "elements once repetitions are expanded");
  refused("root ::= [a-z]{0,5}{0,5}{0,5}{0,5}{0,5}{0,5}{0,5}{0,5}", "grammar line");
}

TEST(Grammar, LiteralsQuoteWhatTheyHold) {
  const Grammar g = compile("root ::= " + gbnf_literal("say \"hi\"\\\n\x01"));
  EXPECT_EQ(run(g, "say \"hi\"\\\n\x01"), 1);
}

}  // namespace
}  // namespace edge::grammar
