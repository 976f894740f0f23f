// Qwen3-TTS 12 Hz codec decoder forward pass (graph in qwen3_tts_codec.h), one chunk of frames
// at a time. Activations are time-major [T][C] throughout: a causal conv then reads its
// input as [hist ; x] rows, and its left state is the last rows of that. Matmul-shaped work
// (projections, convolutions through im2col, transposed convolutions) goes to the dispatched,
// threaded matmul; norms, activations and the depthwise conv are scalar here or in the
// kernel table. Nothing an output row computes depends on how many rows the chunk has, which
// is what makes a stream equal to the whole-utterance decode.
#include <algorithm>
#include <cmath>

#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/ref/audio_ref.h"
#include "model/arch/qwen3_tts_codec.h"

namespace edge {

namespace {

using Vec = std::vector<float>;
using W = Qwen3TtsCodecWeights;

constexpr int64_t kIm2colRows = 256;  // output rows per im2col tile (bounds its scratch)

// Hands out the state's left-context buffers in graph order; a fresh state's are zeros (the
// causal modules' left zero padding).
struct HistCursor {
  Qwen3TtsCodecState& s;
  size_t next = 0;
  Vec& take(int64_t rows, int64_t c) {
    if (next == s.hist.size()) s.hist.emplace_back(static_cast<size_t>(rows * c), 0.0f);
    return s.hist[next++];
  }
};

TensorView f32_view(const Vec& w, int64_t rows, int64_t cols) {
  TensorView v;
  v.dtype = DType::F32;
  v.shape = {rows, cols};
  v.data = reinterpret_cast<const uint8_t*>(w.data());
  v.nbytes = static_cast<uint64_t>(w.size() * sizeof(float));
  return v;
}

// y [t][out] = x [t][in] . w^T (+ bias).
void linear(const Qwen3TtsCodecExec& ex, const float* x, int64_t t, const TensorView& w,
            const Vec* bias, float* y) {
  matmul(ex.kernels, x, t, w, y, ex.pool);
  const int64_t out = w.shape[0];
  if (bias)
    for (int64_t i = 0; i < t; ++i) ex.kernels.add(y + i * out, bias->data(), out);
}

// Causal conv: x [t][c_in] after the (k-1)*dilation rows of hist -> y [t][c_out]. Output row i
// reads rows i + j * dilation of [hist ; x], the im2col column ci * k + j.
Vec causal_conv(const Qwen3TtsCodecExec& ex, const W::Conv& c, const Vec& x, int64_t t,
                HistCursor& hc) {
  const int64_t h = (c.k - 1) * c.dilation, ck = c.c_in * c.k;
  Vec& hist = hc.take(h, c.c_in);
  Vec ext(hist);
  ext.insert(ext.end(), x.begin(), x.end());  // [h + t][c_in]
  Vec y(static_cast<size_t>(t * c.c_out));
  if (c.k == 1) {
    linear(ex, x.data(), t, c.w, &c.bias, y.data());
  } else {
    Vec cols(static_cast<size_t>(std::min(t, kIm2colRows) * ck));
    for (int64_t i0 = 0; i0 < t; i0 += kIm2colRows) {
      const int64_t n = std::min(kIm2colRows, t - i0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < c.k; ++j) {
          const float* src = ext.data() + (i0 + i + j * c.dilation) * c.c_in;
          float* dst = cols.data() + i * ck + j;
          for (int64_t ci = 0; ci < c.c_in; ++ci) dst[ci * c.k] = src[ci];
        }
      linear(ex, cols.data(), n, c.w, &c.bias, y.data() + i0 * c.c_out);
    }
  }
  hist.assign(ext.end() - h * c.c_in, ext.end());
  return y;
}

// Transposed conv (kernel taps * stride, trimmed to t * stride outputs): x [t][c_in] ->
// [t * stride][c_out]; the state holds the taps - 1 previous input rows.
Vec trans_conv(const Qwen3TtsCodecExec& ex, const W::TransConv& tc, const Vec& x, int64_t t,
               HistCursor& hc) {
  const int64_t h = tc.taps - 1, cols = tc.taps * tc.c_in;
  Vec& hist = hc.take(h, tc.c_in);
  Vec ext(hist);
  ext.insert(ext.end(), x.begin(), x.end());
  Vec rows(static_cast<size_t>(t * cols));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t tap = 0; tap < tc.taps; ++tap)  // input i - tap is ext row h + i - tap
      std::copy_n(ext.data() + (h + i - tap) * tc.c_in, tc.c_in,
                  rows.data() + i * cols + tap * tc.c_in);
  Vec y(static_cast<size_t>(t * tc.stride * tc.c_out));  // [t][stride][c_out]
  linear(ex, rows.data(), t, f32_view(tc.w, tc.stride * tc.c_out, cols), nullptr, y.data());
  for (int64_t r = 0; r < t * tc.stride; ++r)
    ex.kernels.add(y.data() + r * tc.c_out, tc.bias.data(), tc.c_out);
  hist.assign(ext.end() - h * tc.c_in, ext.end());
  return y;
}

// SnakeBeta on x [t][C]: x + inv_beta * sin(alpha * x)^2.
Vec snake(const W::Snake& s, const Vec& x) {
  const int64_t c = static_cast<int64_t>(s.alpha.size());
  Vec y(x.size());
  for (size_t r = 0; r < x.size(); r += static_cast<size_t>(c))
    for (int64_t ch = 0; ch < c; ++ch) {
      const float v = x[r + ch], sn = std::sin(v * s.alpha[ch]);
      y[r + ch] = v + s.inv_beta[ch] * (sn * sn);
    }
  return y;
}

// GELU, erf form (torch.nn.GELU()'s default; the kernel table's is the tanh form).
void gelu_erf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * float(M_SQRT1_2)));
}

