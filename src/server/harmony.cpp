#include "server/harmony.h"

#include "server/json_depth.h"
#include "server/tag_scan.h"
#include "tokenizer/harmony.h"

namespace edge::server {
namespace {

// A header is a role, a channel and a few words; anything longer, or spanning lines, is
// not one: the model is not speaking harmony and its text is passed on as content.
constexpr size_t kMaxHeader = 256;

// The tags that end a message body. <|start|> without an end before it still opens the
// next message (the model skipped <|end|>).
constexpr std::string_view kBodyEnds[] = {harmony::kEnd, harmony::kReturn, harmony::kCall,
                                          harmony::kStart};

bool is_word_end(char c) {
  return is_space(c) || c == '<';
}

}  // namespace

HarmonyHeader parse_harmony_header(std::string_view h) {
  HarmonyHeader out;
  const std::string_view channel_tag = harmony::kChannel, constrain_tag = harmony::kConstrain;
  const std::string_view start_tag = harmony::kStart;
  std::string* next = &out.role;  // where the next plain word goes
  size_t i = 0;
  while (i < h.size()) {
    if (is_space(h[i])) {
      ++i;
      continue;
    }
    if (h.substr(i, start_tag.size()) == start_tag) {
      i += start_tag.size();
      continue;
    }
    if (h.substr(i, channel_tag.size()) == channel_tag) {
      i += channel_tag.size();
      next = &out.channel;
      continue;
    }
    if (h.substr(i, constrain_tag.size()) == constrain_tag) {
      i += constrain_tag.size();
      next = &out.constrain;
      continue;
    }
    size_t e = i + 1;
    while (e < h.size() && !is_word_end(h[e])) ++e;
    const std::string_view word = h.substr(i, e - i);
    i = e;
    if (word.substr(0, 3) == "to=") {
      out.recipient = std::string(word.substr(3));
      continue;
    }
    if (next != nullptr && next->empty()) *next = std::string(word);
    // A plain word after the channel is the content type ("commentary json").
    next = next == &out.channel ? &out.constrain : nullptr;
  }
  return out;
}

HarmonyParser::HarmonyParser(bool with_tools) : with_tools_(with_tools) {}

void HarmonyParser::open_message(std::string_view header) {
  const HarmonyHeader h = parse_harmony_header(header);
  recipient_.clear();
  body_.clear();
  if (!h.recipient.empty() && with_tools_) {
    const std::string_view prefix = "functions.";
    std::string_view name = h.recipient;
    if (name.substr(0, prefix.size()) == prefix) name.remove_prefix(prefix.size());
    recipient_ = std::string(name);
    route_ = Route::kCall;
  } else {
    route_ = h.channel == "analysis" ? Route::kReasoning : Route::kContent;
  }
}

void HarmonyParser::emit_body(std::string_view text, HarmonyDelta& out) {
  switch (route_) {
    case Route::kReasoning:
      out.reasoning.append(text);
      break;
    case Route::kContent:
      out.content.append(text);
      break;
    case Route::kCall:
      body_.append(text);
      break;
  }
}

void HarmonyParser::end_message(HarmonyDelta& out) {
  if (route_ == Route::kCall) {
    const std::string_view args = trim(body_);
    nlohmann::json j = json_nesting_exceeds(args)
                           ? nlohmann::json()
                           : nlohmann::json::parse(args, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && !recipient_.empty()) {
      out.calls.push_back({recipient_, j.dump()});
    } else {
      out.content.append(body_);  // not a call after all: its text is not lost
    }
  }
  body_.clear();
  recipient_.clear();
  route_ = Route::kContent;
  state_ = State::kHeader;
}

bool HarmonyParser::step_header(HarmonyDelta& out) {
  const size_t p = pending_.find(harmony::kMessage);
  const std::string_view header = std::string_view(pending_).substr(0, p);
  if (header.size() > kMaxHeader || header.find('\n') != std::string_view::npos) {
    state_ = State::kPlain;
    return true;
  }
  if (p == std::string::npos) return false;
  open_message(header);
  pending_.erase(0, p + std::string_view(harmony::kMessage).size());
  state_ = State::kBody;
  return true;
}

bool HarmonyParser::step_body(HarmonyDelta& out) {
  size_t best = std::string::npos;
  std::string_view tag;
  for (std::string_view t : kBodyEnds) {
    const size_t p = pending_.find(t);
    if (p < best) best = p, tag = t;
  }
  if (best == std::string::npos) {
    size_t hold = 0;
    for (std::string_view t : kBodyEnds) hold = std::max(hold, partial_tag_suffix(pending_, t));
    emit_body(std::string_view(pending_).substr(0, pending_.size() - hold), out);
    pending_.erase(0, pending_.size() - hold);
    return false;
  }
  emit_body(std::string_view(pending_).substr(0, best), out);
  // <|start|> stays: it begins the next header.
  pending_.erase(0, best + (tag == harmony::kStart ? 0 : tag.size()));
  end_message(out);
  return true;
}

bool HarmonyParser::step(HarmonyDelta& out) {
  switch (state_) {
    case State::kHeader:
      return step_header(out);
    case State::kBody:
      return step_body(out);
    case State::kPlain:
      out.content.append(pending_);
      pending_.clear();
      return false;
  }
  return false;
}

HarmonyDelta HarmonyParser::push(std::string_view text) {
  pending_.append(text);
  HarmonyDelta out;
  while (!pending_.empty() && step(out)) {
  }
  return out;
}

HarmonyDelta HarmonyParser::finish() {
  HarmonyDelta out;
  while (!pending_.empty() && step(out)) {
  }
  if (state_ == State::kBody) {
    emit_body(pending_, out);  // a held-back tail that never became a tag is text
    end_message(out);
  } else if (state_ == State::kHeader && pending_.find("<|") == std::string::npos) {
    out.content.append(pending_);  // plain text that never became a header
  }
  pending_.clear();
  return out;
}

}  // namespace edge::server
