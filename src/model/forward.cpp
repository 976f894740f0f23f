#include "model/forward.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <new>

#include "core/check.h"

namespace edge {

namespace {

// Tokens from which a step's elementwise work (norms, RoPE, KV writes, activation,
// residual) is split over the pool: below it (decode, small batches) a fork/join costs
// more than the rows; at prefill sizes these ops would otherwise leave the other cores
// idle for ~8% of the step on 2 cores, and for a larger share on more cores.
constexpr int64_t kParallelRowsFrom = 16;

template <typename V>
void fit(V& v, int64_t size) {
  if (static_cast<int64_t>(v.size()) < size) v.resize(static_cast<size_t>(size));
}

int64_t logit_rows(std::span<const SeqStep> seqs) {
  int64_t rows = 0;
  for (const SeqStep& s : seqs)
    rows += s.logits == SeqStep::Logits::kAll    ? s.n_tokens
            : s.logits == SeqStep::Logits::kLast ? 1
                                                 : 0;
  return rows;
}

// Whether position p of a sequence takes a spliced row.
bool spliced(std::span<const EmbeddingSplice> splices, int64_t p) {
  for (const EmbeddingSplice& e : splices)
    if (p >= e.pos && p < e.pos + e.n) return true;
  return false;
}

}  // namespace

int64_t splice_chunk_tokens(std::span<const EmbeddingSplice> splices, int64_t pos0, int64_t want) {
  int64_t end = pos0 + want;
  for (const EmbeddingSplice& e : splices) {
    if (!e.bidirectional || end <= e.pos || end >= e.pos + e.n) continue;
    end = e.pos > pos0 ? e.pos : e.pos + e.n;  // cut before it, or take all of it
  }
  return end - pos0;
}

ForwardPass::ForwardPass(const Model& model, int64_t max_tokens, ThreadPool* pool)
    : model_(&model), pool_(pool), max_tokens_(max_tokens) {
  const ModelConfig& c = model.config();
  pos_.resize(static_cast<size_t>(max_tokens));
  seq_of_.resize(static_cast<size_t>(max_tokens));
  fit(x_, max_tokens * c.n_embd);
  fit(xn_, max_tokens * c.n_embd);
  fit(q_, max_tokens * c.q_dim());
  fit(k_, max_tokens * c.kv_dim());
  fit(v_, max_tokens * c.kv_dim());
  fit(att_, max_tokens * c.q_dim());
  if (c.n_moe_layers() < c.n_layer) {  // dense FFN layers
    fit(gate_, max_tokens * c.n_ff);
    fit(up_, max_tokens * c.n_ff);
  }
  if (c.moe.enabled()) moe_ = MoeFfn(c, max_tokens);
  if (c.moe.enabled() || c.n_recurrent_layers() > 0) fit(block_out_, max_tokens * c.n_embd);
  if (c.attn_output_gate) {
    fit(qg_, max_tokens * 2 * c.q_dim());
    fit(attn_gate_, max_tokens * c.q_dim());
  }
  delta_ = DeltaNetMixer(c, max_tokens);
  ropes_ = distinct_ropes(c, &rope_of_layer_);
  rope_stride_ = max_rotary_dim(ropes_);
  fit(rope_cs_, static_cast<int64_t>(ropes_.size()) * max_tokens * rope_stride_);
}

std::vector<RopeParams> ForwardPass::distinct_ropes(const ModelConfig& c,
                                                    std::vector<int>* of_layer) {
  std::vector<RopeParams> ropes;
  of_layer->clear();
  for (const LayerConfig& lc : c.layers) {
    const RopeParams rp{c.rope_style,
                        c.head_dim,
                        lc.rotary_dim,
                        lc.rope_theta,
                        1.0f / lc.rope_scale,
                        (lc.sliding && !c.sliding_rope_scaled) || c.rope_freq_factors.empty()
                            ? nullptr
                            : c.rope_freq_factors.data(),
                        lc.sliding && !c.sliding_rope_scaled ? 1.0f : c.rope_mscale};
    int idx = -1;
    for (size_t i = 0; i < ropes.size() && rp.rotary_dim > 0 && idx < 0; ++i) {
      const RopeParams& o = ropes[i];
      if (o.rotary_dim == rp.rotary_dim && o.theta == rp.theta && o.pos_scale == rp.pos_scale &&
          o.freq_factors == rp.freq_factors && o.mscale == rp.mscale)
        idx = static_cast<int>(i);
    }
    if (idx < 0 && rp.rotary_dim > 0) {
      idx = static_cast<int>(ropes.size());
      ropes.push_back(rp);
    }
    of_layer->push_back(idx);
  }
  return ropes;
}

int64_t ForwardPass::rope_table_bytes(const ModelConfig& c, int64_t max_tokens) {
  std::vector<int> of_layer;
  const std::vector<RopeParams> ropes = distinct_ropes(c, &of_layer);
  return static_cast<int64_t>(ropes.size()) * max_tokens * max_rotary_dim(ropes) *
         static_cast<int64_t>(sizeof(float));
}

int64_t ForwardPass::max_rotary_dim(const std::vector<RopeParams>& ropes) {
  int64_t d = 0;
  for (const RopeParams& rp : ropes) d = std::max<int64_t>(d, rp.rotary_dim);
  return d;
}

void ForwardPass::rope_tables() {
  for_token_rows([&](int64_t t0, int64_t t1) {
    for (size_t r = 0; r < ropes_.size(); ++r)
      for (int64_t t = t0; t < t1; ++t)
        rope_angles(pos_[static_cast<size_t>(t)], ropes_[r],
                    rope_cs_.data() + (static_cast<int64_t>(r) * max_tokens_ + t) * rope_stride_);
  });
}

Expected<ForwardPass> ForwardPass::create(const Model& model, int64_t max_tokens,
                                          ThreadPool* pool) {
  if (max_tokens <= 0)
    return Status::invalid_argument(fmt::format("tokens per step {} must be positive", max_tokens));
  if (model.config().encoder_only)
    return Status::unsupported(fmt::format(
        "'{}' is a text encoder: it embeds (serve it for /v1/embeddings), it does not generate",
        model.config().arch));
  try {
    return ForwardPass(model, max_tokens, pool ? pool : &model.pool());
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted(
        fmt::format("forward: cannot allocate scratch for {} tokens", max_tokens));
  }
}

uint64_t ForwardPass::scratch_bytes() const {
  return (x_.capacity() + xn_.capacity() + q_.capacity() + k_.capacity() + v_.capacity() +
          att_.capacity() + gate_.capacity() + up_.capacity() + logits_.capacity() +
          block_out_.capacity() + qg_.capacity() + attn_gate_.capacity()) *
             sizeof(float) +
         moe_.scratch_bytes() + delta_.scratch_bytes();
}

Status ForwardPass::check_step(std::span<const int32_t> tokens, std::span<const SeqStep> seqs,
                               const KvStorage& kv) const {
  const ModelConfig& c = model_->config();
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0 || seqs.empty()) return Status::invalid_argument("forward: no tokens");
  if (n > max_tokens_)
    return Status::invalid_argument(
        fmt::format("forward: {} tokens exceed the step size {}", n, max_tokens_));
  int64_t sum = 0;
  const KvLayout& l = kv.layout();
  for (const SeqStep& s : seqs) {
    if (s.n_tokens <= 0 || s.pos0 < 0)
      return Status::invalid_argument("forward: empty sequence slice");
    sum += s.n_tokens;
    const int64_t need =
        (s.pos0 + s.n_tokens + l.settings.block_tokens - 1) / l.settings.block_tokens;
    for (int g = 0; g < 2; ++g)
      if (l.has_group(g) && static_cast<int64_t>(s.blocks[g].size()) < need)
        return Status::invalid_argument(
            fmt::format("forward: block table of {} entries, {} needed", s.blocks[g].size(), need));
    if (l.has_state() && (s.state_slot < 0 || s.state_slot >= kv.n_state_slots()))
      return Status::invalid_argument(
          fmt::format("forward: state slot {} of {}", s.state_slot, kv.n_state_slots()));
  }
  if (sum != n)
    return Status::invalid_argument(
        fmt::format("forward: slices cover {} tokens, step has {}", sum, n));
  int64_t t = 0;
  for (const SeqStep& s : seqs) {
    for (const EmbeddingSplice& e : s.splices)
      if (e.rows == nullptr || e.n <= 0 || e.pos < 0)
        return Status::invalid_argument("forward: a spliced span without rows");
    for (int64_t i = 0; i < s.n_tokens; ++i, ++t) {
      const int32_t id = tokens[static_cast<size_t>(t)];
      if ((id < 0 || id >= c.n_vocab) && !spliced(s.splices, s.pos0 + i))
        return Status::out_of_range(
            fmt::format("token id {} is out of range (vocabulary size {})", id, c.n_vocab));
    }
  }
  return Status::ok_status();
}