// Causal ConvNeXt block on x [t][C]: depthwise causal conv k7, layer norm (eps 1e-6),
// pw1 (C -> 4C), GELU, pw2, gamma, residual.
void convnext(const Qwen3TtsCodecExec& ex, const W::ConvNext& b, Vec& x, int64_t t,
              HistCursor& hc) {
  const int64_t c = static_cast<int64_t>(b.gamma.size()), k = 7;
  Vec& hist = hc.take(k - 1, c);
  Vec ext(hist);
  ext.insert(ext.end(), x.begin(), x.end());
  Vec a(x.size());
  for (int64_t i = 0; i < t; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      float s = b.dw_b[ch];
      for (int64_t j = 0; j < k; ++j) s += b.dw_w[ch * k + j] * ext[(i + j) * c + ch];
      a[i * c + ch] = s;
    }
  hist.assign(ext.end() - (k - 1) * c, ext.end());
  ref::layer_norm(a.data(), t, c, 1e-6f, b.norm_w.data(), b.norm_b.data(), a.data());
  Vec mid(static_cast<size_t>(t * 4 * c));
  linear(ex, a.data(), t, b.pw1, &b.pw1_b, mid.data());
  gelu_erf(mid.data(), t * 4 * c);
  linear(ex, mid.data(), t, b.pw2, &b.pw2_b, a.data());
  for (int64_t i = 0; i < t; ++i)
    for (int64_t ch = 0; ch < c; ++ch) x[i * c + ch] += b.gamma[ch] * a[i * c + ch];
}

// Codes [t][n_q] -> quantizer output [t][codebook_dim]: proj_first . cb_0[code_0] +
// proj_rest . (cb_1[code_1] + ... ), the sums in codebook order.
Vec quantize(const Qwen3TtsCodecExec& ex, const Qwen3TtsCodecHparams& h, const W& w,
             const int32_t* codes, int64_t t) {
  const int64_t vq = h.vq_dim(), nq = h.n_quantizers, rows = h.codebook_size;
  Vec first(static_cast<size_t>(t * vq)), rest(static_cast<size_t>(t * vq), 0.0f);
  for (int64_t i = 0; i < t; ++i) {
    const float* e0 = w.codebooks.data() + codes[i * nq] * vq;
    std::copy_n(e0, vq, first.data() + i * vq);
    for (int64_t q = 1; q < nq; ++q) {
      const float* e = w.codebooks.data() + (q * rows + codes[i * nq + q]) * vq;
      for (int64_t j = 0; j < vq; ++j) rest[i * vq + j] += e[j];
    }
  }
  Vec y(static_cast<size_t>(t * h.codebook_dim)), r(y.size());
  linear(ex, first.data(), t, w.proj_first, nullptr, y.data());
  linear(ex, rest.data(), t, w.proj_rest, nullptr, r.data());
  for (size_t i = 0; i < y.size(); ++i) y[i] += r[i];
  return y;
}

