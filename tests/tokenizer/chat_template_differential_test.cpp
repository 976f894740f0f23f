// Engine features rendered by our engine and by @huggingface/jinja over small templates:
// output must be byte-identical, and an error on one side must be an error on the other.
// Covers what the three real templates do not (macros, filters, tests, tojson variants,
// slicing, numbers). Features where we deliberately follow Python Jinja instead of the
// reference are left out here and covered by chat_template_test.cpp: strip(chars), % on
// negatives, iterating undefined or a string, deep == on lists, printing tuples, and
// filters/tests the reference lacks (count, select, divisibleby(n), ...). Needs node; skipped loudly otherwise.
#include <gtest/gtest.h>

#include "test_support.h"

#include "chat_template_ref.h"
#include "tokenizer/chat_template.h"

namespace edge {
namespace {

using testing::ojson;

struct Snippet {
  const char* source;
  const char* vars;
};

const char* kVars = R"({"s": "Hello World", "n": 7, "f": 2.5, "b": true, "z": null,
  "xs": [3, 1, 2], "words": ["b", "A", "c"], "d": {"k2": "v2", "k1": "v1"},
  "people": [{"name": "ann", "age": 30, "ok": true}, {"name": "bob", "age": 25, "ok": false}, {"name": "cy", "age": 35}],
  "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": "u1"},
           {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"}],
  "tool": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
           "empty_l": [], "empty_d": {}, "uni": "é日🤗", "ctl": "a\nb\tc\u0001\"\\"}})";

