// Engine features of the chat-template Jinja engine, independent of real templates.
// Expected strings follow @huggingface/jinja (trim_blocks + lstrip_blocks on, booleans
// print as true/false, undefined prints nothing).
#include <gtest/gtest.h>

#include "tokenizer/chat_template.h"

namespace edge {
namespace {

// Renders `src` with `vars` (a JSON object text); returns the output or "ERROR: <message>".
std::string render(const std::string& src, const std::string& vars = "{}") {
  auto t = ChatTemplate::parse(src);
  if (!t.ok()) return "ERROR: " + t.status().message();
  auto out = t->render_variables(nlohmann::ordered_json::parse(vars));
  if (!out.ok()) return "ERROR: " + out.status().message();
  return *out;
}

bool is_error(const std::string& s) { return s.rfind("ERROR: ", 0) == 0; }

TEST(ChatTemplateEngine, TextAndExpressions) {
  EXPECT_EQ(render("Hello {{ name }}!", R"({"name": "world"})"), "Hello world!");
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ -7 % 3 }}"), "7 3 3.5 1024 2");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ true }} {{ 'x' + 'y' }} {{ 3.0 }} {{ 0.1 + 0.2 }}"),
            "a1true xy 3.0 0.30000000000000004");
  EXPECT_EQ(render("{{ [1, 'a', none, true] }} {{ {'k': [1, 2]} }}"), "[1, \"a\", null, true] {\"k\": [1, 2]}");
  EXPECT_EQ(render("{{ none }}|{{ undefined_var }}|{{ undefined_var.attr.deeper }}|"), "|||");
  EXPECT_EQ(render("{{ 'yes' if x else 'no' }} {{ 'yes' if not x else 'no' }}"), "no yes");
  EXPECT_EQ(render("{{ (1, 2) }} {{ 'ab' 'cd' }}"), "[1, 2] abcd");
}

TEST(ChatTemplateEngine, WhitespaceControl) {
  EXPECT_EQ(render("a  \n  {{- 'b' -}}  \n  c"), "abc");
  EXPECT_EQ(render("a {%- if true %} b {% endif -%} c"), "a b c");
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it.
  EXPECT_EQ(render("{% if true %}\n    x\n    {% endif %}\n"), "    x\n");
  EXPECT_EQ(render("line\n  {{ 'v' }}\n"), "line\n  v");  // {{ }} is not a block: no lstrip
  EXPECT_EQ(render("a {# comment #} b{#- c -#}  c"), "a  bc");
  EXPECT_EQ(render("x\n\n"), "x\n");  // one trailing newline is dropped
}

TEST(ChatTemplateEngine, Loops) {
  const std::string vars = R"({"xs": ["a", "b", "c"]})";
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ x }}{{ ',' if not loop.last }}{% endfor %}", vars),
            "1a,2b,3c");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.length }};{% endfor %}",
                   vars),
            "03true3;12false3;21false3;");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in xs if x != 'b' %}{{ x }}{{ loop.length }}{% endfor %}", vars), "a2c2");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"z": 1, "a": 2}})"),
            "z=1;a=2;");
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", R"({"d": {"z": 1, "a": 2}})"), "za");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}", vars), "ac");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}", vars), "a");
  EXPECT_EQ(render("{% for x in xs[::-1] %}{{ x }}{% endfor %}", vars), "cba");
  EXPECT_EQ(render("{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(5, 1, -2) %}{{ i }}{% endfor %}"),
            "01253");
  // A plain `set` inside a loop does not leak out of it.
  EXPECT_EQ(render("{% set v = 1 %}{% for x in xs %}{% set v = 2 %}{% endfor %}{{ v }}", vars), "1");
}

TEST(ChatTemplateEngine, NamespaceSetInsideLoop) {
  const std::string src =
      "{%- set ns = namespace(count=0, last=none) -%}"
      "{%- for m in msgs -%}{%- if m.role == 'user' -%}{%- set ns.count = ns.count + 1 -%}"
      "{%- set ns.last = loop.index0 -%}{%- endif -%}{%- endfor -%}{{ ns.count }}/{{ ns.last }}";
  EXPECT_EQ(render(src, R"({"msgs": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]})"), "2/2");
  EXPECT_TRUE(is_error(render("{% set d = {} %}{% set d.x = 1 %}")));
}

