#include "tokenizer/outetts_tokens.h"

#include <fmt/format.h>

namespace edge {

namespace {

const char* const kMarkers[] = {"<|text_start|>",  "<|text_end|>",   "<|audio_start|>",
                                "<|audio_end|>",   "<|code_start|>", "<|code_end|>",
                                "<|text_sep|>"};
const char* const kChat[] = {"<|im_start|>", "<|im_end|>", "<|space|>"};

void add(Vocab& v, std::string text) {
  v.tokens.push_back(std::move(text));
  v.scores.push_back(0.f);
  v.types.push_back(TokenType::kControl);
}

}  // namespace

int32_t outetts_token_count() {
  return static_cast<int32_t>(std::size(kMarkers) + std::size(kChat)) + kOuteTtsCodes + kOuteTtsDurations;
}

void append_outetts_tokens(Vocab& v) {
  for (const char* m : kMarkers) add(v, m);
  for (int32_t c = 0; c < kOuteTtsCodes; ++c) add(v, fmt::format("<|{}|>", c));
  for (int32_t t = 0; t < kOuteTtsDurations; ++t) add(v, fmt::format("<|t_{}.{:02d}|>", t / 100, t % 100));
  for (const char* m : kChat) add(v, m);
  v.build_index();
}

}  // namespace edge
