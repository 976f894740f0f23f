// Scalar norm, RoPE, softmax and activations.
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace edge::ref {

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    float ss = 0.0f;
    for (int64_t i = 0; i < dim; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * inv * w[i];
  }
}

void rope(float* x, int64_t n_heads, const float* cos_sin, const RopeParams& p) {
  const int32_t half = p.rotary_dim / 2;
  const float* c = cos_sin;
  const float* s = cos_sin + half;
  // Head outer, pairs inner, one loop per pair style: contiguous runs the compiler
  // vectorises. Interleaved: (2i, 2i+1). NeoX: (i, i + half).
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * p.head_dim;
    if (p.style == RopeStyle::kInterleaved) {
      for (int32_t i = 0; i < half; ++i) {
        const float v0 = v[2 * i], v1 = v[2 * i + 1];
        v[2 * i] = v0 * c[i] - v1 * s[i];
        v[2 * i + 1] = v0 * s[i] + v1 * c[i];
      }
    } else {
      for (int32_t i = 0; i < half; ++i) {
        const float v0 = v[i], v1 = v[i + half];
        v[i] = v0 * c[i] - v1 * s[i];
        v[i + half] = v0 * s[i] + v1 * c[i];
      }
    }
  }
}

}  // namespace edge::ref

namespace edge {

void rope_angles(int64_t pos, const RopeParams& p, float* cos_sin) {
  const int32_t half = p.rotary_dim / 2;
  const float fpos = static_cast<float>(pos) * p.pos_scale;
  for (int32_t i = 0; i < half; ++i) {
    float freq = 1.0f / std::pow(p.theta, static_cast<float>(2 * i) / static_cast<float>(p.rotary_dim));
    if (p.freq_factors) freq /= p.freq_factors[i];
    const float angle = fpos * freq;
    cos_sin[i] = std::cos(angle);
    cos_sin[half + i] = std::sin(angle);
    if (p.mscale != 1.0f) cos_sin[i] *= p.mscale, cos_sin[half + i] *= p.mscale;
  }
}

}  // namespace edge

namespace edge::ref {

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void silu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void gelu(float* x, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
  }
}

void mul(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] *= b[i];
}

void add(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void snake_beta(const float* x, int64_t rows, int64_t c, const float* alpha, const float* inv_beta,
                float* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float v = x[r * c + ch], s = std::sin(v * alpha[ch]);
      y[r * c + ch] = v + inv_beta[ch] * (s * s);
    }
}

}  // namespace edge::ref
