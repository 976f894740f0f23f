// BERT-family forward pass (graph in bert.h). The projections run once over every token of
// the batch; attention runs per sequence over its own tokens (encoder_common's
// bidirectional attention); layer norms on the scalar op, GELU/SiLU/RoPE on the kernels.
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/ref/audio_ref.h"
#include "model/arch/bert.h"
#include "model/arch/encoder_common.h"

namespace edge {

namespace {

using Vec = std::vector<float>;

void linear(const BertExec& ex, const float* x, int64_t t, const TensorView& w, const Vec& b,
            float* y) {
  linear_rows(ex.kernels, ex.pool, x, t, w, b, y);
}

// x [T][E]: token embedding + type 0 row (+ learned position, bert), then the embedding norm.
Vec embed(const BertExec& ex, const ModelConfig& c, const BertHparams& h, const BertWeights& w,
          std::span<const int32_t> tokens, std::span<const int64_t> offsets) {
  const int64_t e = c.n_embd, t = static_cast<int64_t>(tokens.size());
  Vec x(static_cast<size_t>(t * e)), pos(static_cast<size_t>(e));
  for (size_t s = 0; s + 1 < offsets.size(); ++s)
    for (int64_t i = offsets[s]; i < offsets[s + 1]; ++i) {
      CHECK(tokens[i] >= 0 && tokens[i] < c.n_vocab);
      float* row = x.data() + i * e;
      embedding_row(ex.kernels, w.tok_embd, tokens[i], row);
      ex.kernels.add(row, w.type0.data(), e);
      if (!h.nomic) {
        embedding_row(ex.kernels, w.pos_embd, i - offsets[s], pos.data());
        ex.kernels.add(row, pos.data(), e);
      }
    }
  ref::layer_norm(x.data(), t, e, c.norm_eps, w.embd_ln_w.data(), w.embd_ln_b.data(), x.data());
  return x;
}

// Scratch of one batch: q, k, v, attention output [T][E]; FFN rows [T][n_ff] (x2 nomic).
struct Scratch {
  Vec q, k, v, a, mid, gate, qkv;
};

// nomic-bert: one [T][3E] projection split into q, k, v; q and k rotated (NeoX pairs over
// the whole head) at each token's position in its sequence.
void qkv_rotary(const BertExec& ex, const ModelConfig& c, const BertWeights::Layer& l,
                const Vec& x, std::span<const int64_t> offsets, Scratch& s) {
  const int64_t e = c.n_embd, t = static_cast<int64_t>(x.size()) / e;
  s.qkv.resize(static_cast<size_t>(t * 3 * e));
  matmul(ex.kernels, x.data(), t, l.qkv_w, s.qkv.data(), ex.pool);
  RopeParams rp;
  rp.style = RopeStyle::kNeox;
  rp.head_dim = c.head_dim;
  rp.rotary_dim = c.layers[0].rotary_dim;
  rp.theta = c.layers[0].rope_theta;
  Vec cs(static_cast<size_t>(rp.rotary_dim));
  for (size_t sq = 0; sq + 1 < offsets.size(); ++sq)
    for (int64_t i = offsets[sq]; i < offsets[sq + 1]; ++i) {
      const float* r = s.qkv.data() + i * 3 * e;
      std::copy_n(r, e, s.q.data() + i * e);
      std::copy_n(r + e, e, s.k.data() + i * e);
      std::copy_n(r + 2 * e, e, s.v.data() + i * e);
      rope_angles(i - offsets[sq], rp, cs.data());
      ex.kernels.rope(s.q.data() + i * e, c.n_head, cs.data(), rp);
      ex.kernels.rope(s.k.data() + i * e, c.n_head, cs.data(), rp);
    }
}

void layer(const BertExec& ex, const ModelConfig& c, const BertHparams& h,
           const BertWeights::Layer& l, std::span<const int64_t> offsets, Vec& x, Scratch& s) {
  const int64_t e = c.n_embd, t = static_cast<int64_t>(x.size()) / e, ff = c.n_ff;
  if (h.nomic) {
    qkv_rotary(ex, c, l, x, offsets, s);
  } else {
    const TensorView* ws[] = {&l.q_w, &l.k_w, &l.v_w};
    float* ys[] = {s.q.data(), s.k.data(), s.v.data()};
    matmul_group(ex.kernels, x.data(), t, ws, ys, ex.pool);
    for (int64_t i = 0; i < t; ++i) {
      ex.kernels.add(s.q.data() + i * e, l.q_b.data(), e);
      ex.kernels.add(s.k.data() + i * e, l.k_b.data(), e);
      ex.kernels.add(s.v.data() + i * e, l.v_b.data(), e);
    }
  }
  for (size_t sq = 0; sq + 1 < offsets.size(); ++sq) {
    const int64_t o = offsets[sq] * e, n = offsets[sq + 1] - offsets[sq];
    attention_bidirectional(ex.kernels, ex.pool, s.q.data() + o, s.k.data() + o, s.v.data() + o,
                            n, c.n_head, c.head_dim, s.a.data() + o);
  }
  linear(ex, s.a.data(), t, l.o_w, l.o_b, s.q.data());
  ex.kernels.add(x.data(), s.q.data(), t * e);
  ref::layer_norm(x.data(), t, e, c.norm_eps, l.attn_ln_w.data(), l.attn_ln_b.data(), x.data());
  if (h.nomic) {
    const TensorView* ws[] = {&l.gate_w, &l.up_w};
    float* ys[] = {s.gate.data(), s.mid.data()};
    matmul_group(ex.kernels, x.data(), t, ws, ys, ex.pool);
    ex.kernels.silu(s.gate.data(), t * ff);
    ex.kernels.mul(s.mid.data(), s.gate.data(), t * ff);
  } else {
    linear(ex, x.data(), t, l.up_w, l.up_b, s.mid.data());
    ex.kernels.gelu(s.mid.data(), t * ff);
  }
  linear(ex, s.mid.data(), t, l.down_w, l.down_b, s.q.data());
  ex.kernels.add(x.data(), s.q.data(), t * e);
  ref::layer_norm(x.data(), t, e, c.norm_eps, l.out_ln_w.data(), l.out_ln_b.data(), x.data());
}

// [n_seqs][E] pooled rows, or [n_seqs][1] rank scores.
Vec pool_rows(const BertExec& ex, const ModelConfig& c, const BertWeights& w, const Vec& x,
              std::span<const int64_t> offsets, EncoderPooling pooling) {
  const int64_t e = c.n_embd, n_seqs = static_cast<int64_t>(offsets.size()) - 1;
  Vec out(static_cast<size_t>(n_seqs * e), 0.0f);
  for (int64_t s = 0; s < n_seqs; ++s) {
    const int64_t b = offsets[s], n = offsets[s + 1] - b;
    float* o = out.data() + s * e;
    if (pooling == EncoderPooling::kMean) {
      for (int64_t i = 0; i < n; ++i) ex.kernels.add(o, x.data() + (b + i) * e, e);
      for (int64_t j = 0; j < e; ++j) o[j] /= static_cast<float>(n);
    } else {
      const int64_t row = pooling == EncoderPooling::kLast ? b + n - 1 : b;
      std::copy_n(x.data() + row * e, e, o);
    }
  }
  if (pooling != EncoderPooling::kRank) return out;
  CHECK(w.cls_w.data != nullptr);
  // Classification head (RoBERTa/BERT sequence classification): tanh(dense), then the
  // output projection; without cls.output the score is the dense layer's first value.
  Vec hid(out.size());
  linear(ex, out.data(), n_seqs, w.cls_w, w.cls_b, hid.data());
  for (float& v : hid) v = std::tanh(v);
  Vec scores(static_cast<size_t>(n_seqs));
  if (w.cls_out_w.data) {
    const int64_t k = w.cls_out_w.shape[0];
    Vec all(static_cast<size_t>(n_seqs * k));
    linear(ex, hid.data(), n_seqs, w.cls_out_w, w.cls_out_b, all.data());
    for (int64_t s = 0; s < n_seqs; ++s) scores[s] = all[s * k];
  } else {
    for (int64_t s = 0; s < n_seqs; ++s) scores[s] = hid[s * e];
  }
  return scores;
}

}  // namespace

std::vector<float> bert_encode(const BertExec& ex, const ModelConfig& c, const BertHparams& h,
                               const BertWeights& w, std::span<const int32_t> tokens,
                               std::span<const int64_t> offsets, EncoderPooling pooling) {
  CHECK(offsets.size() >= 2 && offsets.front() == 0 &&
        offsets.back() == static_cast<int64_t>(tokens.size()));
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    CHECK(offsets[s + 1] > offsets[s]);
    CHECK(h.nomic || offsets[s + 1] - offsets[s] <= h.n_ctx_train);
  }
  const int64_t t = static_cast<int64_t>(tokens.size()), e = c.n_embd, ff = c.n_ff;
  Vec x = embed(ex, c, h, w, tokens, offsets);
  Scratch s;
  for (Vec* v : {&s.q, &s.k, &s.v, &s.a}) v->resize(static_cast<size_t>(t * e));
  s.mid.resize(static_cast<size_t>(t * ff));
  if (h.nomic) s.gate.resize(static_cast<size_t>(t * ff));
  for (const BertWeights::Layer& l : w.layers) layer(ex, c, h, l, offsets, x, s);
  return pool_rows(ex, c, w, x, offsets, pooling);
}

int64_t bert_scratch_floats(const ModelConfig& c, int64_t tokens, int64_t longest) {
  const int64_t e = c.n_embd, ff = c.n_ff;
  // x + q, k, v, a (+ the fused qkv) and the FFN rows, then one sequence's attention:
  // scores [L][L] and four [L][head_dim] head copies.
  return tokens * (5 * e + 3 * e + 2 * ff) + longest * longest + 4 * longest * c.head_dim;
}

}  // namespace edge
