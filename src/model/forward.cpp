#include "model/forward.h"

#include <fmt/format.h>

#include <cmath>
#include <new>

namespace edge {

Expected<InferenceState> InferenceState::create(const Model& model, int64_t n_ctx) {
  if (n_ctx <= 0) return Status::invalid_argument(fmt::format("context size {} must be positive", n_ctx));
  const ModelConfig& c = model.config();
  const uint64_t per_pos = 2ull * static_cast<uint64_t>(c.n_layer) * static_cast<uint64_t>(c.kv_dim()) * sizeof(float);
  if (static_cast<uint64_t>(n_ctx) > (uint64_t{1} << 46) / per_pos)
    return Status::resource_exhausted(fmt::format("KV cache for context {} would need {} bytes per position",
                                                  n_ctx, per_pos));
  try {
    return InferenceState(model, n_ctx);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted(fmt::format("KV cache for context {}: cannot allocate {} bytes",
                                                  n_ctx, per_pos * static_cast<uint64_t>(n_ctx)));
  }
}

InferenceState::InferenceState(const Model& model, int64_t n_ctx)
    : model_(&model), n_ctx_(n_ctx), kv_dim_(model.config().kv_dim()) {
  const size_t cache = static_cast<size_t>(model.config().n_layer * n_ctx * kv_dim_);
  k_cache_.assign(cache, 0.0f);
  v_cache_.assign(cache, 0.0f);
}

void InferenceState::truncate(int64_t n) {
  if (n >= 0 && n < n_past_) n_past_ = n;
}

void InferenceState::resize_scratch(int64_t n) {
  const ModelConfig& c = model_->config();
  auto fit = [](std::vector<float>& v, int64_t size) {
    if (static_cast<int64_t>(v.size()) < size) v.resize(static_cast<size_t>(size));
  };
  fit(x_, n * c.n_embd);
  fit(xn_, n * c.n_embd);
  fit(q_, n * c.q_dim());
  fit(att_, n * c.q_dim());
  fit(gate_, n * c.n_ff);
  fit(up_, n * c.n_ff);
}

Expected<std::span<const float>> InferenceState::forward(std::span<const int32_t> tokens,
                                                         bool all_logits) {
  const ModelConfig& c = model_->config();
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return Status::invalid_argument("forward: no tokens");
  for (int32_t t : tokens)
    if (t < 0 || t >= c.n_vocab)
      return Status::out_of_range(
          fmt::format("token id {} is out of range (vocabulary size {})", t, c.n_vocab));
  if (n_past_ + n > n_ctx_)
    return Status::out_of_range(fmt::format("{} tokens after {} cached exceed the context of {} ({} > {})",
                                            n, n_past_, n_ctx_, n_past_ + n, n_ctx_));
  try {
    resize_scratch(n);
    logits_.resize(static_cast<size_t>((all_logits ? n : 1) * c.n_vocab));
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted(fmt::format("forward: cannot allocate scratch for {} tokens", n));
  }
  embed(tokens);
  for (int l = 0; l < c.n_layer; ++l) {
    attention_block(l, n);
    ffn_block(l, n);
  }
  compute_logits(n, all_logits);
  n_past_ += n;
  return std::span<const float>(logits_.data(), logits_.size());
}

void InferenceState::embed(std::span<const int32_t> tokens) {
  const ModelConfig& c = model_->config();
  const KernelTable& k = model_->kernels();
  const float scale = c.scale_embeddings ? std::sqrt(static_cast<float>(c.n_embd)) : 1.0f;
  for (size_t i = 0; i < tokens.size(); ++i) {
    float* row = x_.data() + i * c.n_embd;
    embedding_row(k, model_->weights().token_embd, tokens[i], row);
    if (c.scale_embeddings)
      for (int32_t d = 0; d < c.n_embd; ++d) row[d] *= scale;
  }
}

// x += [post_norm](Wo . attention(rope(norm(q)), rope(norm(k)), v)), with q/k/v from norm(x).
void InferenceState::attention_block(int l, int64_t n) {
  const ModelConfig& c = model_->config();
  const LayerConfig& lc = c.layers[l];
  const LayerWeights& w = model_->weights().layers[l];
  const KernelTable& k = model_->kernels();
  ThreadPool& pool = model_->pool();
  const int64_t d = c.n_embd, qd = c.q_dim();
  k.rmsnorm(x_.data(), w.attn_norm.data(), xn_.data(), n, d, c.norm_eps);
  float* kc = k_rows(l, n_past_);  // [n, kv_dim]: this batch's rows of the cache
  float* vc = v_rows(l, n_past_);
  matmul(k, xn_.data(), n, w.wq, q_.data(), pool);
  matmul(k, xn_.data(), n, w.wk, kc, pool);
  matmul(k, xn_.data(), n, w.wv, vc, pool);
  if (c.qkv_bias)
    for (int64_t t = 0; t < n; ++t) {
      k.add(q_.data() + t * qd, w.bq.data(), qd);
      k.add(kc + t * kv_dim_, w.bk.data(), kv_dim_);
      k.add(vc + t * kv_dim_, w.bv.data(), kv_dim_);
    }
  if (c.qk_norm) {  // per head: [n*n_head, head_dim] and [n*n_head_kv, head_dim]
    k.rmsnorm(q_.data(), w.q_norm.data(), q_.data(), n * c.n_head, c.head_dim, c.norm_eps);
    k.rmsnorm(kc, w.k_norm.data(), kc, n * c.n_head_kv, c.head_dim, c.norm_eps);
  }
  if (lc.rotary_dim > 0) {
    RopeParams rp{c.rope_style, c.head_dim, lc.rotary_dim, lc.rope_theta, 1.0f / lc.rope_scale,
                  lc.sliding || c.rope_freq_factors.empty() ? nullptr : c.rope_freq_factors.data()};
    for (int64_t t = 0; t < n; ++t) {
      k.rope(q_.data() + t * qd, c.n_head, n_past_ + t, rp);
      k.rope(kc + t * kv_dim_, c.n_head_kv, n_past_ + t, rp);
    }
  }
  AttentionArgs a;
  a.q = q_.data();
  a.k = k_rows(l, 0);
  a.v = v_rows(l, 0);
  a.out = att_.data();
  a.n_q = n;
  a.pos0 = n_past_;
  a.n_head = c.n_head;
  a.n_head_kv = c.n_head_kv;
  a.head_dim = c.head_dim;
  a.window = lc.sliding ? lc.window : 0;
  a.scale = c.effective_attn_scale();
  attention(k, a, pool);
  matmul(k, att_.data(), n, w.wo, xn_.data(), pool);  // [n, n_embd]
  if (c.post_norms) k.rmsnorm(xn_.data(), w.post_attn_norm.data(), xn_.data(), n, d, c.norm_eps);
  k.add(x_.data(), xn_.data(), n * d);
}

// x += [post_norm](W_down . (act(W_gate . norm(x)) * (W_up . norm(x)))).
void InferenceState::ffn_block(int l, int64_t n) {
  const ModelConfig& c = model_->config();
  const LayerWeights& w = model_->weights().layers[l];
  const KernelTable& k = model_->kernels();
  ThreadPool& pool = model_->pool();
  const int64_t d = c.n_embd, ff = c.n_ff;
  k.rmsnorm(x_.data(), w.ffn_norm.data(), xn_.data(), n, d, c.norm_eps);
  matmul(k, xn_.data(), n, w.w_gate, gate_.data(), pool);
  matmul(k, xn_.data(), n, w.w_up, up_.data(), pool);
  if (c.act == Activation::kGeGlu)
    k.gelu(gate_.data(), n * ff);
  else
    k.silu(gate_.data(), n * ff);
  k.mul(gate_.data(), up_.data(), n * ff);
  matmul(k, gate_.data(), n, w.w_down, xn_.data(), pool);
  if (c.post_norms) k.rmsnorm(xn_.data(), w.post_ffn_norm.data(), xn_.data(), n, d, c.norm_eps);
  k.add(x_.data(), xn_.data(), n * d);
}

void InferenceState::compute_logits(int64_t n, bool all_logits) {
  const ModelConfig& c = model_->config();
  const KernelTable& k = model_->kernels();
  const int64_t rows = all_logits ? n : 1;
  const float* src = x_.data() + (n - rows) * c.n_embd;
  k.rmsnorm(src, model_->weights().output_norm.data(), xn_.data(), rows, c.n_embd, c.norm_eps);
  matmul(k, xn_.data(), rows, model_->weights().output, logits_.data(), model_->pool());
}

}  // namespace edge
