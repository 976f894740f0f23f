#include "tokenizer/harmony.h"

#include <algorithm>
#include <iterator>

namespace edge {
namespace {

const char* const kStructural[] = {harmony::kStart, harmony::kChannel, harmony::kConstrain,
                                   harmony::kMessage, harmony::kEnd};
const char* const kEnders[] = {harmony::kReturn, harmony::kCall};
const char* const kAppended[] = {"<|startoftext|>",   "<|endoftext|>",   harmony::kReturn,
                                 harmony::kConstrain, harmony::kChannel, harmony::kStart,
                                 harmony::kEnd,       harmony::kMessage, harmony::kCall};

bool is_special(const Vocab& v, int32_t id) {
  if (id < 0 || id >= static_cast<int32_t>(v.types.size())) return false;
  return v.types[id] == TokenType::kControl || v.types[id] == TokenType::kUserDefined;
}

}  // namespace

bool is_harmony_vocab(const Vocab& v) {
  for (const char* t : kStructural)
    if (!is_special(v, v.find(t))) return false;
  for (const char* t : kEnders)
    if (!is_special(v, v.find(t))) return false;
  return true;
}

void apply_harmony_rules(Vocab& v) {
  if (!is_harmony_vocab(v)) return;
  for (const char* t : kStructural) v.types[v.find(t)] = TokenType::kUserDefined;
  const int32_t end = v.find(harmony::kEnd);
  v.eog_ids.erase(std::remove(v.eog_ids.begin(), v.eog_ids.end(), end), v.eog_ids.end());
  for (const char* t : kEnders) {
    const int32_t id = v.find(t);
    if (std::find(v.eog_ids.begin(), v.eog_ids.end(), id) == v.eog_ids.end())
      v.eog_ids.push_back(id);
  }
}

int32_t harmony_token_count() {
  return static_cast<int32_t>(std::size(kAppended));
}

int32_t append_harmony_tokens(Vocab& v) {
  for (const char* t : kAppended) {
    v.tokens.emplace_back(t);
    if (!v.scores.empty()) v.scores.push_back(0.f);
    v.types.push_back(TokenType::kControl);
  }
  v.build_index();
  return harmony_token_count();
}

// Written for this project from the format's description (see harmony.h); it uses the
// same Jinja constructs as the template GPT-OSS ships (recursive macros with defaults,
// namespace(), slicing, `in` on mappings and strings, tests, tojson, strftime_now,
// raise_exception), so tests/tokenizer/harmony_test.cpp checks our engine on them.
const char kTemplate[] = R"JINJA({#- Harmony chat template (edge-infer). -#}
{%- macro ts_type(spec) -%}
  {%- if spec.type is defined and spec.type is iterable and spec.type is not string and spec.type is not mapping -%}
    {{- spec.type | join(" | ") -}}
  {%- elif spec.type == "array" -%}
    {%- if spec['items'] is defined -%}{{- ts_type(spec['items']) + "[]" -}}{%- else -%}{{- "any[]" -}}{%- endif -%}
  {%- elif spec.type == "string" and spec.enum -%}
    {{- '"' + spec.enum | join('" | "') + '"' -}}
  {%- elif spec.type in ["number", "integer"] -%}
    {{- "number" -}}
  {%- elif spec.type in ["string", "boolean"] -%}
    {{- spec.type -}}
  {%- elif spec.type == "object" and spec.properties -%}
    {{- "{ " -}}
    {%- for name, sub in spec.properties.items() -%}
      {{- name + ("" if name in (spec.required or []) else "?") + ": " + ts_type(sub) -}}
      {%- if not loop.last -%}{{- ", " -}}{%- endif -%}
    {%- endfor -%}
    {{- " }" -}}
  {%- else -%}
    {{- "any" -}}
  {%- endif -%}
  {%- if spec.nullable -%}{{- " | null" -}}{%- endif -%}
{%- endmacro -%}
{%- macro tool_namespace(ns, tools, header="## ") -%}
  {{- header + ns + "\n\nnamespace " + ns + " {\n\n" -}}
  {%- for t in tools -%}
    {%- set f = t.function if t.function is defined else t -%}
    {%- if f.description -%}{{- "// " + f.description + "\n" -}}{%- endif -%}
    {%- set params = f.parameters or {} -%}
    {%- if params.properties -%}
      {{- "type " + f.name + " = (_: {\n" -}}
      {%- for name, spec in params.properties.items() -%}
        {%- if spec.description -%}{{- "// " + spec.description + "\n" -}}{%- endif -%}
        {{- name + ("" if name in (params.required or []) else "?") + ": " + ts_type(spec) -}}
        {%- if spec.default is defined -%}{{- ", // default: " + spec.default | tojson -}}{%- endif -%}
        {{- ",\n" -}}
      {%- endfor -%}
      {{- "}) => any;\n\n" -}}
    {%- else -%}
      {{- "type " + f.name + " = () => any;\n\n" -}}
    {%- endif -%}
  {%- endfor -%}
  {{- "} // namespace " + ns -}}
{%- endmacro -%}
{{- "<|start|>system<|message|>" -}}
{{- (model_identity if model_identity is defined else "You are a helpful assistant.") + "\n" -}}
{{- "Current date: " + strftime_now("%Y-%m-%d") + "\n\n" -}}
{{- "Reasoning: " + (reasoning_effort if reasoning_effort is defined and reasoning_effort else "medium") + "\n\n" -}}
{{- "# Valid channels: analysis, commentary, final. Channel must be included for every message." -}}
{%- if tools -%}{{- "\nCalls to these tools must go to the commentary channel: 'functions'." -}}{%- endif -%}
{{- "<|end|>" -}}
{%- if messages and messages[0].role in ["system", "developer"] -%}
  {%- set instructions = messages[0].content -%}
  {%- set rest = messages[1:] -%}
{%- else -%}
  {%- set instructions = "" -%}
  {%- set rest = messages -%}
{%- endif -%}
{%- if instructions or tools -%}
  {{- "<|start|>developer<|message|>" -}}
  {%- if instructions -%}{{- "# Instructions\n\n" + instructions + "\n\n" -}}{%- endif -%}
  {%- if tools -%}{{- "# Tools\n\n" + tool_namespace("functions", tools) -}}{%- endif -%}
  {{- "<|end|>" -}}
{%- endif -%}
{%- set state = namespace(last_call=none) -%}
{%- for m in rest -%}
  {%- if m.role == "assistant" -%}
    {%- for field in ["content", "thinking"] -%}
      {%- if field in m and m[field] is string and "<|channel|>" in m[field] -%}
        {{- raise_exception("assistant " + field + " must not contain <|channel|>: pass reasoning as 'thinking'") -}}
      {%- endif -%}
    {%- endfor -%}
    {%- if "tool_calls" in m and m.tool_calls -%}
      {%- set later = namespace(final=false) -%}
      {%- for f in rest[loop.index:] -%}
        {%- if f.role == "assistant" and not f.tool_calls -%}{%- set later.final = true -%}{%- endif -%}
      {%- endfor -%}
      {%- set analysis = m.thinking if m.thinking is defined and m.thinking else m.content -%}
      {%- if analysis and not later.final -%}
        {{- "<|start|>assistant<|channel|>analysis<|message|>" + analysis + "<|end|>" -}}
      {%- endif -%}
      {%- set call = m.tool_calls[0].function if m.tool_calls[0].function is defined else m.tool_calls[0] -%}
      {%- set args = call.arguments if call.arguments is string else call.arguments | tojson -%}
      {{- "<|start|>assistant<|channel|>commentary to=functions." + call.name + " <|constrain|>json<|message|>" + args + "<|call|>" -}}
      {%- set state.last_call = call.name -%}
    {%- else -%}
      {%- if loop.last and not add_generation_prompt and m.thinking is defined and m.thinking -%}
        {{- "<|start|>assistant<|channel|>analysis<|message|>" + m.thinking + "<|end|>" -}}
      {%- endif -%}
      {{- "<|start|>assistant<|channel|>final<|message|>" + m.content -}}
      {{- "<|return|>" if loop.last and not add_generation_prompt else "<|end|>" -}}
      {%- set state.last_call = none -%}
    {%- endif -%}
  {%- elif m.role == "tool" -%}
    {%- if state.last_call is none -%}
      {{- raise_exception("a tool message must follow an assistant tool call") -}}
    {%- endif -%}
    {%- set result = m.content if m.content is string else m.content | tojson -%}
    {{- "<|start|>functions." + state.last_call + " to=assistant<|channel|>commentary<|message|>" + result + "<|end|>" -}}
  {%- elif m.role == "user" -%}
    {{- "<|start|>user<|message|>" + m.content + "<|end|>" -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<|start|>assistant" -}}{%- endif -%}
)JINJA";

const char* harmony_chat_template() {
  return kTemplate;
}

}  // namespace edge