Expected<std::span<const float>> ForwardPass::run(std::span<const int32_t> tokens,
                                                  std::span<const SeqStep> seqs, KvStorage& kv) {
  RETURN_IF_ERROR(check_step(tokens, seqs, kv));
  const ModelConfig& c = model_->config();
  n_ = static_cast<int64_t>(tokens.size());
  try {
    fit(logits_, logit_rows(seqs) * c.n_vocab);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("forward: cannot allocate the logits");
  }
  int64_t t = 0;
  for (size_t si = 0; si < seqs.size(); ++si)
    for (int64_t i = 0; i < seqs[si].n_tokens; ++i, ++t) {
      pos_[static_cast<size_t>(t)] = seqs[si].pos0 + i;
      seq_of_[static_cast<size_t>(t)] = static_cast<int32_t>(si);
    }
  embed(tokens, seqs);
  rope_tables();
  if (kv.layout().has_state())
    for (const SeqStep& s : seqs)
      if (s.pos0 == 0) kv.clear_state(s.state_slot);
  for (int l = 0; l < c.n_layer; ++l) {
    if (c.layers[static_cast<size_t>(l)].recurrent)
      delta_net_block(l, seqs, kv);
    else
      attention_block(l, seqs, kv);
    ffn_block(l);
  }
  compute_logits(seqs);
  return std::span<const float>(logits_.data(), static_cast<size_t>(logit_rows(seqs) * c.n_vocab));
}

