// Whisper-style encoder forward pass (graph in whisper_enc.h). Convolutions go through
// im2col and the dispatched matmul; attention through the kernels' attention with every
// query placed after the last key (a causal kernel sees all keys then: bidirectional);
// layer norms on the scalar audio ops. Activations are time-major [T][E] from the second
// convolution on.
#include <cmath>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/ref/audio_ref.h"
#include "model/arch/encoder_common.h"
#include "model/arch/whisper_enc.h"

namespace edge {

namespace {

using Vec = std::vector<float>;

// y [t][out] = x [t][in] . w^T (+ b).
void linear(const WhisperEncExec& ex, const float* x, int64_t t, const TensorView& w, const Vec* b,
            float* y) {
  matmul(ex.kernels, x, t, w, y, ex.pool);
  const int64_t out = w.shape[0];
  if (b)
    for (int64_t i = 0; i < t; ++i) ex.kernels.add(y + i * out, b->data(), out);
}

// Convolution k3, pad 1, stride s as one matmul over im2col rows [t_out][c_in * 3] (index
// ci * 3 + j, the order of w [c_out][c_in][3]). at(ci, i) reads input channel ci at time i.
template <typename At>
Vec conv3(const WhisperEncExec& ex, At at, int64_t t_in, int64_t c_in, int64_t stride,
          const TensorView& w, const Vec& b) {
  const int64_t t_out = (t_in - 1) / stride + 1, ck = c_in * 3;
  Vec cols(static_cast<size_t>(t_out * ck), 0.0f);
  for (int64_t o = 0; o < t_out; ++o)
    for (int64_t j = 0; j < 3; ++j) {
      const int64_t src = o * stride + j - 1;
      if (src < 0 || src >= t_in) continue;
      for (int64_t ci = 0; ci < c_in; ++ci) cols[o * ck + ci * 3 + j] = at(ci, src);
    }
  Vec y(static_cast<size_t>(t_out * w.shape[0]));  // [t_out][c_out]
  linear(ex, cols.data(), t_out, w, &b, y.data());
  gelu_erf(y.data(), static_cast<int64_t>(y.size()));
  return y;
}

void block(const WhisperEncExec& ex, const WhisperEncHparams& h, const WhisperEncWeights::Layer& l,
           Vec& x, int64_t t) {
  const int64_t e = h.n_embd;
  Vec n(x.size()), q(x.size()), k(x.size()), v(x.size());
  ref::layer_norm(x.data(), t, e, h.eps, l.ln1_w.data(), l.ln1_b.data(), n.data());
  linear(ex, n.data(), t, l.q_w, &l.q_b, q.data());
  linear(ex, n.data(), t, l.k_w, nullptr, k.data());
  linear(ex, n.data(), t, l.v_w, &l.v_b, v.data());
  attention_bidirectional(ex.kernels, ex.pool, q.data(), k.data(), v.data(), t,
                          static_cast<int32_t>(h.n_head), static_cast<int32_t>(h.head_dim()),
                          n.data());
  linear(ex, n.data(), t, l.o_w, &l.o_b, q.data());
  ex.kernels.add(x.data(), q.data(), t * e);
  ref::layer_norm(x.data(), t, e, h.eps, l.ln2_w.data(), l.ln2_b.data(), n.data());
  Vec mid(static_cast<size_t>(t * h.n_ff));
  linear(ex, n.data(), t, l.up_w, &l.up_b, mid.data());
  gelu_erf(mid.data(), t * h.n_ff);
  linear(ex, mid.data(), t, l.down_w, &l.down_b, q.data());
  ex.kernels.add(x.data(), q.data(), t * e);
}

// Ultravox: stack k rows (zero-padded), RMS norm, mlp.1, SwiGLU (SiLU on the second
// half), RMS norm, mlp.2. x [t][E] -> [ceil(t / k)][P].
Vec ultravox_project(const WhisperEncExec& ex, const WhisperEncHparams& h,
                     const WhisperEncWeights& w, Vec x, int64_t t) {
  const int64_t ke = h.stack * h.n_embd, rows = (t + h.stack - 1) / h.stack;
  x.resize(static_cast<size_t>(rows * ke), 0.0f);  // row-major stacking is a reshape
  ex.kernels.rmsnorm(x.data(), w.norm_pre.data(), x.data(), rows, ke, 1e-6f);
  const int64_t hh = h.n_mm_ff, half = hh / 2;
  Vec mid(static_cast<size_t>(rows * hh)), g(static_cast<size_t>(rows * half));
  linear(ex, x.data(), rows, w.mlp1_w, nullptr, mid.data());
  for (int64_t r = 0; r < rows; ++r) {
    float* m = mid.data() + r * hh;
    std::copy(m + half, m + hh, g.data() + r * half);
    ex.kernels.silu(g.data() + r * half, half);
    ex.kernels.mul(g.data() + r * half, m, half);
  }
  ex.kernels.rmsnorm(g.data(), w.norm_mid.data(), g.data(), rows, half, 1e-6f);
  Vec out(static_cast<size_t>(rows * h.n_out));
  linear(ex, g.data(), rows, w.mlp2_w, nullptr, out.data());
  return out;
}

}  // namespace

std::vector<float> whisper_enc_forward(const WhisperEncExec& ex, const WhisperEncHparams& h,
                                       const WhisperEncWeights& w, const float* mel, int64_t t) {
  CHECK(t > 0 && t % 2 == 0 && t / 2 <= h.n_ctx);
  const int64_t e = h.n_embd;
  // mel [n_mel][t] -> [t][E] -> [t/2][E]
  Vec c1 = conv3(
      ex, [&](int64_t ci, int64_t i) { return mel[ci * t + i]; }, t, h.n_mel, 1, w.conv1_w,
      w.conv1_b);
  Vec x = conv3(
      ex, [&](int64_t ci, int64_t i) { return c1[i * e + ci]; }, t, e, 2, w.conv2_w, w.conv2_b);
  int64_t n = t / 2;
  ex.kernels.add(x.data(), w.pos.data(), n * e);
  for (const WhisperEncWeights::Layer& l : w.layers) block(ex, h, l, x, n);
  if (h.projector == AudioProjector::kQwen2a) {  // average pool 2, stride 2
    for (int64_t i = 0; i < n / 2; ++i)
      for (int64_t c = 0; c < e; ++c)
        x[i * e + c] = 0.5f * (x[2 * i * e + c] + x[(2 * i + 1) * e + c]);
    n /= 2;
    x.resize(static_cast<size_t>(n * e));
  }
  ref::layer_norm(x.data(), n, e, h.eps, w.post_ln_w.data(), w.post_ln_b.data(), x.data());
  Vec out;
  if (h.projector == AudioProjector::kUltravox) {
    out = ultravox_project(ex, h, w, std::move(x), n);
  } else {
    out.resize(static_cast<size_t>(n * h.n_out));
    linear(ex, x.data(), n, w.fc_w, &w.fc_b, out.data());
  }
  out.resize(static_cast<size_t>(h.tokens_for_frames(t) * h.n_out));  // llama.cpp's count
  return out;
}

}  // namespace edge
