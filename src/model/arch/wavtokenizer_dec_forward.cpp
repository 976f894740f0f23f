// WavTokenizer decoder forward pass (graph in wavtokenizer_dec.h), on the scalar audio
// ops. Activations between blocks are channel-major [C][T] through the pos-net (convs and
// group norms want time contiguous) and time-major [T][C] through the ConvNeXt stack
// (layer norms and the pointwise MLP want channels contiguous).
#include <cmath>

#include "kernels/ref/audio_ref.h"
#include "kernels/ref/ref_kernels.h"
#include "model/arch/wavtokenizer_dec.h"

namespace edge {

namespace {

using Vec = std::vector<float>;

// y [T][out] = x [T][in] . w[out][in]^T + b[out]
void linear(const float* x, int64_t t, int64_t in, const Vec& w, const Vec& b, int64_t out,
            float* y) {
  for (int64_t i = 0; i < t; ++i)
    for (int64_t o = 0; o < out; ++o)
      y[i * out + o] = b[o] + ref::dot(x + i * in, w.data() + o * in, in);
}

// "Same" convolution [c_in][T] -> [c_out][T] (odd kernel, stride 1).
Vec conv_same(const Vec& x, int64_t t, int64_t c_in, int64_t c_out, int64_t k, int64_t groups,
              const Vec& w, const Vec& b) {
  Vec y(static_cast<size_t>(c_out * t));
  const ref::Conv1dShape s{
      .c_in = c_in, .c_out = c_out, .kernel = k, .groups = groups, .pad = k / 2};
  ref::conv1d(s, x.data(), t, w.data(), b.data(), y.data());  // shapes fixed by the schema
  return y;
}

// Pos-net ResNet block on h [C][T]: h + conv2(swish(gn2(conv1(swish(gn1(h)))))).
void resnet_block(const WavTokenizerHparams& hp, const WavTokenizerWeights::Resnet& r, Vec& h,
                  int64_t t) {
  const int64_t c = hp.n_embd;
  Vec a(h.size());
  ref::group_norm(h.data(), c, t, hp.n_groups, hp.group_norm_eps, r.norm1_w.data(),
                  r.norm1_b.data(), a.data());
  ref::swish(a.data(), static_cast<int64_t>(a.size()));
  a = conv_same(a, t, c, c, 3, 1, r.conv1_w, r.conv1_b);
  ref::group_norm(a.data(), c, t, hp.n_groups, hp.group_norm_eps, r.norm2_w.data(),
                  r.norm2_b.data(), a.data());
  ref::swish(a.data(), static_cast<int64_t>(a.size()));
  a = conv_same(a, t, c, c, 3, 1, r.conv2_w, r.conv2_b);
  for (size_t i = 0; i < h.size(); ++i) h[i] += a[i];
}

// Pos-net attention block on h [C][T]: one head of width C over all T positions (not
// causal), q/k/v/out as k=1 convolutions, scores scaled by 1/sqrt(C).
void attention_block(const WavTokenizerHparams& hp, const WavTokenizerWeights& w, Vec& h,
                     int64_t t) {
  const int64_t c = hp.n_embd;
  Vec n(h.size());
  ref::group_norm(h.data(), c, t, hp.n_groups, hp.group_norm_eps, w.attn_norm_w.data(),
                  w.attn_norm_b.data(), n.data());
  // Time-major copies so each position's vector is contiguous: [T][C].
  Vec nt(n.size()), q(n.size()), k(n.size()), v(n.size());
  ref::transpose(n.data(), c, t, nt.data());
  linear(nt.data(), t, c, w.attn_q_w, w.attn_q_b, c, q.data());
  linear(nt.data(), t, c, w.attn_k_w, w.attn_k_b, c, k.data());
  linear(nt.data(), t, c, w.attn_v_w, w.attn_v_b, c, v.data());
  const float scale = 1.0f / std::sqrt(static_cast<float>(c));
  Vec p(static_cast<size_t>(t)), o(n.size(), 0.0f);  // o [T][C]
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = 0; j < t; ++j) p[j] = scale * ref::dot(q.data() + i * c, k.data() + j * c, c);
    ref::softmax(p.data(), t);
    float* oi = o.data() + i * c;
    for (int64_t j = 0; j < t; ++j)
      for (int64_t ch = 0; ch < c; ++ch) oi[ch] += p[j] * v[j * c + ch];
  }
  linear(o.data(), t, c, w.attn_o_w, w.attn_o_b, c, q.data());  // q reused: [T][C]
  ref::transpose(q.data(), t, c, n.data());                     // back to [C][T]
  for (size_t i = 0; i < h.size(); ++i) h[i] += n[i];
}

// ConvNeXt block on the residual stream x [T][C].
void convnext_block(const WavTokenizerHparams& hp, const WavTokenizerWeights::ConvNext& l, Vec& x,
                    int64_t t) {
  const int64_t c = hp.n_embd, ff = hp.n_ff;
  Vec ct(x.size());
  ref::transpose(x.data(), t, c, ct.data());          // [C][T]
  ct = conv_same(ct, t, c, c, 7, c, l.dw_w, l.dw_b);  // depthwise k7
  Vec a(x.size());
  ref::transpose(ct.data(), c, t, a.data());  // [T][C]
  ref::layer_norm(a.data(), t, c, hp.norm_eps, l.norm_w.data(), l.norm_b.data(), a.data());
  Vec mid(static_cast<size_t>(t * ff));
  linear(a.data(), t, c, l.pw1_w, l.pw1_b, ff, mid.data());  // [T][n_ff]
  ref::gelu(mid.data(), t * ff);
  linear(mid.data(), t, ff, l.pw2_w, l.pw2_b, c, a.data());  // [T][C]
  for (int64_t i = 0; i < t; ++i)
    for (int64_t ch = 0; ch < c; ++ch) x[i * c + ch] += l.gamma[ch] * a[i * c + ch];
}

}  // namespace

std::vector<float> wavtokenizer_forward(const WavTokenizerHparams& hp, const WavTokenizerWeights& w,
                                        const int32_t* codes, int64_t t) {
  const int64_t f = hp.n_features, c = hp.n_embd;
  Vec e(static_cast<size_t>(f * t));  // [F][T]
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < f; ++j) e[j * t + i] = w.tok_embd[codes[i] * f + j];
  Vec h = conv_same(e, t, f, c, 7, 1, w.conv_in_w, w.conv_in_b);  // [C][T]
  resnet_block(hp, w.resnet[0], h, t);
  resnet_block(hp, w.resnet[1], h, t);
  attention_block(hp, w, h, t);
  resnet_block(hp, w.resnet[2], h, t);
  resnet_block(hp, w.resnet[3], h, t);
  ref::group_norm(h.data(), c, t, hp.n_groups, hp.group_norm_eps, w.posnet_norm_w.data(),
                  w.posnet_norm_b.data(), h.data());
  Vec x(h.size());
  ref::transpose(h.data(), c, t, x.data());  // [T][C]
  ref::layer_norm(x.data(), t, c, hp.norm_eps, w.embd_norm_w.data(), w.embd_norm_b.data(),
                  x.data());
  for (const WavTokenizerWeights::ConvNext& l : w.convnext) convnext_block(hp, l, x, t);
  ref::layer_norm(x.data(), t, c, hp.norm_eps, w.out_norm_w.data(), w.out_norm_b.data(), x.data());
  Vec out(static_cast<size_t>(t * hp.n_out));  // [T][n_fft + 2]
  linear(x.data(), t, c, w.out_w, w.out_b, hp.n_out, out.data());
  return out;
}

}  // namespace edge