// Token rows (Gemma scales them by sqrt(n_embd)); spliced rows are taken as they are, as
// the encoder's projector already put them in the LM's input space.
void ForwardPass::embed(std::span<const int32_t> tokens, std::span<const SeqStep> seqs) {
  const ModelConfig& c = model_->config();
  const KernelTable& k = model_->kernels();
  const float scale = c.scale_embeddings ? std::sqrt(static_cast<float>(c.n_embd)) : 1.0f;
  size_t i = 0;
  for (const SeqStep& s : seqs)
    for (int64_t j = 0; j < s.n_tokens; ++j, ++i) {
      float* row = x_.data() + i * c.n_embd;
      const int64_t p = s.pos0 + j;
      const EmbeddingSplice* e = nullptr;
      for (const EmbeddingSplice& cand : s.splices)
        if (p >= cand.pos && p < cand.pos + cand.n) e = &cand;
      if (e != nullptr) {
        std::copy_n(e->rows + (p - e->pos) * c.n_embd, c.n_embd, row);
        continue;
      }
      embedding_row(k, model_->weights().token_embd, tokens[i], row);
      if (c.scale_embeddings)
        for (int32_t d = 0; d < c.n_embd; ++d) row[d] *= scale;
    }
}

template <class Fn>
void ForwardPass::for_token_rows(Fn&& fn) {
  if (n_ < kParallelRowsFrom || pool_->size() == 1) {
    fn(int64_t{0}, n_);
    return;
  }
  pool_->run([&](int tid, int nth) {
    const auto [t0, t1] = ThreadPool::split(n_, tid, nth);
    if (t0 < t1) fn(t0, t1);
  });
}

