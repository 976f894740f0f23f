// The draft-model drafter (model_drafter.h).
#include "runtime/model_drafter.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "tokenizer/tokenizer.h"

namespace edge {

namespace {

using Clock = std::chrono::steady_clock;

int32_t argmax(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

}  // namespace

Status check_draft_model(const Model& target, const Model& draft) {
  if (draft.config().encoder_only)
    return Status::invalid_argument("the draft model is an encoder: it cannot decode drafts");
  const int64_t nt = target.config().n_vocab, nd = draft.config().n_vocab;
  const Tokenizer* tt = target.tokenizer();
  const Tokenizer* td = draft.tokenizer();
  if (!tt || !td) {
    if (nt != nd)
      return Status::invalid_argument(
          fmt::format("the draft model's vocabulary ({} tokens) is not the target's ({})", nd, nt));
    return Status();
  }
  const int32_t common = std::min(tt->n_vocab(), td->n_vocab());
  if (std::abs(tt->n_vocab() - td->n_vocab()) > 128 || std::abs(nt - nd) > 128)
    return Status::invalid_argument(
        fmt::format("the draft model's vocabulary ({} tokens) is not the target's ({})",
                    td->n_vocab(), tt->n_vocab()));
  for (int32_t id = 0; id < common; ++id)
    if (tt->token_text(id) != td->token_text(id))
      return Status::invalid_argument(
          fmt::format("the draft model's tokenizer differs from the target's at token {} "
                      "('{}' against '{}'): a draft model must share the tokenizer",
                      id, td->token_text(id), tt->token_text(id)));
  return Status();
}

namespace {

double weight_bytes(const Model& m) {
  const ModelMemory& mem = m.memory();
  return static_cast<double>(mem.weights_anon + mem.weights_mapped);
}

}  // namespace

ModelDrafter::ModelDrafter(const Model& draft, const Model& target, int64_t n_ctx, KvTypes kv_types)
    : model_(&draft),
      n_ctx_(n_ctx),
      kv_types_(kv_types),
      n_target_vocab_(target.config().n_vocab),
      weight_ratio_(weight_bytes(target) > 0 ? weight_bytes(draft) / weight_bytes(target) : 1.0) {}

double ModelDrafter::ms_per_token(double plain_step_ms) const {
  return costs_.measured(1) ? costs_.ms(1) : weight_ratio_ * plain_step_ms;
}

const float* ModelDrafter::catch_up(std::span<const int32_t> history) {
  const int64_t n = static_cast<int64_t>(history.size());
  if (n < 1 || n >= n_ctx_) return nullptr;
  if (!state_) {
    InferenceOptions o;
    o.kv_types = kv_types_;
    o.max_step = kMaxStep;
    auto st = InferenceState::create(*model_, n_ctx_, o);
    if (!st) return nullptr;
    state_ = std::make_unique<InferenceState>(std::move(*st));
  }
  // Keep the cache entries the history still agrees with, but always run the last token
  // again: its logits are the ones wanted.
  size_t keep = 0;
  while (keep < cached_.size() && cached_at_[keep] < n - 1 &&
         history[static_cast<size_t>(cached_at_[keep])] == cached_[keep])
    ++keep;
  if (!state_->truncate(static_cast<int64_t>(keep)).ok()) {  // a recurrent draft model
    state_->reset();
    keep = 0;
  }
  cached_.resize(keep);
  cached_at_.resize(keep);
  int64_t from = keep ? cached_at_.back() + 1 : 0;
  // After a stretch of plain decoding the draft model skips what it missed but the last
  // kGapTail tokens: catching up costs about a prompt of the draft model per stretch, which
  // would be a fixed share of the decode time however rarely speculation is probed. The
  // drafts then come from a context with a hole (attention is relative to position, and
  // verification keeps the output exact whatever the drafts are).
  if (keep > 0 && n - from > kGapTail) from = n - kGapTail;
  const std::span<const int32_t> rest = history.subspan(static_cast<size_t>(from));
  if (state_->n_past() + static_cast<int64_t>(rest.size()) >= state_->n_ctx()) return nullptr;
  for (int32_t id : rest)
    if (id < 0 || id >= model_->config().n_vocab) return nullptr;  // media positions
  auto out = state_->forward(rest);
  if (!out) {
    state_->reset();
    cached_.clear();
    cached_at_.clear();
    return nullptr;
  }
  for (int64_t at = from; at < n; ++at) {
    cached_.push_back(history[static_cast<size_t>(at)]);
    cached_at_.push_back(at);
  }
  return out->data();
}

std::vector<int32_t> ModelDrafter::draft(std::span<const int32_t> history, int32_t max_tokens) {
  std::vector<int32_t> out;
  if (max_tokens < 1) return out;
  const auto t0 = Clock::now();
  const int64_t behind =
      static_cast<int64_t>(history.size()) - (cached_at_.empty() ? 0 : cached_at_.back() + 1);
  const int64_t n_vocab = model_->config().n_vocab;
  const float* logits = catch_up(history);
  if (!logits) return out;
  for (;;) {
    const int32_t id = argmax(logits, n_vocab);
    if (id >= n_target_vocab_) break;  // a padding row of the draft's vocabulary
    out.push_back(id);
    if (static_cast<int32_t>(out.size()) == max_tokens || state_->n_past() + 1 >= state_->n_ctx())
      break;
    auto next = state_->forward(std::span<const int32_t>(&out.back(), 1));
    if (!next) break;
    cached_.push_back(out.back());
    cached_at_.push_back(static_cast<int64_t>(history.size() + out.size()) - 1);
    logits = next->data();
  }
  // The cost of one drafted token, from calls that caught up by about a verify step's worth
  // (after a long plain stretch the catch-up is a prompt, not a draft's cost).
  if (behind <= int64_t{max_tokens} + 2 && !out.empty())
    costs_.record(1, std::chrono::duration<double, std::milli>(Clock::now() - t0).count() /
                         static_cast<double>(out.size()));
  return out;
}

}  // namespace edge
