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

// v's data with room for n floats. Buffers only grow, so a stream's later chunks (and the
// later operations of a chunk) reuse memory that is already mapped and never re-zero it.
float* room(Vec& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

// Row q of [hist ; x], where hist holds h rows and both have c columns.
const float* ext_row(const Vec& hist, int64_t h, const float* x, int64_t c, int64_t q) {
  return q < h ? hist.data() + q * c : x + (q - h) * c;
}

// hist [h][c] <- the last h rows of [hist ; x], x holding t rows.
void roll_hist(Vec& hist, int64_t h, const float* x, int64_t t, int64_t c) {
  if (h == 0) return;
  if (t >= h) {
    std::copy_n(x + (t - h) * c, h * c, hist.data());
    return;
  }
  std::copy(hist.begin() + t * c, hist.end(), hist.begin());
  std::copy_n(x, t * c, hist.data() + (h - t) * c);
}

// fn(r0, r1) over rows [0, t) of `cols` floats each: split among the pool's threads when
// the rows hold enough work to pay for a fork/join, else on the calling thread. Every row
// is computed the same way whichever thread runs it.
template <class F>
void for_rows(const Qwen3TtsCodecExec& ex, int64_t t, int64_t cols, const F& fn) {
  constexpr int64_t kMinParallelFloats = 1 << 14;
  if (t * cols < kMinParallelFloats || ex.pool.size() == 1 || t < 2) {
    fn(int64_t{0}, t);
    return;
  }
  ex.pool.run([&](int tid, int nth) {
    const auto [r0, r1] = ThreadPool::split(t, tid, nth);
    if (r0 < r1) fn(r0, r1);
  });
}

// y[i] += b for each of t rows of y [t][c].
void add_rows(const Qwen3TtsCodecExec& ex, float* y, int64_t t, const float* b, int64_t c) {
  for_rows(ex, t, c, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) ex.kernels.add(y + i * c, b, c);
  });
}

// x [t][c] += y [t][c].
void add_rows_of(const Qwen3TtsCodecExec& ex, float* x, const float* y, int64_t t, int64_t c) {
  for_rows(ex, t, c,
           [&](int64_t r0, int64_t r1) { ex.kernels.add(x + r0 * c, y + r0 * c, (r1 - r0) * c); });
}

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
  if (bias) add_rows(ex, y, t, bias->data(), w.shape[0]);
}

// Causal conv: x [t][c_in] after the (k-1)*dilation rows of hist -> y [t][c_out] (y must not
// overlap x). Output row i reads rows i + j * dilation of [hist ; x], the im2col columns
// [j * c_in, (j + 1) * c_in) (the kernel is tap-major); im2col tiles of kIm2colRows rows go
// through `cols`.
void causal_conv(const Qwen3TtsCodecExec& ex, const W::Conv& c, const float* x, int64_t t,
                 HistCursor& hc, Vec& cols, float* y) {
  const int64_t h = (c.k - 1) * c.dilation, ck = c.c_in * c.k;
  Vec& hist = hc.take(h, c.c_in);
  const TensorView w = c.matrix();
  if (c.k == 1) {
    linear(ex, x, t, w, &c.bias, y);
  } else {
    float* cb = room(cols, std::min(t, kIm2colRows) * ck);
    for (int64_t i0 = 0; i0 < t; i0 += kIm2colRows) {
      const int64_t n = std::min(kIm2colRows, t - i0);
      for_rows(ex, n, ck, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = 0; j < c.k; ++j)
            std::copy_n(ext_row(hist, h, x, c.c_in, i0 + i + j * c.dilation), c.c_in,
                        cb + i * ck + j * c.c_in);
      });
      linear(ex, cb, n, w, &c.bias, y + i0 * c.c_out);
    }
  }
  roll_hist(hist, h, x, t, c.c_in);
}