TEST(ChatTemplateEngine, SetForms) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set block %}x{{ 1 + 1 }}y{% endset %}[{{ block }}]"), "[x2y]");
  EXPECT_EQ(render("{% if true %}{% set v = 'in-if' %}{% endif %}{{ v }}"), "in-if");
  EXPECT_EQ(render("{% set xs = [1] %}{% set _ = xs.append(2) %}{{ xs }}{{ _ }}"), "[1, 2]");
}

TEST(ChatTemplateEngine, Macros) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Ann') }} {{ greet('Bob', punct='?') }} {{ greet(name='Cy', punct='.') }}"),
            "Hi Ann! Hi Bob? Hi Cy.");
  EXPECT_EQ(render("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
                   "{% call wrap('b') %}bold{% endcall %}"),
            "<b>bold</b>");
  EXPECT_EQ(render("{% macro row(x) %}{{ caller(x * 2) }}{% endmacro %}{% call(v) row(21) %}={{ v }}{% endcall %}"),
            "=42");
  EXPECT_EQ(render("{% macro all() %}{{ varargs|length }}{{ kwargs.k }}{% endmacro %}{{ all(1, 2, k='v') }}"), "2v");
  const std::string recursive = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_TRUE(is_error(recursive)) << recursive;
  EXPECT_NE(recursive.find("nested too deeply"), std::string::npos);
}

TEST(ChatTemplateEngine, RawBlock) {
  EXPECT_EQ(render("a{% raw %}{{ not parsed }}{% if %}{% endraw %}b"), "a{{ not parsed }}{% if %}b");
  EXPECT_EQ(render("a {%- raw -%}  x  {%- endraw -%} b"), "axb");
  EXPECT_TRUE(is_error(render("{% raw %}never closed")));
}

TEST(ChatTemplateEngine, FilterBlock) {
  EXPECT_EQ(render("{% filter upper %}abc{{ 'd' }}{% endfilter %}"), "ABCD");
  EXPECT_EQ(render("{% filter replace('a', 'o') %}banana{% endfilter %}"), "bonono");
}

TEST(ChatTemplateEngine, Filters) {
  EXPECT_EQ(render("{{ '  x  '|trim }}|{{ 'ab'|upper }}|{{ 'AB'|lower }}|{{ 'hello world'|title }}|{{ 'hI'|capitalize }}"),
            "x|AB|ab|Hello World|HI");
  EXPECT_EQ(render("{{ [3, 1, 2]|sort|join(',') }} {{ [1, 2]|reverse|list }} {{ ['a', 'b']|first }}{{ ['a', 'b']|last }}"),
            "1,2,3 [2, 1] ab");
  EXPECT_EQ(render("{{ [1, 1, 2]|unique|length }} {{ 'héllo'|length }} {{ {'a': 1}|length }} {{ [1, 2]|count }}"),
            "2 5 1 2");
  EXPECT_EQ(render("{{ x|default('dflt') }} {{ ''|default('e', true) }} {{ 0|default(5) }}"), "dflt e 0");
  EXPECT_EQ(render("{{ '42'|int + 1 }} {{ '2.5'|float }} {{ 'zz'|int }} {{ -3|abs }} {{ 3|string ~ 'x' }}"),
            "43 2.5 0 3 3x");
  EXPECT_EQ(render("{{ 'a-b-a'|replace('a', 'x') }} {{ 'l1\nl2'|indent(2) }}"), "x-b-x l1\n  l2");
  const std::string people = R"({"p": [{"n": "a", "ok": true}, {"n": "b", "ok": false}, {"n": "c"}]})";
  EXPECT_EQ(render("{{ p|selectattr('ok')|map(attribute='n')|join }}", people), "a");
  EXPECT_EQ(render("{{ p|rejectattr('ok')|map(attribute='n')|join }}", people), "bc");
  EXPECT_EQ(render("{{ p|selectattr('n', 'equalto', 'c')|map(attribute='n')|list }}", people), "[\"c\"]");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|dictsort }} {{ {'b': 1, 'a': 2}|items|list }}"),
            "[[\"a\", 2], [\"b\", 1]] [[\"b\", 1], [\"a\", 2]]");
  EXPECT_EQ(render("{{ [{'v': 2}, {'v': 1}]|sort(attribute='v')|map(attribute='v')|join('') }}"), "12");
  EXPECT_EQ(render("{{ '<b>'|safe }}"), "<b>");
  EXPECT_TRUE(is_error(render("{{ x|nosuchfilter }}")));
  EXPECT_TRUE(is_error(render("{{ none|trim }}")));  // as the reference: trim needs a string
}