// Writes rows [t][kv] of position pos0.. into the layer's pages and frees pages that left
// every later query's window; fills the page table for the attention kernel.
void store_kv(Qwen3TtsCodecState::KvPages& p, const Vec& k, const Vec& v, int64_t pos0, int64_t t,
              int64_t kv, int64_t window, std::vector<const uint8_t*>& kt,
              std::vector<const uint8_t*>& vt) {
  constexpr int64_t P = Qwen3TtsCodecState::kPage;
  const size_t n_pages = static_cast<size_t>((pos0 + t + P - 1) / P);
  if (p.k.size() < n_pages) {
    p.k.resize(n_pages);
    p.v.resize(n_pages);
  }
  for (int64_t i = 0; i < t; ++i) {
    const int64_t pos = pos0 + i, pg = pos / P;
    if (p.k[pg].empty()) {
      p.k[pg].assign(static_cast<size_t>(P * kv), 0.0f);
      p.v[pg].assign(static_cast<size_t>(P * kv), 0.0f);
    }
    std::copy_n(k.data() + i * kv, kv, p.k[pg].data() + (pos % P) * kv);
    std::copy_n(v.data() + i * kv, kv, p.v[pg].data() + (pos % P) * kv);
  }
  // This chunk's first query is at pos0 and sees positions > pos0 - window; no later one
  // sees further back, so pages wholly before that are freed (null in the page table).
  const int64_t first_needed = pos0 - window + 1;
  kt.assign(n_pages, nullptr);
  vt.assign(n_pages, nullptr);
  for (size_t pg = 0; pg < n_pages; ++pg) {
    if (static_cast<int64_t>(pg + 1) * P <= first_needed && !p.k[pg].empty()) {
      Vec().swap(p.k[pg]);
      Vec().swap(p.v[pg]);
    }
    if (p.k[pg].empty()) continue;
    kt[pg] = reinterpret_cast<const uint8_t*>(p.k[pg].data());
    vt[pg] = reinterpret_cast<const uint8_t*>(p.v[pg].data());
  }
}

// One pre-norm layer on x [t][hidden] at positions pos0..: attention, then SwiGLU, each
// added through its layer scale.
void transformer_layer(const Qwen3TtsCodecExec& ex, const Qwen3TtsCodecHparams& h,
                       const W::Layer& L, Qwen3TtsCodecState::KvPages& kvp, Vec& x, int64_t t,
                       int64_t pos0) {
  const int64_t d = h.hidden, nq = h.n_head * h.head_dim, nkv = h.n_head_kv * h.head_dim;
  Vec n(x.size()), q(static_cast<size_t>(t * nq)), k(static_cast<size_t>(t * nkv)), v(k.size());
  ex.kernels.rmsnorm(x.data(), L.attn_norm.data(), n.data(), t, d, h.rms_eps);
  linear(ex, n.data(), t, L.wq, nullptr, q.data());
  linear(ex, n.data(), t, L.wk, nullptr, k.data());
  linear(ex, n.data(), t, L.wv, nullptr, v.data());
  RopeParams rp;
  rp.style = RopeStyle::kNeox;
  rp.head_dim = static_cast<int32_t>(h.head_dim);
  rp.rotary_dim = rp.head_dim;
  rp.theta = h.rope_theta;
  Vec cs(static_cast<size_t>(h.head_dim));
  for (int64_t i = 0; i < t; ++i) {
    rope_angles(pos0 + i, rp, cs.data());
    ex.kernels.rope(q.data() + i * nq, h.n_head, cs.data(), rp);
    ex.kernels.rope(k.data() + i * nkv, h.n_head_kv, cs.data(), rp);
  }
  std::vector<const uint8_t*> kt, vt;
  store_kv(kvp, k, v, pos0, t, nkv, h.sliding_window, kt, vt);
  Vec o(q.size());
  AttentionArgs a;
  a.q = q.data();
  a.k_blocks = kt.data();
  a.v_blocks = vt.data();
  a.block_tokens = Qwen3TtsCodecState::kPage;
  a.row_bytes = nkv * static_cast<int64_t>(sizeof(float));
  a.out = o.data();
  a.n_q = t;
  a.pos0 = pos0;
  a.n_head = static_cast<int32_t>(h.n_head);
  a.n_head_kv = static_cast<int32_t>(h.n_head_kv);
  a.head_dim = static_cast<int32_t>(h.head_dim);
  a.window = h.sliding_window;
  a.scale = 1.0f / std::sqrt(static_cast<float>(h.head_dim));
  attention(ex.kernels, a, ex.pool);
  linear(ex, o.data(), t, L.wo, nullptr, n.data());
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < d; ++j) x[i * d + j] += L.attn_scale[j] * n[i * d + j];
  ex.kernels.rmsnorm(x.data(), L.ffn_norm.data(), n.data(), t, d, h.rms_eps);
  Vec g(static_cast<size_t>(t * h.n_ff)), u(g.size());
  linear(ex, n.data(), t, L.gate, nullptr, g.data());
  linear(ex, n.data(), t, L.up, nullptr, u.data());
  ex.kernels.silu(g.data(), t * h.n_ff);
  ex.kernels.mul(g.data(), u.data(), t * h.n_ff);
  linear(ex, g.data(), t, L.down, nullptr, n.data());
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < d; ++j) x[i * d + j] += L.ffn_scale[j] * n[i * d + j];
}