// Writes the K/V rows [t1 - t0, kv_dim] of tokens [t0, t1) into each token's cache slot
// (distinct slots: the tokens of a step hold distinct positions of their sequences).
void ForwardPass::store_kv(int layer, std::span<const SeqStep> seqs, KvStorage& kv, int64_t t0,
                           int64_t t1) {
  const ModelConfig& c = model_->config();
  const KvLayout& l = kv.layout();
  const int g = l.layer_group[static_cast<size_t>(layer)];
  const int64_t bt = l.settings.block_tokens, kvd = c.kv_dim();
  const auto store_row = model_->kernels().kv_store_row;
  for (int64_t t = t0; t < t1; ++t) {
    const SeqStep& s = seqs[static_cast<size_t>(seq_of_[static_cast<size_t>(t)])];
    const int64_t p = pos_[static_cast<size_t>(t)];
    const int32_t b = s.blocks[g][static_cast<size_t>(p / bt)];
    CHECK_MSG(b >= 0, "forward: a token's KV block was released");
    store_row(l.settings.types.k, k_.data() + t * kvd, c.n_head_kv, c.head_dim,
              kv.k_block(layer, b) + (p % bt) * l.k_row_bytes);
    store_row(l.settings.types.v, v_.data() + t * kvd, c.n_head_kv, c.head_dim,
              kv.v_block(layer, b) + (p % bt) * l.v_row_bytes);
  }
}

// x += [post_norm](Wo . attention(rope(norm(q)), rope(norm(k)), v)), with q/k/v from norm(x).
void ForwardPass::attention_block(int l, std::span<const SeqStep> seqs, KvStorage& kv) {
  const ModelConfig& c = model_->config();
  const LayerWeights& w = model_->weights().layers[l];
  const KernelTable& k = model_->kernels();
  ThreadPool& pool = *pool_;
  const int64_t n = n_, d = c.n_embd, qd = c.q_dim(), kvd = c.kv_dim();
  for_token_rows([&](int64_t t0, int64_t t1) {
    k.rmsnorm(x_.data() + t0 * d, w.attn_norm.data(), xn_.data() + t0 * d, t1 - t0, d, c.norm_eps);
  });
  const TensorView* ws[3] = {&w.wq, &w.wk, &w.wv};
  float* ys[3] = {c.attn_output_gate ? qg_.data() : q_.data(), k_.data(), v_.data()};
  matmul_group(k, xn_.data(), n, ws, ys, pool);
  if (c.attn_output_gate) split_gated_q();
  const int rope = rope_of_layer_[static_cast<size_t>(l)];
  const RopeParams rp = rope >= 0 ? ropes_[static_cast<size_t>(rope)] : RopeParams{};
  // Per token row: bias, q/k norms per head ([rows * n_head, head_dim]), RoPE, cache write.
  for_token_rows([&](int64_t t0, int64_t t1) {
    if (c.qkv_bias)
      for (int64_t t = t0; t < t1; ++t) {
        k.add(q_.data() + t * qd, w.bq.data(), qd);
        k.add(k_.data() + t * kvd, w.bk.data(), kvd);
        k.add(v_.data() + t * kvd, w.bv.data(), kvd);
      }
    if (c.qk_norm) {
      k.rmsnorm(q_.data() + t0 * qd, w.q_norm.data(), q_.data() + t0 * qd, (t1 - t0) * c.n_head,
                c.head_dim, c.norm_eps);
      k.rmsnorm(k_.data() + t0 * kvd, w.k_norm.data(), k_.data() + t0 * kvd,
                (t1 - t0) * c.n_head_kv, c.head_dim, c.norm_eps);
    }
    if (rope >= 0)
      for (int64_t t = t0; t < t1; ++t) {
        const float* cs = rope_cs_.data() + (rope * max_tokens_ + t) * rope_stride_;
        k.rope(q_.data() + t * qd, c.n_head, cs, rp);
        k.rope(k_.data() + t * kvd, c.n_head_kv, cs, rp);
      }
    store_kv(l, seqs, kv, t0, t1);
  });
  plan_attention(l, seqs, kv);
  attention_batch(k, attn_, pool);
  if (c.attn_output_gate)  // att *= sigmoid(gate), elementwise over [n, q_dim]
    for_token_rows([&](int64_t t0, int64_t t1) {
      for (int64_t i = t0 * qd; i < t1 * qd; ++i)
        att_[static_cast<size_t>(i)] /= 1.0f + std::exp(-attn_gate_[static_cast<size_t>(i)]);
    });
  matmul(k, att_.data(), n, w.wo, xn_.data(), pool);  // [n, n_embd]
  if (!w.bo.empty())
    for_token_rows([&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) k.add(xn_.data() + t * d, w.bo.data(), d);
    });
  residual_add(c.post_norms ? w.post_attn_norm.data() : nullptr, xn_.data());
}