TEST(ChatTemplateEngine, ToJson) {
  const std::string vars = R"({"t": {"name": "f", "params": {"a": [1, 2.5, "é\n\"q\""], "e": {}, "l": []}}})";
  EXPECT_EQ(render("{{ t|tojson }}", vars),
            "{\"name\": \"f\", \"params\": {\"a\": [1, 2.5, \"é\\n\\\"q\\\"\"], \"e\": {}, \"l\": []}}");
  EXPECT_EQ(render("{{ t|tojson(indent=2) }}", vars),
            "{\n  \"name\": \"f\",\n  \"params\": {\n    \"a\": [\n      1,\n      2.5,\n      \"é\\n\\\"q\\\"\"\n"
            "    ],\n    \"e\": {},\n    \"l\": []\n  }\n}");
  EXPECT_EQ(render("{{ 'é'|tojson(ensure_ascii=true) }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}"),
            "\"\\u00e9\" {\"a\": 2, \"b\": 1}");
  EXPECT_EQ(render("{{ {'a': [1, 2]}|tojson(separators=(',', ':')) }} {{ 1000000000000000000000.0 }}"), "{\"a\":[1,2]} 1e+21");
}

// ordered_json keeps the caller's key order (what Python/JS renderers print); plain
// nlohmann::json sorts keys.
TEST(ChatTemplateEngine, KeyOrderFollowsInputJsonType) {
  auto t = ChatTemplate::parse("{{ tool|tojson }}");
  ASSERT_TRUE(t.ok());
  const std::string text = R"({"tool": {"type": "function", "name": "f", "args": {"z": 1, "a": 2}}})";
  EXPECT_EQ(*t->render_variables(nlohmann::ordered_json::parse(text)),
            "{\"type\": \"function\", \"name\": \"f\", \"args\": {\"z\": 1, \"a\": 2}}");
  EXPECT_EQ(*t->render_variables(nlohmann::json::parse(text)),
            "{\"args\": {\"a\": 2, \"z\": 1}, \"name\": \"f\", \"type\": \"function\"}");
}

// Where @huggingface/jinja differs from Python Jinja we follow Python for these (the
// conformance tests avoid them): strip(chars) honours chars, % follows the divisor's sign,
// iterating undefined is empty, == compares lists by value.
TEST(ChatTemplateEngine, PythonSemanticsWhereTheReferenceDiffers) {
  EXPECT_EQ(render("[{{ ' \n x \n '.strip('\n') }}]"), "[ \n x \n ]");
  EXPECT_EQ(render("{{ -7 % 3 }} {{ 7 % -3 }}"), "2 -2");
  EXPECT_EQ(render("{% for x in nope %}x{% else %}none{% endfor %}"), "none");
  EXPECT_EQ(render("{{ [1, 2] == [1, 2] }}"), "true");
}

TEST(ChatTemplateEngine, Tests) {
  const std::string vars = R"({"s": "x", "n": 3, "f": 1.5, "l": [1], "d": {"k": 1}, "b": true, "z": null})";
  EXPECT_EQ(render("{{ s is string }}{{ n is number }}{{ f is number }}{{ l is iterable }}{{ d is mapping }}", vars),
            "truetruetruetruetrue");
  EXPECT_EQ(render("{{ q is defined }}{{ q is undefined }}{{ z is none }}{{ z is not none }}{{ b is boolean }}", vars),
            "falsetruetruefalsetrue");
  EXPECT_EQ(render("{{ b is true }}{{ b is false }}{{ n is odd }}{{ n is even }}{{ l is sequence }}", vars),
            "truefalsetruefalsetrue");
  EXPECT_EQ(render("{{ n is divisibleby(3) }}{{ s is in(['x']) }}{{ n is integer }}{{ s is upper }}", vars),
            "truetruetruefalse");
  EXPECT_EQ(render("{{ 'x' in s }}{{ 'k' in d }}{{ 1 in l }}{{ 2 not in l }}{{ 'a' in undefined_v }}", vars),
            "truetruetruetruefalse");
  EXPECT_EQ(render("{{ n is divisibleby 3 }}{{ s is equalto 'x' }}{{ z is sameas none }}{{ b is sameas false }}", vars),
            "truetruetruefalse");
  EXPECT_TRUE(is_error(render("{{ s is nosuchtest }}", vars)));
}

