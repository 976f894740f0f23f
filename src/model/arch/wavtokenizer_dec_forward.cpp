// WavTokenizer decoder forward pass (graph in wavtokenizer_dec.h): the matmul-shaped work
// (convolutions through im2col, projections, attention) on the dispatched, threaded matmul;
// norms and the depthwise convolution on the scalar audio ops. Activations between blocks are
// channel-major [C][T] through the pos-net (convs and group norms want time contiguous) and
// time-major [T][C] through the ConvNeXt stack (layer norms and the pointwise MLP want channels
// contiguous).
#include <cmath>

#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/ref/audio_ref.h"
#include "model/arch/wavtokenizer_dec.h"

namespace edge {

namespace {

using Vec = std::vector<float>;

// F32 weight [rows, cols] as a view the dispatched matmul reads.
TensorView f32_view(const Vec& w, int64_t rows, int64_t cols) {
  TensorView v;
  v.dtype = DType::F32;
  v.shape = {rows, cols};
  v.data = reinterpret_cast<const uint8_t*>(w.data());
  v.nbytes = static_cast<uint64_t>(w.size() * sizeof(float));
  return v;
}

// y [T][out] = x [T][in] . w[out][in]^T (+ b[out]): the dispatched, threaded matmul, reading
// w in its own type.
void linear(const WavTokenizerExec& ex, const float* x, int64_t t, const TensorView& w,
            const Vec* b, float* y) {
  matmul(ex.kernels, x, t, w, y, ex.pool);
  const int64_t out = w.shape[0];
  if (b)
    for (int64_t i = 0; i < t; ++i) ex.kernels.add(y + i * out, b->data(), out);
}

// "Same" convolution [c_in][T] -> [c_out][T] (odd kernel, stride 1, dense) as one matmul:
// im2col rows [T][c_in * k] (index ci * k + j, the order of w [c_out][c_in][k]) times w.
Vec conv_same(const WavTokenizerExec& ex, const Vec& x, int64_t t, int64_t c_in, int64_t c_out,
              int64_t k, const TensorView& w, const Vec& b) {
  const int64_t pad = k / 2, ck = c_in * k;
  Vec cols(static_cast<size_t>(t * ck), 0.0f);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t ci = 0; ci < c_in; ++ci)
      for (int64_t j = 0; j < k; ++j) {
        const int64_t src = i + j - pad;
        if (src >= 0 && src < t) cols[i * ck + ci * k + j] = x[ci * t + src];
      }
  Vec yt(static_cast<size_t>(t * c_out));  // [T][c_out]
  linear(ex, cols.data(), t, w, &b, yt.data());
  Vec y(yt.size());
  ref::transpose(yt.data(), t, c_out, y.data());
  return y;
}

// Pos-net ResNet block on h [C][T]: h + conv2(swish(gn2(conv1(swish(gn1(h)))))).
void resnet_block(const WavTokenizerExec& ex, const WavTokenizerHparams& hp,
                  const WavTokenizerWeights::Resnet& r, Vec& h, int64_t t) {
  const int64_t c = hp.n_embd;
  Vec a(h.size());
  ref::group_norm(h.data(), c, t, hp.n_groups, hp.group_norm_eps, r.norm1_w.data(),
                  r.norm1_b.data(), a.data());
  ref::swish(a.data(), static_cast<int64_t>(a.size()));
  a = conv_same(ex, a, t, c, c, 3, r.conv1_w, r.conv1_b);
  ref::group_norm(a.data(), c, t, hp.n_groups, hp.group_norm_eps, r.norm2_w.data(),
                  r.norm2_b.data(), a.data());
  ref::swish(a.data(), static_cast<int64_t>(a.size()));
  a = conv_same(ex, a, t, c, c, 3, r.conv2_w, r.conv2_b);
  for (size_t i = 0; i < h.size(); ++i) h[i] += a[i];
}

// Pos-net attention block on h [C][T]: one head of width C over all T positions (not
// causal), q/k/v/out as k=1 convolutions, scores scaled by 1/sqrt(C).
void attention_block(const WavTokenizerExec& ex, const WavTokenizerHparams& hp,
                     const WavTokenizerWeights& w, Vec& h, int64_t t) {
  const int64_t c = hp.n_embd;
  Vec n(h.size());
  ref::group_norm(h.data(), c, t, hp.n_groups, hp.group_norm_eps, w.attn_norm_w.data(),
                  w.attn_norm_b.data(), n.data());
  Vec nt(n.size()), q(n.size()), k(n.size()), v(n.size());  // [T][C]
  ref::transpose(n.data(), c, t, nt.data());
  linear(ex, nt.data(), t, w.attn_q_w, &w.attn_q_b, q.data());
  linear(ex, nt.data(), t, w.attn_k_w, &w.attn_k_b, k.data());
  linear(ex, nt.data(), t, w.attn_v_w, &w.attn_v_b, v.data());
  Vec p(static_cast<size_t>(t * t));  // [T_q][T_k] = q . k^T
  linear(ex, q.data(), t, f32_view(k, t, c), nullptr, p.data());
  const float scale = 1.0f / std::sqrt(static_cast<float>(c));
  for (int64_t i = 0; i < t; ++i) {
    float* row = p.data() + i * t;
    for (int64_t j = 0; j < t; ++j) row[j] *= scale;
    ex.kernels.softmax(row, t);
  }
  ref::transpose(v.data(), t, c, n.data());                       // v^T [C][T]
  linear(ex, p.data(), t, f32_view(n, c, t), nullptr, q.data());  // o [T][C] = p . v
  linear(ex, q.data(), t, w.attn_o_w, &w.attn_o_b, k.data());
  ref::transpose(k.data(), t, c, n.data());  // back to [C][T]
  for (size_t i = 0; i < h.size(); ++i) h[i] += n[i];
}

// ConvNeXt block on the residual stream x [T][C].
void convnext_block(const WavTokenizerExec& ex, const WavTokenizerHparams& hp,
                    const WavTokenizerWeights::ConvNext& l, Vec& x, int64_t t) {
  const int64_t c = hp.n_embd, ff = hp.n_ff;
  Vec ct(x.size()), dw(x.size());
  ref::transpose(x.data(), t, c, ct.data());  // [C][T]
  const ref::Conv1dShape s{.c_in = c, .c_out = c, .kernel = 7, .groups = c, .pad = 3};
  ref::conv1d(s, ct.data(), t, l.dw_w.data(), l.dw_b.data(), dw.data());  // depthwise k7
  Vec a(x.size());
  ref::transpose(dw.data(), c, t, a.data());  // [T][C]
  ref::layer_norm(a.data(), t, c, hp.norm_eps, l.norm_w.data(), l.norm_b.data(), a.data());
  Vec mid(static_cast<size_t>(t * ff));
  linear(ex, a.data(), t, l.pw1_w, &l.pw1_b, mid.data());  // [T][n_ff]
  ex.kernels.gelu(mid.data(), t * ff);
  linear(ex, mid.data(), t, l.pw2_w, &l.pw2_b, a.data());  // [T][C]
  for (int64_t i = 0; i < t; ++i)
    for (int64_t ch = 0; ch < c; ++ch) x[i * c + ch] += l.gamma[ch] * a[i * c + ch];
}

}  // namespace