// qg_ [n, n_head, 2, head_dim] (per head its q rows, then its gate rows) -> q_ and
// attn_gate_ [n, n_head, head_dim].
void ForwardPass::split_gated_q() {
  const ModelConfig& c = model_->config();
  const int64_t hd = c.head_dim;
  for_token_rows([&](int64_t t0, int64_t t1) {
    for (int64_t r = t0 * c.n_head; r < t1 * c.n_head; ++r) {
      const float* src = qg_.data() + r * 2 * hd;
      std::copy_n(src, hd, q_.data() + r * hd);
      std::copy_n(src + hd, hd, attn_gate_.data() + r * hd);
    }
  });
}

void ForwardPass::delta_net_block(int l, std::span<const SeqStep> seqs, KvStorage& kv) {
  const ModelConfig& c = model_->config();
  const LayerWeights& w = model_->weights().layers[static_cast<size_t>(l)];
  const KernelTable& k = model_->kernels();
  const int64_t d = c.n_embd;
  for_token_rows([&](int64_t t0, int64_t t1) {
    k.rmsnorm(x_.data() + t0 * d, w.attn_norm.data(), xn_.data() + t0 * d, t1 - t0, d, c.norm_eps);
  });
  delta_slices_.clear();
  int64_t t0 = 0;
  for (const SeqStep& s : seqs) {
    float* snapshots = nullptr;
    if (s.state_snapshots)
      snapshots = s.state_snapshots + int64_t{kv.layout().layer_slot[static_cast<size_t>(l)]} *
                                          s.n_tokens * kv.layout().state_floats_per_layer;
    delta_slices_.push_back(DeltaNetSlice{t0, s.n_tokens, kv.state(l, s.state_slot), snapshots});
    t0 += s.n_tokens;
  }
  delta_.run(c, w, k, xn_.data(), n_, delta_slices_, block_out_.data(), *pool_);
  residual_add(nullptr, block_out_.data());
}

void ForwardPass::residual_add(const float* post_norm, float* y) {
  const ModelConfig& c = model_->config();
  const KernelTable& k = model_->kernels();
  const int64_t d = c.n_embd;
  for_token_rows([&](int64_t t0, int64_t t1) {
    if (post_norm) k.rmsnorm(y + t0 * d, post_norm, y + t0 * d, t1 - t0, d, c.norm_eps);
    k.add(x_.data() + t0 * d, y + t0 * d, (t1 - t0) * d);
  });
}

void ForwardPass::plan_attention(int l, std::span<const SeqStep> seqs, KvStorage& kv) {
  const ModelConfig& c = model_->config();
  const LayerConfig& lc = c.layers[l];
  const LayerWeights& w = model_->weights().layers[static_cast<size_t>(l)];
  const int64_t qd = c.q_dim();
  // Block pointer tables: for each sequence, K pointers then V pointers per logical block.
  const KvLayout& kl = kv.layout();
  const int g = kl.layer_group[static_cast<size_t>(l)];
  size_t total = 0;
  for (const SeqStep& s : seqs) total += 2 * s.blocks[g].size();
  block_ptrs_.resize(total);
  attn_.clear();
  size_t off = 0;
  int64_t t0 = 0;
  for (const SeqStep& s : seqs) {
    const size_t nb = s.blocks[g].size();
    for (size_t b = 0; b < nb; ++b) {
      const int32_t phys = s.blocks[g][b];
      block_ptrs_[off + b] = phys < 0 ? nullptr : kv.k_block(l, phys);
      block_ptrs_[off + nb + b] = phys < 0 ? nullptr : kv.v_block(l, phys);
    }
    AttentionArgs a;
    a.k_blocks = block_ptrs_.data() + off;
    a.v_blocks = block_ptrs_.data() + off + nb;
    a.block_tokens = kl.settings.block_tokens;
    a.k_row_bytes = kl.k_row_bytes;
    a.v_row_bytes = kl.v_row_bytes;
    a.k_type = kl.settings.types.k;
    a.v_type = kl.settings.types.v;
    a.n_head = c.n_head;
    a.n_head_kv = c.n_head_kv;
    a.head_dim = c.head_dim;
    a.window = lc.sliding ? lc.window : 0;
    a.scale = c.effective_attn_scale();
    a.sinks = w.attn_sinks.empty() ? nullptr : w.attn_sinks.data();
    // Causal runs, and each query of a bidirectional span alone, placed at the span's last
    // position so it sees every key of the span (its own RoPE position is already applied).
    const int64_t end = s.pos0 + s.n_tokens;
    int64_t p = s.pos0;
    while (p < end) {
      const EmbeddingSplice* span = nullptr;
      int64_t run_end = end;
      for (const EmbeddingSplice& e : s.splices) {
        if (!e.bidirectional || e.pos + e.n <= p) continue;
        if (e.pos <= p)
          span = &e;
        else
          run_end = std::min(run_end, e.pos);
      }
      const int64_t n_q = span ? 1 : run_end - p;
      a.q = q_.data() + (t0 + p - s.pos0) * qd;
      a.out = att_.data() + (t0 + p - s.pos0) * qd;
      a.n_q = n_q;
      a.pos0 = span ? std::min(span->pos + span->n, end) - 1 : p;
      attn_.push_back(a);
      p += n_q;
    }
    off += 2 * nb;
    t0 += s.n_tokens;
  }
}