TEST(ChatTemplateEngine, StringAndDictMethods) {
  EXPECT_EQ(render("{{ '\n\nx\n'.strip('\n') }}|{{ '  x '.lstrip() }}|{{ 'xyyx'.rstrip('x') }}|{{ ' a '.strip() }}"),
            "x|x |xyy|a");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }}"),
            "[\"a\", \"b\", \"\", \"c\"] [\"a\", \"b\"] [\"a\", \"b,c\"]");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'aXa'.replace('a', 'b') }}"),
            "truetruebXb");
  EXPECT_EQ(render("{{ 'ab'.upper() }}{{ 'AB'.lower() }}{{ 'hello there'.title() }}"), "ABabHello There");
  EXPECT_EQ(render("{{ 'x</think>y'.split('</think>')[-1] }}{{ 'héllo'[1] }}{{ 'abc'[::-1] }}{{ 'abcd'[1:3] }}"),
            "yécbabc");
  const std::string d = R"({"d": {"a": 1, "b": 2}})";
  EXPECT_EQ(render("{{ d.get('a') }}{{ d.get('z', 'dflt') }}{{ d.get('z') }}{{ d.keys()|list }}{{ d.values()|list }}", d),
            "1dflt[\"a\", \"b\"][1, 2]");
  EXPECT_EQ(render("{{ d['a'] }}{{ d.a }}{{ d['missing'] }}{{ [1, 2, 3][-1] }}{{ [1, 2, 3][1:] }}", d), "113[2, 3]");
}

TEST(ChatTemplateEngine, RaiseExceptionAndRuntimeErrors) {
  const std::string r = render("a\n{% if true %}\n{{ raise_exception('bad roles: ' ~ 'x') }}\n{% endif %}");
  EXPECT_TRUE(is_error(r));
  EXPECT_NE(r.find("bad roles: x"), std::string::npos) << r;
  EXPECT_NE(r.find("line 3"), std::string::npos) << r;
  const std::string call = render("{{ 'abc'.nosuchmethod() }}");
  EXPECT_TRUE(is_error(call));
  EXPECT_NE(call.find("not a function"), std::string::npos) << call;
  EXPECT_TRUE(is_error(render("{{ 1 + none }}")));
  EXPECT_TRUE(is_error(render("{{ 1 / 0 }}")));
  EXPECT_TRUE(is_error(render("{% for x in 5 %}{% endfor %}")));
}

TEST(ChatTemplateEngine, ParseErrorsNameLineAndExpectation) {
  auto unclosed = ChatTemplate::parse("line1\n{% if x %}\nbody\n");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("endif"), std::string::npos) << unclosed.status().message();
  EXPECT_NE(unclosed.status().message().find("line 2"), std::string::npos) << unclosed.status().message();

  auto bad_expr = ChatTemplate::parse("ok\nok\n  {{ a + }}");
  ASSERT_FALSE(bad_expr.ok());
  EXPECT_NE(bad_expr.status().message().find("line 3"), std::string::npos) << bad_expr.status().message();
  EXPECT_NE(bad_expr.status().message().find("expected an expression"), std::string::npos)
      << bad_expr.status().message();

  auto missing_paren = ChatTemplate::parse("{{ f(1, 2 }}");
  ASSERT_FALSE(missing_paren.ok());
  EXPECT_NE(missing_paren.status().message().find("expected ',' or ')'"), std::string::npos)
      << missing_paren.status().message();
  EXPECT_NE(missing_paren.status().message().find("column 11"), std::string::npos) << missing_paren.status().message();

  EXPECT_FALSE(ChatTemplate::parse("{% frobnicate %}").ok());
  EXPECT_FALSE(ChatTemplate::parse("{{ 'unterminated }}").ok());
  EXPECT_FALSE(ChatTemplate::parse("{# never closed").ok());
  EXPECT_FALSE(ChatTemplate::parse("{{ " + std::string(1000, '(') + "1 }}").ok());  // depth limit, not a crash
}

TEST(ChatTemplateEngine, RenderInputsBuildVariables) {
  auto t = ChatTemplate::parse(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
      "{% if add_generation_prompt %}>{% endif %}{{ enable_thinking }}{{ tools is none }}");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ChatTemplateInputs in;
  in.messages = nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])");
  in.bos_token = "<s>";
  in.extra = {{"enable_thinking", false}};
  auto out = t->render(in);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "<s>[user:hi]>falsetrue");
  in.add_generation_prompt = false;
  EXPECT_EQ(*t->render(in), "<s>[user:hi]falsetrue");
}

}  // namespace
}  // namespace edge