std::vector<float> wavtokenizer_forward(const WavTokenizerExec& ex, const WavTokenizerHparams& hp,
                                        const WavTokenizerWeights& w, const int32_t* codes,
                                        int64_t t) {
  const int64_t f = hp.n_features, c = hp.n_embd;
  Vec row(static_cast<size_t>(f)), e(static_cast<size_t>(f * t));  // e [F][T]
  for (int64_t i = 0; i < t; ++i) {
    embedding_row(ex.kernels, w.tok_embd, codes[i], row.data());
    for (int64_t j = 0; j < f; ++j) e[j * t + i] = row[j];
  }
  Vec h = conv_same(ex, e, t, f, c, 7, w.conv_in_w, w.conv_in_b);  // [C][T]
  resnet_block(ex, hp, w.resnet[0], h, t);
  resnet_block(ex, hp, w.resnet[1], h, t);
  attention_block(ex, hp, w, h, t);
  resnet_block(ex, hp, w.resnet[2], h, t);
  resnet_block(ex, hp, w.resnet[3], h, t);
  ref::group_norm(h.data(), c, t, hp.n_groups, hp.group_norm_eps, w.posnet_norm_w.data(),
                  w.posnet_norm_b.data(), h.data());
  Vec x(h.size());
  ref::transpose(h.data(), c, t, x.data());  // [T][C]
  ref::layer_norm(x.data(), t, c, hp.norm_eps, w.embd_norm_w.data(), w.embd_norm_b.data(),
                  x.data());
  for (const WavTokenizerWeights::ConvNext& l : w.convnext) convnext_block(ex, hp, l, x, t);
  ref::layer_norm(x.data(), t, c, hp.norm_eps, w.out_norm_w.data(), w.out_norm_b.data(), x.data());
  Vec out(static_cast<size_t>(t * hp.n_out));  // [T][n_fft + 2]
  linear(ex, x.data(), t, w.out_w, &w.out_b, out.data());
  return out;
}

}  // namespace edge
