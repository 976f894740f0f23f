// SigLIP/CLIP ViT forward and the gemma3 / mlp projectors (graph in clip_vision.h). The
// matmuls and the attention go through the kernel table (kernels/api.h) the LM uses.
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/ref/audio_ref.h"
#include "model/arch/clip_vision.h"
#include "model/arch/encoder_common.h"

namespace edge {

namespace {

using Vec = std::vector<float>;

// y [t][out] = x [t][in] . w^T (+ b).
void affine(const ClipVisionExec& ex, const float* x, int64_t t, const TensorView& w, const Vec& b,
            float* y) {
  linear_rows(ex.kernels, ex.pool, x, t, w, b, y);
}

// GELU (tanh form, ggml_gelu) or quick GELU x * sigmoid(1.702 x) (CLIP), in place.
void activation(const ClipVisionExec& ex, bool gelu, float* x, int64_t n) {
  if (gelu) {
    ex.kernels.gelu(x, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
}

// im2col of the P x P patches of pixels [3][S][S]: rows [n][3 P P] in (c, ky, kx) order,
// the order of v.patch_embd [E][3][P][P]; patches row-major over the grid.
Vec patch_rows(const ClipVisionHparams& h, const float* pixels) {
  const int64_t s = h.image_size, p = h.patch_size, g = h.patches_per_side(), k = 3 * p * p;
  Vec cols(static_cast<size_t>(h.n_patches() * k));
  for (int64_t py = 0; py < g; ++py)
    for (int64_t px = 0; px < g; ++px) {
      float* row = cols.data() + (py * g + px) * k;
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t ky = 0; ky < p; ++ky)
          for (int64_t kx = 0; kx < p; ++kx)
            row[(c * p + ky) * p + kx] = pixels[(c * s + py * p + ky) * s + px * p + kx];
    }
  return cols;
}

// x [t][E] += out(attn(LN1(x))); x += down(act(up(LN2(x)))).
void block(const ClipVisionExec& ex, const ClipVisionHparams& h, const ClipVisionWeights::Layer& l,
           Vec& x, int64_t t) {
  const int64_t e = h.n_embd;
  Vec n(x.size()), q(x.size()), k(x.size()), v(x.size()), o(x.size());
  ref::layer_norm(x.data(), t, e, h.eps, l.ln1_w.data(), l.ln1_b.data(), n.data());
  const TensorView* ws[3] = {&l.q_w, &l.k_w, &l.v_w};
  float* ys[3] = {q.data(), k.data(), v.data()};
  matmul_group(ex.kernels, n.data(), t, ws, ys, ex.pool);
  for (int64_t i = 0; i < t; ++i) {
    ex.kernels.add(q.data() + i * e, l.q_b.data(), e);
    ex.kernels.add(k.data() + i * e, l.k_b.data(), e);
    ex.kernels.add(v.data() + i * e, l.v_b.data(), e);
  }
  attention_bidirectional(ex.kernels, ex.pool, q.data(), k.data(), v.data(), t,
                          static_cast<int32_t>(h.n_head), static_cast<int32_t>(h.head_dim()),
                          o.data());
  affine(ex, o.data(), t, l.o_w, l.o_b, n.data());
  ex.kernels.add(x.data(), n.data(), t * e);
  ref::layer_norm(x.data(), t, e, h.eps, l.ln2_w.data(), l.ln2_b.data(), n.data());
  Vec up(static_cast<size_t>(t * h.n_ff));
  affine(ex, n.data(), t, l.up_w, l.up_b, up.data());
  activation(ex, h.use_gelu, up.data(), t * h.n_ff);
  affine(ex, up.data(), t, l.down_w, l.down_b, n.data());
  ex.kernels.add(x.data(), n.data(), t * e);
}

// gemma3: average pool k x k over the patch grid, RMS norm * soft_emb_norm, projection.
Vec gemma3_projector(const ClipVisionExec& ex, const ClipVisionHparams& h,
                     const ClipVisionWeights& w, const Vec& x) {
  const int64_t e = h.n_embd, g = h.patches_per_side(), k = h.pool, go = g / k;
  Vec pooled(static_cast<size_t>(go * go * e), 0.0f);
  const float inv = 1.0f / static_cast<float>(k * k);
  for (int64_t oy = 0; oy < go; ++oy)
    for (int64_t ox = 0; ox < go; ++ox) {
      float* dst = pooled.data() + (oy * go + ox) * e;
      for (int64_t dy = 0; dy < k; ++dy)
        for (int64_t dx = 0; dx < k; ++dx)
          ex.kernels.add(dst, x.data() + ((oy * k + dy) * g + ox * k + dx) * e, e);
      for (int64_t c = 0; c < e; ++c) dst[c] *= inv;
    }
  ex.kernels.rmsnorm(pooled.data(), w.soft_norm.data(), pooled.data(), go * go, e, h.eps);
  Vec out(static_cast<size_t>(go * go * h.n_out));
  matmul(ex.kernels, pooled.data(), go * go, w.in_proj, out.data(), ex.pool);
  return out;
}

// mlp (LLaVA): the patch rows (CLS dropped) through mm.0, GELU, mm.2.
Vec mlp_projector(const ClipVisionExec& ex, const ClipVisionHparams& h, const ClipVisionWeights& w,
                  const Vec& x) {
  const int64_t n = h.n_patches(), first = h.class_embd ? 1 : 0;
  Vec mid(static_cast<size_t>(n * h.n_mm_ff)), out(static_cast<size_t>(n * h.n_out));
  affine(ex, x.data() + first * h.n_embd, n, w.mm0_w, w.mm0_b, mid.data());
  ex.kernels.gelu(mid.data(), n * h.n_mm_ff);
  affine(ex, mid.data(), n, w.mm2_w, w.mm2_b, out.data());
  return out;
}

}  // namespace

std::vector<float> clip_vision_forward(const ClipVisionExec& ex, const ClipVisionHparams& h,
                                       const ClipVisionWeights& w, const float* pixels) {
  const int64_t e = h.n_embd, n = h.n_patches(), first = h.class_embd ? 1 : 0, t = n + first;
  Vec x(static_cast<size_t>(t * e));
  {
    const Vec cols = patch_rows(h, pixels);
    affine(ex, cols.data(), n, w.patch_w, w.patch_b, x.data() + first * e);
  }
  if (h.class_embd) std::copy(w.cls.begin(), w.cls.end(), x.begin());
  ex.kernels.add(x.data(), w.pos.data(), t * e);
  if (h.pre_ln)
    ref::layer_norm(x.data(), t, e, h.eps, w.pre_ln_w.data(), w.pre_ln_b.data(), x.data());
  for (int64_t l = 0; l < h.blocks_run(); ++l) block(ex, h, w.layers[static_cast<size_t>(l)], x, t);
  if (h.post_ln)
    ref::layer_norm(x.data(), t, e, h.eps, w.post_ln_w.data(), w.post_ln_b.data(), x.data());
  return h.projector == VisionProjector::kGemma3 ? gemma3_projector(ex, h, w, x)
                                                 : mlp_projector(ex, h, w, x);
}

}  // namespace edge