// Transposed conv (kernel taps * stride, trimmed to t * stride outputs): x [t][c_in] ->
// y [t * stride][c_out] (y must not overlap x); the state holds the taps - 1 previous input
// rows. Input rows [x[i], x[i-1], ..] go through `cols` in tiles of kIm2colRows.
void trans_conv(const Qwen3TtsCodecExec& ex, const W::TransConv& tc, const float* x, int64_t t,
                HistCursor& hc, Vec& cols, float* y) {
  const int64_t h = tc.taps - 1, width = tc.taps * tc.c_in, out = tc.stride * tc.c_out;
  Vec& hist = hc.take(h, tc.c_in);
  const TensorView w = f32_view(tc.w, out, width);
  float* cb = room(cols, std::min(t, kIm2colRows) * width);
  for (int64_t i0 = 0; i0 < t; i0 += kIm2colRows) {
    const int64_t n = std::min(kIm2colRows, t - i0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t tap = 0; tap < tc.taps; ++tap)  // input i - tap is row h + i - tap
        std::copy_n(ext_row(hist, h, x, tc.c_in, h + i0 + i - tap), tc.c_in,
                    cb + i * width + tap * tc.c_in);
    linear(ex, cb, n, w, nullptr, y + i0 * out);  // [n][stride][c_out]
  }
  add_rows(ex, y, t * tc.stride, tc.bias.data(), tc.c_out);
  roll_hist(hist, h, x, t, tc.c_in);
}

// SnakeBeta on x [t][C] -> y (may be x): x + inv_beta * sin(alpha * x)^2.
void snake(const Qwen3TtsCodecExec& ex, const W::Snake& s, const float* x, int64_t t, float* y) {
  const int64_t c = static_cast<int64_t>(s.alpha.size());
  for_rows(ex, t, c, [&](int64_t r0, int64_t r1) {
    ex.kernels.snake_beta(x + r0 * c, r1 - r0, c, s.alpha.data(), s.inv_beta.data(), y + r0 * c);
  });
}

// GELU, erf form (torch.nn.GELU()'s default; the kernel table's is the tanh form).
void gelu_erf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * float(M_SQRT1_2)));
}

// Depthwise causal conv k7 (with bias) of x [t][c] after the 6 rows of hist -> y [t][c].
void depthwise_causal(const W::ConvNext& b, const Vec& hist, const float* x, int64_t t, int64_t c,
                      float* y) {
  constexpr int64_t k = 7;
  for (int64_t i = 0; i < t; ++i) {
    float* yi = y + i * c;
    std::copy_n(b.dw_b.data(), c, yi);
    for (int64_t j = 0; j < k; ++j) {
      const float* src = ext_row(hist, k - 1, x, c, i + j);
      for (int64_t ch = 0; ch < c; ++ch) yi[ch] += b.dw_w[ch * k + j] * src[ch];
    }
  }
}

// Causal ConvNeXt block on x [t][C], in place: depthwise causal conv k7, layer norm (eps
// 1e-6), pw1 (C -> 4C), GELU, pw2, gamma, residual.
void convnext(const Qwen3TtsCodecExec& ex, const W::ConvNext& b, float* x, int64_t t,
              HistCursor& hc, Vec& tmp, Vec& mid_buf) {
  const int64_t c = static_cast<int64_t>(b.gamma.size());
  Vec& hist = hc.take(6, c);
  float* a = room(tmp, t * c);
  depthwise_causal(b, hist, x, t, c, a);
  roll_hist(hist, 6, x, t, c);
  ref::layer_norm(a, t, c, 1e-6f, b.norm_w.data(), b.norm_b.data(), a);
  float* mid = room(mid_buf, t * 4 * c);
  linear(ex, a, t, b.pw1, &b.pw1_b, mid);
  gelu_erf(mid, t * 4 * c);
  linear(ex, mid, t, b.pw2, &b.pw2_b, a);
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
  a.k_row_bytes = a.v_row_bytes = nkv * static_cast<int64_t>(sizeof(float));
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
  const Vec q = quantize(ex, h, w, codes, t);
  Vec lat(static_cast<size_t>(t * h.latent_dim));
  causal_conv(ex, w.pre_conv, q.data(), t, hc, s.scratch.cols, lat.data());
  Vec x(static_cast<size_t>(t * h.hidden));
  linear(ex, lat.data(), t, w.input_proj, &w.input_proj_b, x.data());
  if (s.kv.size() < w.layers.size()) s.kv.resize(w.layers.size());
  for (size_t l = 0; l < w.layers.size(); ++l)
    transformer_layer(ex, h, w.layers[l], s.kv[l], x, t, s.pos);
  ex.kernels.rmsnorm(x.data(), w.final_norm.data(), x.data(), t, h.hidden, h.rms_eps);
  linear(ex, x.data(), t, w.output_proj, &w.output_proj_b, lat.data());
  return lat;
}