// A table, not code: one entry per feature probe.
const std::vector<Snippet> kSnippets = {
      // text, whitespace control, trim_blocks/lstrip_blocks
      {"plain text\n", nullptr},
      {"a  {{- 'b' -}}  c", nullptr},
      {"a\n  {%- if true %}\n  x\n  {% endif -%}\n  b\n", nullptr},
      {"{% if true %}\n    indented\n    {% endif %}\nafter", nullptr},
      {"  {{ 'expr keeps indent' }}\n{# comment #}\nx {#- c -#}  y", nullptr},
      {"{% for x in xs %}\n  - {{ x }}\n{% endfor %}", nullptr},
      // expressions and printing
      {"{{ 1 + 2 * 3 }}|{{ 7 / 2 }}|{{ 7 // 2 }}|{{ 2 ** 10 }}|{{ 10 / 4 }}|{{ 0.1 + 0.2 }}|{{ 3.0 }}|{{ -n }}", nullptr},
      {"{{ n % 4 }}|{{ f * 2 }}|{{ n - 10 }}|{{ 1000000000000000000000.0 }}|{{ 0.0000001 }}|{{ n > 5 }}|{{ 2 ** 100 }}", nullptr},
      {"{{ b }}|{{ z }}|{{ nope }}|{{ nope.a.b }}|{{ xs }}|{{ d }}|{{ [1, nope, none, 'q'] }}", nullptr},
      {"{{ 'a' ~ n ~ b }}|{{ s + '!' }}|{{ 'x' if b }}|{{ 'x' if not b }}|{{ 'y' if z else 'n' }}", nullptr},
      {"{{ 'a' in s }}{{ 'H' in s }}{{ 1 in xs }}{{ 9 not in xs }}{{ 'k1' in d }}{{ 'q' in nope }}", nullptr},
      {"{{ b and n }}|{{ z or 'dflt' }}|{{ not xs }}|{{ s != 'x' }}|{{ n == 7.0 }}", nullptr},
      {"{{ {'a': 1, 'b': [true, none]} }}|{{ 'ab' 'cd' }}|{{ \"dq\\n\\\"\" }}", nullptr},
      // member access and slicing
      {"{{ d.k1 }}{{ d['k2'] }}{{ xs[0] }}{{ xs[-1] }}{{ xs.1 }}{{ msgs[1].role }}{{ msgs[-1]['content'] }}", nullptr},
      {"{{ xs[::-1] }}|{{ xs[1:] }}|{{ xs[:-1] }}|{{ xs[-2:] }}|{{ s[::-1] }}|{{ s[1:4] }}|{{ s[::2] }}", nullptr},
      {"{{ xs|length }}{{ s|length }}{{ d|length }}{{ s.length }}{{ xs.length }}", nullptr},
      // loops
      {"{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
       "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", nullptr},
      {"{% for x in xs %}{{ loop.previtem }}>{{ x }}>{{ loop.nextitem }};{% endfor %}", nullptr},
      {"{% for x in [] %}x{% else %}empty{% endfor %}{% for x in xs if x > 1 %}{{ x }}/{{ loop.length }}{% endfor %}",
       nullptr},
      {"{% for k in d %}{{ k }}{% endfor %}|{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}", nullptr},
      {"{% for k, v in d|items %}{{ k }}{% endfor %}|{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}", nullptr},
      {"{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}"
       "{% endfor %}", nullptr},
      {"{% for m in msgs %}{% for c in m.content.split('1') %}{{ c }}{% endfor %}{{ loop.index }}{% endfor %}",
       nullptr},
      {"{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(2, 8, 3) %}{{ i }}{% endfor %}"
       "{% for i in range(3, 0, -1) %}{{ i }}{% endfor %}", nullptr},
      // set, namespace, scoping
      {"{% set a = 1 %}{% for x in xs %}{% set a = x %}{% endfor %}{{ a }}", nullptr},
      {"{% set ns = namespace(found=false, idx=-1) %}{% for m in msgs %}{% if m.role == 'user' %}"
       "{% set ns.found = true %}{% set ns.idx = loop.index0 %}{% endif %}{% endfor %}{{ ns.found }}{{ ns.idx }}",
       nullptr},
      {"{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set blk %}in{{ n }}side{% endset %}[{{ blk }}]", nullptr},
      {"{% if true %}{% set v = 'x' %}{% endif %}{{ v }}{% set d2 = {'k': 1} %}{{ d2.k }}", nullptr},
      // macros and call blocks
      {"{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 2) }}|{{ m(1, c=3) }}",
       nullptr},
      {"{% macro w(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}{% call w('p') %}body {{ n }}{% endcall %}",
       nullptr},
      {"{% macro r(x) %}{{ caller(x, x * 2) }}{% endmacro %}{% call(a, b) r(3) %}{{ a }}+{{ b }}{% endcall %}",
       nullptr},
      {"{% macro k() %}{{ kwargs }}{{ varargs }}{% endmacro %}{{ k(1, 2, x=3) }}", nullptr},
      {"{% filter upper %}abc {{ s }}{% endfilter %}", nullptr},
      // filters
      {"{{ '  pad  '|trim }}|{{ s|upper }}|{{ s|lower }}|{{ 'hello wORLD'|title }}|{{ 'hELLO'|capitalize }}", nullptr},
      {"{{ xs|sort }}|{{ xs|sort(reverse=true) }}|{{ words|sort }}|{{ words|sort(case_sensitive=true) }}", nullptr},
      {"{{ people|sort(attribute='age')|map(attribute='name')|join(',') }}|{{ xs|join('-') }}|{{ words|join }}",
       nullptr},
      {"{{ people|selectattr('ok')|map(attribute='name')|list }}|{{ people|rejectattr('ok')|map(attribute='name')|list }}",
       nullptr},
      {"{{ people|selectattr('name', 'equalto', 'bob')|list|length }}|{{ people|map(attribute='zz', default='?')|list }}",
       nullptr},
      {"{{ xs|first }}{{ xs|last }}{{ xs|reverse }}{{ [1, 1, 2, 1]|unique }}{{ xs|list }}", nullptr},
      {"{{ d|dictsort }}|{{ d|dictsort(reverse=true) }}|{{ d|items }}|{{ d.keys() }}|{{ d.values() }}", nullptr},
      {"{{ nope|default('D') }}|{{ z|default('D') }}|{{ ''|default('E', true) }}|{{ s|default('x') }}", nullptr},
      {"{{ '12'|int + 1 }}|{{ 'x'|int }}|{{ '2.5'|float }}|{{ f|int }}|{{ n|float }}|{{ -3|abs }}|{{ n|string }}",
       nullptr},
      {"{{ b|string }}|{{ xs|string }}|{{ 'a-b-a'|replace('a', 'o') }}|{{ 'l1\nl2\n\nl4'|indent }}|"
       "{{ 'l1\nl2'|indent(2, true) }}", nullptr},
      {"{{ s|safe }}|{{ z|tojson }}|{{ nope|tojson }}|{{ b|tojson }}|{{ f|tojson }}|{{ 'q\"'|tojson }}", nullptr},
      {"{{ tool|tojson }}", nullptr},
      {"{{ tool|tojson(indent=2) }}", nullptr},
      {"{{ tool|tojson(indent=4) }}|{{ xs|tojson(indent=1) }}", nullptr},
      {"{{ tool|tojson(ensure_ascii=true) }}|{{ tool|tojson(sort_keys=true) }}", nullptr},
      {"{{ tool|tojson(separators=(',', ':')) }}", nullptr},
      // tests
      {"{{ s is string }}{{ n is number }}{{ f is number }}{{ n is integer }}{{ xs is iterable }}{{ s is iterable }}"
       "{{ d is iterable }}{{ d is mapping }}{{ xs is sequence }}", nullptr},
      {"{{ nope is defined }}{{ nope is undefined }}{{ z is none }}{{ z is not none }}{{ b is boolean }}"
       "{{ b is true }}{{ b is false }}{{ n is odd }}{{ n is even }}{{ 'ab' is lower }}{{ 'AB' is upper }}", nullptr},
      // string and dict methods
      {"{{ s.upper() }}|{{ s.lower() }}|{{ '  x  '.strip() }}|{{ '  x  '.lstrip() }}|{{ '  x  '.rstrip() }}|"
       "{{ 'ab cd'.title() }}", nullptr},
      {"{{ s.startswith('He') }}{{ s.endswith('x') }}{{ s.startswith(('x', 'H')) }}{{ s.split() }}{{ s.split('o') }}"
       "{{ 'a,b,c'.split(',', 1) }}{{ '  a  b '.split() }}{{ s.replace('o', '0') }}{{ s.replace('o', '0', 1) }}",
       nullptr},
      {"{{ 'x</think>\n\ny'.split('</think>')[-1].lstrip() }}|{{ d.get('k1') }}|{{ d.get('q', 'dflt') }}|"
       "{{ d.get('q') }}", nullptr},
      // errors on both sides
      {"{{ raise_exception('custom failure') }}", nullptr},
      {"{{ nope() }}", nullptr},
      {"{{ s.nosuch() }}", nullptr},
      {"{{ z|trim }}", nullptr},
      {"{{ 1 + z }}", nullptr},
      {"{{ xs|nosuchfilter }}", nullptr},
      {"{% for x in z %}{% endfor %}", nullptr},
      {"{% set d.x = 1 %}", nullptr},
      {"{{ 'unterminated }}", nullptr},
      {"{% if b %}no end", nullptr},
};

