#include "runtime/media_splice.h"

#include <fmt/format.h>

#include <algorithm>

namespace edge {

Status validate_media(const GenerateRequest& req, int32_t n_embd, int64_t max_step_tokens) {
  const int64_t n = static_cast<int64_t>(req.prompt.size());
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (size_t i = 0; i < req.media.size(); ++i) {
    const MediaEmbedding& m = req.media[i];
    if (m.n_tokens <= 0 || m.position < 0 || m.position + m.n_tokens > n)
      return Status::invalid_argument(
          fmt::format("media {}: positions [{}, {}) are not inside the prompt of {} tokens", i,
                      m.position, m.position + m.n_tokens, n));
    if (!m.rows || static_cast<int64_t>(m.rows->size()) != m.n_tokens * n_embd)
      return Status::invalid_argument(
          fmt::format("media {}: {} values, expected {} tokens x {} = {}", i,
                      m.rows ? m.rows->size() : 0, m.n_tokens, n_embd, m.n_tokens * n_embd));
    if (m.bidirectional && m.n_tokens > max_step_tokens)
      return Status::invalid_argument(
          fmt::format("media {}: {} tokens attend to each other and must run in one step, but a "
                      "step holds {} tokens "
                      "(raise max_batched_tokens)",
                      i, m.n_tokens, max_step_tokens));
    spans.emplace_back(m.position, m.position + m.n_tokens);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second)
      return Status::invalid_argument(fmt::format("media spans [{}, {}) and [{}, {}) overlap",
                                                  spans[i - 1].first, spans[i - 1].second,
                                                  spans[i].first, spans[i].second));
  return Status::ok_status();
}

int32_t media_key_token(uint64_t media_hash, int64_t i) {
  // splitmix64 finaliser over (hash, index): every position of the span gets other bits.
  uint64_t z = media_hash + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<int32_t>(static_cast<uint32_t>(z) | 0x80000000u);
}

void splice_media(const std::vector<MediaEmbedding>& media, SchedSeq* seq) {
  seq->splices.clear();
  for (const MediaEmbedding& m : media) {
    for (int64_t i = 0; i < m.n_tokens; ++i)
      seq->tokens[static_cast<size_t>(m.position + i)] = media_key_token(m.hash, i);
    seq->splices.push_back({m.position, m.n_tokens, m.rows->data(), m.bidirectional});
  }
}

}  // namespace edge
