// aarch64 Advanced SIMD elementwise ops: rmsnorm, softmax, silu, gelu, add, mul and RoPE
// (the dense matmuls and attention: dense_neon_mm.cpp). 4 f32 lanes per vector;
// a tail shorter than a vector runs the same arithmetic one lane at a time. Tested against
// the reference by tests/kernels/dense_simd_test.cpp.
#include <arm_neon.h>

#include <cmath>

#include "kernels/arm_neon/neon_math.h"
#include "kernels/dense_isa.h"

namespace edge {
namespace {

using neon::exp4;

// Applies f to x[0, n) four lanes at a time; the tail goes through a zero-padded vector.
template <typename F>
inline void map4(float* x, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(x + i, f(vld1q_f32(x + i)));
  if (i < n) {
    float buf[4] = {0, 0, 0, 0};
    for (int64_t j = i; j < n; ++j) buf[j - i] = x[j];
    vst1q_f32(buf, f(vld1q_f32(buf)));
    for (int64_t j = i; j < n; ++j) x[j] = buf[j - i];
  }
}

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    float32x4_t ss = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 4 <= dim; i += 4) {
      const float32x4_t v = vld1q_f32(xr + i);
      ss = vfmaq_f32(ss, v, v);
    }
    float s = vaddvq_f32(ss);
    for (; i < dim; ++i) s += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(s / static_cast<float>(dim) + eps);
    i = 0;
    for (; i + 4 <= dim; i += 4)
      vst1q_f32(yr + i, vmulq_f32(vmulq_n_f32(vld1q_f32(xr + i), inv), vld1q_f32(w + i)));
    for (; i < dim; ++i) yr[i] = xr[i] * inv * w[i];
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  int64_t i = 0;
  if (n >= 4) {
    float32x4_t m = vld1q_f32(x);
    for (i = 4; i + 4 <= n; i += 4) m = vmaxq_f32(m, vld1q_f32(x + i));
    mx = vmaxvq_f32(m);
  }
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  const float32x4_t vm = vdupq_n_f32(mx);
  map4(x, n, [&](float32x4_t v) { return exp4(vsubq_f32(v, vm)); });
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (i = 0; i + 4 <= n; i += 4) acc = vaddq_f32(acc, vld1q_f32(x + i));
  float sum = vaddvq_f32(acc);
  for (; i < n; ++i) sum += x[i];
  const float inv = 1.0f / sum;
  map4(x, n, [&](float32x4_t v) { return vmulq_n_f32(v, inv); });
}

void silu(float* x, int64_t n) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  map4(x, n, [&](float32x4_t v) { return vdivq_f32(v, vaddq_f32(one, exp4(vnegq_f32(v)))); });
}

// 0.5 v (1 + tanh(u)) = v e / (e + 1), e = exp(2u), u = sqrt(2/pi) (v + 0.044715 v^3):
// no cancellation for negative v.
void gelu(float* x, int64_t n) {
  const float32x4_t one = vdupq_n_f32(1.0f), c0 = vdupq_n_f32(2.0f * 0.7978845608028654f);
  const float32x4_t c1 = vdupq_n_f32(0.044715f);
  map4(x, n, [&](float32x4_t v) {
    const float32x4_t inner = vmulq_f32(c0, vfmaq_f32(v, vmulq_f32(c1, v), vmulq_f32(v, v)));
    const float32x4_t e = exp4(inner);
    return vmulq_f32(v, vdivq_f32(e, vaddq_f32(e, one)));
  });
}

void mul(float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(a + i, vmulq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
  for (; i < n; ++i) a[i] *= b[i];
}

void add(float* a, const float* b, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(a + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
  for (; i < n; ++i) a[i] += b[i];
}

// RoPE: every head rotated four pairs at a time by the angles of rope_angles(). NeoX
// pairs (i, i + half) are two contiguous runs; interleaved pairs (2i, 2i+1) are
// de-interleaved by vld2q.
void rope(float* x, int64_t n_heads, const float* cos_sin, const RopeParams& p) {
  const int32_t half = p.rotary_dim / 2;
  const float* c = cos_sin;
  const float* s = cos_sin + half;
  const bool inter = p.style == RopeStyle::kInterleaved;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * p.head_dim;
    int32_t i = 0;
    for (; i + 4 <= half; i += 4) {
      const float32x4_t vc = vld1q_f32(c + i), vs = vld1q_f32(s + i);
      if (inter) {
        float32x4x2_t ab = vld2q_f32(v + 2 * i);
        const float32x4_t a = ab.val[0], b = ab.val[1];
        ab.val[0] = vsubq_f32(vmulq_f32(a, vc), vmulq_f32(b, vs));
        ab.val[1] = vaddq_f32(vmulq_f32(a, vs), vmulq_f32(b, vc));
        vst2q_f32(v + 2 * i, ab);
      } else {
        const float32x4_t a = vld1q_f32(v + i), b = vld1q_f32(v + i + half);
        vst1q_f32(v + i, vsubq_f32(vmulq_f32(a, vc), vmulq_f32(b, vs)));
        vst1q_f32(v + i + half, vaddq_f32(vmulq_f32(a, vs), vmulq_f32(b, vc)));
      }
    }
    for (; i < half; ++i) {
      const int32_t a = inter ? 2 * i : i, b = inter ? 2 * i + 1 : i + half;
      const float v0 = v[a], v1 = v[b];
      v[a] = v0 * c[i] - v1 * s[i];
      v[b] = v0 * s[i] + v1 * c[i];
    }
  }
}

}  // namespace

void install_dense_neon_matmul_attention(KernelTable* t);  // dense_neon_mm.cpp

void install_dense_neon(KernelTable* t) {
  install_dense_neon_matmul_attention(t);
  t->rmsnorm = rmsnorm;
  t->softmax = softmax;
  t->silu = silu;
  t->gelu = gelu;
  t->mul = mul;
  t->add = add;
  t->rope = rope;
  install_delta_net_neon(t);
  install_snake_neon(t);
}

}  // namespace edge