// quantizer -> pre_conv -> transformer: [t][latent_dim] at the frame rate.
Vec frames_to_latent(const Qwen3TtsCodecExec& ex, const Qwen3TtsCodecHparams& h, const W& w,
                     const int32_t* codes, int64_t t, Qwen3TtsCodecState& s, HistCursor& hc) {
  Vec lat = causal_conv(ex, w.pre_conv, quantize(ex, h, w, codes, t), t, hc);
  Vec x(static_cast<size_t>(t * h.hidden));
  linear(ex, lat.data(), t, w.input_proj, &w.input_proj_b, x.data());
  if (s.kv.size() < w.layers.size()) s.kv.resize(w.layers.size());
  for (size_t l = 0; l < w.layers.size(); ++l)
    transformer_layer(ex, h, w.layers[l], s.kv[l], x, t, s.pos);
  ex.kernels.rmsnorm(x.data(), w.final_norm.data(), x.data(), t, h.hidden, h.rms_eps);
  linear(ex, x.data(), t, w.output_proj, &w.output_proj_b, lat.data());
  return lat;
}

}  // namespace

void qwen3_tts_codec_forward(const Qwen3TtsCodecExec& ex, const Qwen3TtsCodecHparams& h,
                             const Qwen3TtsCodecWeights& w, const int32_t* codes, int64_t t,
                             Qwen3TtsCodecState& s, std::vector<float>& pcm) {
  if (t <= 0) return;
  HistCursor hc{s};
  Vec x = frames_to_latent(ex, h, w, codes, t, s, hc);
  int64_t n = t;  // rows of x
  for (size_t i = 0; i < w.upsample.size(); ++i) {
    x = trans_conv(ex, w.upsample[i], x, n, hc);
    n *= w.upsample[i].stride;
    convnext(ex, w.convnext[i], x, n, hc);
  }
  x = causal_conv(ex, w.dec_in, x, n, hc);
  for (const W::Block& b : w.blocks) {
    x = trans_conv(ex, b.up, snake(b.act, x), n, hc);
    n *= b.up.stride;
    for (const W::ResUnit& r : b.res) {
      Vec y = causal_conv(ex, r.conv1, snake(r.act1, x), n, hc);
      y = causal_conv(ex, r.conv2, snake(r.act2, y), n, hc);
      for (size_t j = 0; j < x.size(); ++j) x[j] += y[j];
    }
  }
  x = causal_conv(ex, w.conv_out, snake(w.act_out, x), n, hc);
  for (float v : x) pcm.push_back(std::clamp(v, -1.0f, 1.0f));
  s.pos += t;
}

}  // namespace edge