TEST(ChatTemplateDifferential, FeaturesMatchHuggingFaceJinja) {
  if (!testing::have_node() ||
      !testing::file_exists(testing::node_dir() + "/node_modules/@huggingface/jinja/package.json")) {
    EDGE_SKIP_UNLESS_REQUIRED("\n\n*** CHAT TEMPLATE DIFFERENTIAL TEST SKIPPED: node or tests/node/node_modules is missing. "
                    "Run `cd tests/node && npm ci`. ***\n");
  }
  std::vector<std::string> sources;
  std::vector<testing::Case> cases;
  for (const auto& sn : kSnippets) {
    cases.push_back({sources.size(), sn.source, ojson::parse(sn.vars ? sn.vars : kVars)});
    sources.push_back(sn.source);
  }
  const auto ref = testing::run_reference_renders(sources, cases);
  ASSERT_EQ(ref.size(), cases.size()) << "reference output incomplete";
  int ref_errors = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    auto t = ChatTemplate::parse(sources[i]);
    Expected<std::string> got = t.ok() ? t->render_variables(cases[i].vars) : Expected<std::string>(t.status());
    if (!ref[i]["ok"].get<bool>()) {
      ++ref_errors;
      EXPECT_FALSE(got.ok()) << "reference failed (" << ref[i]["error"] << ") but we rendered [" << *got
                             << "] for: " << sources[i];
      continue;
    }
    EXPECT_TRUE(got.ok()) << sources[i] << "\n error: " << got.status().to_string();
    if (got.ok()) {
      EXPECT_EQ(*got, ref[i]["out"].get<std::string>()) << "template: " << sources[i];
    }
  }
  EXPECT_GE(ref_errors, 8);
}

}  // namespace
}  // namespace edge