// x += [post_norm](W_down . (act(W_gate . norm(x)) * (W_up . norm(x)))), or the mixture of
// experts of norm(x) (moe_ffn.h) on a MoE layer.
void ForwardPass::ffn_block(int l) {
  const ModelConfig& c = model_->config();
  const LayerWeights& w = model_->weights().layers[l];
  const KernelTable& k = model_->kernels();
  ThreadPool& pool = *pool_;
  const int64_t n = n_, d = c.n_embd, ff = c.n_ff;
  for_token_rows([&](int64_t t0, int64_t t1) {
    k.rmsnorm(x_.data() + t0 * d, w.ffn_norm.data(), xn_.data() + t0 * d, t1 - t0, d, c.norm_eps);
  });
  const float* post_norm = c.post_norms ? w.post_ffn_norm.data() : nullptr;
  if (c.layers[static_cast<size_t>(l)].moe) {
    moe_.run(c, w, k, xn_.data(), n, block_out_.data(), pool);
    residual_add(post_norm, block_out_.data());
    return;
  }
  const TensorView* ws[2] = {&w.w_gate, &w.w_up};
  float* ys[2] = {gate_.data(), up_.data()};
  matmul_group(k, xn_.data(), n, ws, ys, pool);
  // Row by row, so the gate row [n_ff] is still in cache for the product.
  for_token_rows([&](int64_t t0, int64_t t1) {
    glu_rows(k, c, gate_.data() + t0 * ff, up_.data() + t0 * ff, t1 - t0, ff);
  });
  matmul(k, gate_.data(), n, w.w_down, xn_.data(), pool);
  residual_add(post_norm, xn_.data());
}

// Gathers the rows that want logits (in sequence order), norms them and runs the head.
void ForwardPass::compute_logits(std::span<const SeqStep> seqs) {
  const ModelConfig& c = model_->config();
  const KernelTable& k = model_->kernels();
  int64_t rows = 0;
  // The head's rows first, then the hidden-only ones (embeddings), each in sequence order.
  for (const bool head : {true, false}) {
    int64_t t0 = 0;
    for (const SeqStep& s : seqs) {
      const bool hidden = s.logits == SeqStep::Logits::kHidden;
      const int64_t first = s.logits == SeqStep::Logits::kLast ? t0 + s.n_tokens - 1 : t0;
      const int64_t count = hidden != head ? (s.logits == SeqStep::Logits::kLast   ? 1
                                              : s.logits == SeqStep::Logits::kNone ? 0
                                                                                   : s.n_tokens)
                                           : 0;
      k.rmsnorm(x_.data() + first * c.n_embd, model_->weights().output_norm.data(),
                xn_.data() + rows * c.n_embd, count, c.n_embd, c.norm_eps);
      rows += count;
      t0 += s.n_tokens;
    }
    if (head && rows > 0)
      matmul(k, xn_.data(), rows, model_->weights().output, logits_.data(), *pool_);
  }
  hidden_rows_ = rows;
}

// ---- InferenceState -------------------------------------------------------------------