// Decoder block b on x [n][c_in] (in sc.x): SnakeBeta, the transposed conv (the width halves,
// the rows grow by the stride), three residual units; the result is back in sc.x.
void decoder_block(const Qwen3TtsCodecExec& ex, const W::Block& b, int64_t& n, HistCursor& hc,
                   Qwen3TtsCodecState::Scratch& sc) {
  const int64_t c_in = b.up.c_in, c = b.up.c_out;
  snake(ex, b.act, sc.x.data(), n, room(sc.y, n * c_in));
  trans_conv(ex, b.up, sc.y.data(), n, hc, sc.cols, room(sc.x, n * b.up.stride * c));
  n *= b.up.stride;
  float* x = sc.x.data();
  float* a = room(sc.y, n * c);
  float* m = room(sc.z, n * c);
  for (const W::ResUnit& r : b.res) {
    snake(ex, r.act1, x, n, a);
    causal_conv(ex, r.conv1, a, n, hc, sc.cols, m);
    snake(ex, r.act2, m, n, m);
    causal_conv(ex, r.conv2, m, n, hc, sc.cols, a);
    add_rows_of(ex, x, a, n, c);
  }
}

}  // namespace

void qwen3_tts_codec_forward(const Qwen3TtsCodecExec& ex, const Qwen3TtsCodecHparams& h,
                             const Qwen3TtsCodecWeights& w, const int32_t* codes, int64_t t,
                             Qwen3TtsCodecState& s, std::vector<float>& pcm) {
  if (t <= 0) return;
  HistCursor hc{s};
  Qwen3TtsCodecState::Scratch& sc = s.scratch;
  Vec lat = frames_to_latent(ex, h, w, codes, t, s, hc);
  int64_t n = t;  // rows of the activation
  const float* cur = lat.data();
  for (size_t i = 0; i < w.upsample.size(); ++i) {
    const W::TransConv& up = w.upsample[i];
    Vec& dst = i % 2 ? sc.x : sc.y;  // never the buffer cur points into
    trans_conv(ex, up, cur, n, hc, sc.cols, room(dst, n * up.stride * up.c_out));
    n *= up.stride;
    convnext(ex, w.convnext[i], dst.data(), n, hc, sc.z, sc.cols);
    cur = dst.data();
  }
  Vec& in = w.upsample.size() % 2 ? sc.y : sc.x;  // the buffer cur is in
  Vec& out = &in == &sc.x ? sc.y : sc.x;
  causal_conv(ex, w.dec_in, cur, n, hc, sc.cols, room(out, n * w.dec_in.c_out));
  if (&out != &sc.x) sc.x.swap(out);
  for (const W::Block& b : w.blocks) decoder_block(ex, b, n, hc, sc);
  const int64_t c = w.conv_out.c_in;
  snake(ex, w.act_out, sc.x.data(), n, room(sc.y, n * c));
  float* y = room(sc.z, n * w.conv_out.c_out);
  causal_conv(ex, w.conv_out, sc.y.data(), n, hc, sc.cols, y);
  for (int64_t i = 0; i < n * w.conv_out.c_out; ++i) pcm.push_back(std::clamp(y[i], -1.0f, 1.0f));
  s.pos += t;
}

}  // namespace edge
