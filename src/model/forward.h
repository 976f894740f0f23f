// One sequence's inference state: an F32 KV cache sized to the context asked for (never
// the model's advertised context) and the scratch the forward pass needs. forward() takes a
// batch of prompt tokens (batched matmuls, causal + sliding-window attention, GQA) or a
// single decode token, continuing from the positions already cached.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/model.h"

namespace edge {

class InferenceState {
 public:
  // n_ctx: positions this sequence may hold (prompt + generated), > 0.
  static Expected<InferenceState> create(const Model& model, int64_t n_ctx);

  // Runs tokens at positions n_past() .. n_past()+n-1 and appends them to the cache.
  // Returns logits [n, n_vocab] (all_logits) or [1, n_vocab] for the last token; the span
  // is valid until the next call. Errors: empty batch, a token id outside the vocabulary,
  // or more positions than n_ctx (the cache is left unchanged on error).
  Expected<std::span<const float>> forward(std::span<const int32_t> tokens, bool all_logits = false);

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return n_ctx_; }
  // Bytes held by the KV cache: 2 * n_layer * n_ctx * kv_dim * 4.
  size_t kv_cache_bytes() const { return (k_cache_.size() + v_cache_.size()) * sizeof(float); }
  // Forget positions >= n (n <= n_past): the next forward continues from position n.
  void truncate(int64_t n);
  void reset() { n_past_ = 0; }

 private:
  explicit InferenceState(const Model& model, int64_t n_ctx);
  void resize_scratch(int64_t n);
  void embed(std::span<const int32_t> tokens);
  void attention_block(int layer, int64_t n);
  void ffn_block(int layer, int64_t n);
  void compute_logits(int64_t n, bool all_logits);
  float* k_rows(int layer, int64_t pos) { return k_cache_.data() + (layer * n_ctx_ + pos) * kv_dim_; }
  float* v_rows(int layer, int64_t pos) { return v_cache_.data() + (layer * n_ctx_ + pos) * kv_dim_; }

  const Model* model_;
  int64_t n_ctx_ = 0;
  int64_t n_past_ = 0;
  int64_t kv_dim_ = 0;
  std::vector<float> k_cache_;  // [n_layer, n_ctx, n_head_kv*head_dim]
  std::vector<float> v_cache_;  // [n_layer, n_ctx, n_head_kv*head_dim]
  // Scratch for a batch of n tokens.
  std::vector<float> x_;        // [n, n_embd] residual stream
  std::vector<float> xn_;       // [n, n_embd] normed input / block output
  std::vector<float> q_;        // [n, n_head*head_dim]
  std::vector<float> att_;      // [n, n_head*head_dim]
  std::vector<float> gate_;     // [n, n_ff]
  std::vector<float> up_;       // [n, n_ff]
  std::vector<float> logits_;   // [n or 1, n_vocab]
};

}  // namespace edge