Expected<InferenceState> InferenceState::create(const Model& model, int64_t n_ctx,
                                                const InferenceOptions& o) {
  if (n_ctx <= 0)
    return Status::invalid_argument(fmt::format("context size {} must be positive", n_ctx));
  const ModelConfig& c = model.config();
  RETURN_IF_ERROR(check_kv_types(o.kv_types, c.head_dim));
  const KvLayout layout = KvLayout::make(c, KvSettings{o.kv_types, 16});
  const int64_t step = std::max<int64_t>(1, std::min(o.max_step, n_ctx));
  const int64_t per_pos = c.n_layer * (layout.k_row_bytes + layout.v_row_bytes);
  if (n_ctx > (int64_t{1} << 46) / std::max<int64_t>(per_pos, 1))
    return Status::resource_exhausted(
        fmt::format("KV cache for context {} would need {} bytes per position", n_ctx, per_pos));
  std::array<int64_t, 2> n_blocks{layout.blocks_per_seq(kKvGlobal, n_ctx, step),
                                  o.sliding_ring ? layout.blocks_per_seq(kKvSliding, n_ctx, step)
                                                 : layout.blocks_per_seq(kKvGlobal, n_ctx, step)};
  if (!layout.has_group(kKvSliding)) n_blocks[kKvSliding] = 0;
  if (!layout.has_group(kKvGlobal)) n_blocks[kKvGlobal] = 0;
  ASSIGN_OR_RETURN(KvStorage kv, KvStorage::create(layout, n_blocks, /*n_state_slots=*/1));
  ASSIGN_OR_RETURN(ForwardPass pass, ForwardPass::create(model, step));
  return InferenceState(model, n_ctx, o, std::move(pass), std::move(kv));
}

InferenceState::InferenceState(const Model& model, int64_t n_ctx, const InferenceOptions& o,
                               ForwardPass pass, KvStorage kv)
    : model_(&model), n_ctx_(n_ctx), options_(o), pass_(std::move(pass)), kv_(std::move(kv)) {
  const int64_t bt = kv_.layout().settings.block_tokens;
  const int64_t logical = (n_ctx + bt - 1) / bt;
  for (int g = 0; g < 2; ++g) {
    const int64_t phys = kv_.n_blocks(g);
    for (int64_t b = 0; b < logical && phys > 0; ++b)
      blocks_[g].push_back(static_cast<int32_t>(b % phys));
  }
}

Status InferenceState::truncate(int64_t n) {
  if (n < 0 || n > n_past_)
    return Status::invalid_argument(fmt::format("truncate to {} of {}", n, n_past_));
  const KvLayout& l = kv_.layout();
  const bool kept =
      kept_n_ > 0 && n > kept_pos0_ && n <= kept_pos0_ + kept_n_ && kept_pos0_ + kept_n_ == n_past_;
  if (l.has_state() && n != 0 && n != n_past_ && !kept)
    return Status::unsupported(fmt::format(
        "cannot go back to position {} of {}: the recurrent (linear attention) layers keep one "
        "state for the whole past, which cannot be rolled back (only a restart at 0, or inside "
        "a forward that kept its states)",
        n, n_past_));
  if (l.has_group(kKvSliding) && n < n_past_) {
    // The ring holds the last ring_positions positions before n_past_; the window at n
    // needs [n - window + 1, n).
    const int64_t bt = l.settings.block_tokens;
    const int64_t oldest =
        std::max<int64_t>(0, ((n_past_ - 1) / bt - kv_.n_blocks(kKvSliding) + 1) * bt);
    if (std::max<int64_t>(0, n - l.window + 1) < oldest)
      return Status::out_of_range(fmt::format(
          "cannot go back to position {}: the sliding-window ring kept positions from {} on", n,
          oldest));
  }
  if (l.has_state() && kept && n < n_past_) {  // the states after token n - 1 of the kept forward
    const int64_t sf = l.state_floats_per_layer, i = n - kept_pos0_ - 1;
    for (int layer = 0; layer < model_->config().n_layer; ++layer) {
      if (l.layer_group[static_cast<size_t>(layer)] >= 0) continue;  // an attention layer
      const int32_t slot = l.layer_slot[static_cast<size_t>(layer)];
      std::copy_n(snapshots_.data() + (int64_t{slot} * kept_stride_ + i) * sf, sf,
                  kv_.state(layer, 0));
    }
    kept_n_ = n - kept_pos0_;
  }
  n_past_ = n;
  return Status::ok_status();
}

