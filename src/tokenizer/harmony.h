// OpenAI's "harmony" chat format (GPT-OSS), as far as the tokenizer is concerned.
// A conversation is a list of messages
//   <|start|>{role}[ to={recipient}]<|channel|>{channel}[
//   <|constrain|>{type}]<|message|>{text}{end}
// where {end} is <|end|> (more messages follow), <|return|> (the answer is complete) or
// <|call|> (a tool call: the recipient is "functions.NAME" and the text its JSON
// arguments). A model speaks harmony when its vocabulary has these special tokens; the
// server (server/harmony.h) maps the channels of its output to the API.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/vocab.h"

namespace edge {

// The special tokens of the format, as they appear in text.
namespace harmony {
inline constexpr const char* kStart = "<|start|>";
inline constexpr const char* kMessage = "<|message|>";
inline constexpr const char* kChannel = "<|channel|>";
inline constexpr const char* kConstrain = "<|constrain|>";
inline constexpr const char* kEnd = "<|end|>";
inline constexpr const char* kReturn = "<|return|>";
inline constexpr const char* kCall = "<|call|>";
}  // namespace harmony

// True if the vocabulary has every harmony token above as a control or user-defined
// token. This is decided from the model's data, not from its architecture name: any
// model trained on the format (whatever its family) carries these tokens, and a model
// without them cannot produce the format's structure at all.
bool is_harmony_vocab(const Vocab& v);

// For a harmony vocabulary: <|return|> and <|call|> end generation and <|end|> does not
// (a reply is several messages, each closed by <|end|>); the structural tokens
// (<|start|>, <|channel|>, <|constrain|>, <|message|>, <|end|>) become user-defined, so
// decoded output keeps them as text for the server's parser. No-op on other vocabularies.
void apply_harmony_rules(Vocab& v);

// The special tokens of the o200k_harmony vocabulary in their id order (control tokens):
// <|startoftext|>, <|endoftext|>, <|return|>, <|constrain|>, <|channel|>, <|start|>,
// <|end|>, <|message|>, <|call|>. For made-up models; returns how many were appended.
int32_t append_harmony_tokens(Vocab& v);
int32_t harmony_token_count();

// A harmony chat template in the Jinja subset of tokenizer/chat_template.h: system message
// (identity, date, reasoning effort, channels), developer message (instructions, the tools
// as a TypeScript namespace), the conversation (assistant analysis kept only before a tool
// call, tool calls with <|call|>, tool results from "functions.NAME"), then
// "<|start|>assistant". Variables beyond messages/tools: reasoning_effort (default
// "medium"), model_identity, and the date through strftime_now.
const char* harmony_chat_template();

}  // namespace edge