Status InferenceState::keep_step_states(int32_t max_tokens) {
  const KvLayout& l = kv_.layout();
  keep_tokens_ = l.has_state() ? std::max(0, max_tokens) : 0;
  kept_n_ = 0;
  try {
    fit(snapshots_, int64_t{l.n_state_layers} * keep_tokens_ * l.state_floats_per_layer);
  } catch (const std::bad_alloc&) {
    keep_tokens_ = 0;
    return Status::resource_exhausted("cannot allocate the recurrent states of a verify step");
  }
  return Status::ok_status();
}

std::span<const float> InferenceState::last_hidden() const {
  const std::span<const float> h = pass_.hidden();
  const size_t d = static_cast<size_t>(model_->config().n_embd);
  return h.size() < d ? h : h.subspan(h.size() - d);
}

Expected<std::span<const float>> InferenceState::forward(std::span<const int32_t> tokens,
                                                         bool all_logits) {
  return forward(tokens, all_logits, {});
}

Expected<std::span<const float>> InferenceState::forward(std::span<const int32_t> tokens,
                                                         bool all_logits,
                                                         std::span<const EmbeddingSplice> splices) {
  const ModelConfig& c = model_->config();
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return Status::invalid_argument("forward: no tokens");
  for (int64_t i = 0; i < n; ++i)
    if ((tokens[i] < 0 || tokens[i] >= c.n_vocab) && !spliced(splices, n_past_ + i))
      return Status::out_of_range(
          fmt::format("token id {} is out of range (vocabulary size {})", tokens[i], c.n_vocab));
  for (const EmbeddingSplice& e : splices) {
    if (e.pos < n_past_ || e.pos + e.n > n_past_ + n)
      return Status::invalid_argument(
          fmt::format("forward: spliced rows at [{}, {}) outside the batch [{}, {})", e.pos,
                      e.pos + e.n, n_past_, n_past_ + n));
    if (e.bidirectional && e.n > pass_.max_tokens())
      return Status::invalid_argument(
          fmt::format("forward: a bidirectional span of {} rows exceeds the step of {} tokens", e.n,
                      pass_.max_tokens()));
  }
  if (n_past_ + n > n_ctx_)
    return Status::out_of_range(
        fmt::format("{} tokens after {} cached exceed the context of {} ({} > {})", n, n_past_,
                    n_ctx_, n_past_ + n, n_ctx_));
  const int64_t step = pass_.max_tokens();
  if (all_logits && n > step) {
    try {
      fit(logits_, n * c.n_vocab);
    } catch (const std::bad_alloc&) {
      return Status::resource_exhausted("forward: cannot allocate the logits");
    }
  }
  std::span<const float> last;
  // A forward short enough keeps the recurrent state after each of its tokens (truncate).
  // (A single token never needs going back inside: it is kept whole or dropped whole.)
  const bool keep = keep_tokens_ > 0 && n >= 2 && n <= keep_tokens_ && n <= step && splices.empty();
  const int64_t pos0 = n_past_;
  kept_n_ = 0;
  for (int64_t done = 0, m = 0; done < n; done += m) {
    m = splice_chunk_tokens(splices, n_past_, std::min(step, n - done));
    SeqStep s;
    s.pos0 = n_past_;
    s.n_tokens = m;
    s.blocks[0] = blocks_[0];
    s.blocks[1] = blocks_[1];
    s.splices = splices;
    s.state_slot = kv_.layout().has_state() ? 0 : -1;
    s.logits = all_logits      ? SeqStep::Logits::kAll
               : done + m == n ? SeqStep::Logits::kLast
                               : SeqStep::Logits::kNone;
    if (keep) s.state_snapshots = snapshots_.data();
    ASSIGN_OR_RETURN(last,
                     pass_.run(tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(m)),
                               std::span<const SeqStep>(&s, 1), kv_));
    n_past_ += m;
    if (all_logits && n > step)
      std::copy(last.begin(), last.end(), logits_.begin() + done * c.n_vocab);
  }
  if (keep) kept_pos0_ = pos0, kept_n_ = n, kept_stride_ = n;
  if (all_logits && n > step)
    return std::span<const float>(logits_.data(), static_cast<size_t>(n * c.n_vocab));
  return last;
}

}  // namespace edge
