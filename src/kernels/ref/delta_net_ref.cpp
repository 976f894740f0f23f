// Scalar reference of the Gated DeltaNet kernels (kernels/delta_net.h): the conv, the delta
// rule token by token and the gated RMSNorm as plain loops in the order the header writes
// the math; the chunk-wise form is the shared template (kernels/delta_net_blocking.h) over
// one-lane primitives, so the SIMD variants' chunk code is checked against the same
// algorithm at scalar rounding and the algorithm itself against the token-by-token loop
// (tests/kernels/delta_net_test.cpp).
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/delta_net_blocking.h"
#include "kernels/ref/ref_kernels.h"

namespace edge::ref {
namespace {

inline float silu1(float x) {
  return x / (1.0f + std::exp(-x));
}

// One-lane primitives for delta::Kernels (the chunk-wise form).
struct ScalarPrims {
  using V = float;
  static constexpr int kW = 1;
  static constexpr int kDecodeVecs = 1;
  static V zero() { return 0.0f; }
  static V set1(float x) { return x; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V load_n(const float* p, int64_t rem) { return rem > 0 ? *p : 0.0f; }
  static void store_n(float* p, int64_t rem, V v) {
    if (rem > 0) *p = v;
  }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V mul(V a, V b) { return a * b; }
  static V sub(V a, V b) { return a - b; }
  static V silu(V x) { return silu1(x); }
  static float hsum(V v) { return v; }
};

// x[n] / sqrt(|x|^2 + 1e-6) * s.
void l2_normalized(const float* x, int64_t n, float s, float* y) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float inv = s / std::sqrt(static_cast<float>(ss) + 1e-6f);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv;
}

}  // namespace

void delta_conv(const DeltaConvArgs& a, int64_t c0, int64_t c1) {
  CHECK(a.kernel >= 2 && a.kernel <= 8);
  const int K = a.kernel;
  const int64_t C = a.channels, xs = a.row_stride();
  float window[8];  // inputs t-K+1 .. t of one channel
  for (int64_t c = c0; c < c1; ++c) {
    for (int j = 0; j + 1 < K; ++j) window[j] = a.state[j * C + c];
    for (int64_t t = 0; t < a.n; ++t) {
      window[K - 1] = a.x[t * xs + c];
      float acc = 0.0f;
      for (int j = 0; j < K; ++j) acc += a.w[c * K + j] * window[j];
      a.out[t * xs + c] = silu1(acc);
      for (int j = 0; j + 1 < K; ++j) window[j] = window[j + 1];
    }
    for (int j = 0; j + 1 < K; ++j) a.state[j * C + c] = window[j];
  }
}

void delta_net_recurrent(const DeltaNetArgs& a, int32_t h0, int32_t h1, float* scratch) {
  const DeltaNetShape& sh = a.shape;
  const int64_t dk = sh.d_k, dv = sh.d_v;
  float* q = scratch;  // [d_k] q', then k' [d_k], recall [d_v], delta [d_v]
  float* k = q + dk;
  float* recall = k + dk;
  float* delta = recall + dv;
  for (int32_t h = h0; h < h1; ++h) {
    float* s = a.state + int64_t{h} * dk * dv;  // [d_k, d_v]
    const int64_t kh = sh.k_head_of(h);
    for (int64_t t = 0; t < a.n; ++t) {
      const float* row = a.qkv + t * a.qkv_stride;
      l2_normalized(row + kh * dk, dk, 1.0f / std::sqrt(static_cast<float>(dk)), q);
      l2_normalized(row + sh.key_dim() + kh * dk, dk, 1.0f, k);
      const float* v = row + 2 * sh.key_dim() + int64_t{h} * dv;
      const float decay = std::exp(a.g[t * sh.n_v_heads + h]);
      const float beta = a.beta[t * sh.n_v_heads + h];
      for (int64_t i = 0; i < dk * dv; ++i) s[i] *= decay;
      for (int64_t j = 0; j < dv; ++j) recall[j] = 0.0f;
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) recall[j] += s[i * dv + j] * k[i];
      for (int64_t j = 0; j < dv; ++j) delta[j] = beta * (v[j] - recall[j]);
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) s[i * dv + j] += k[i] * delta[j];
      float* o = a.out + t * sh.value_dim() + int64_t{h} * dv;
      for (int64_t j = 0; j < dv; ++j) o[j] = 0.0f;
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) o[j] += s[i * dv + j] * q[i];
    }
  }
}

void delta_net_chunked(const DeltaNetArgs& a, int32_t h0, int32_t h1, float* scratch) {
  delta::Kernels<ScalarPrims>::chunked(a, h0, h1, scratch);
}

void rmsnorm_gated(const float* x, const float* w, const float* z, float* y, int64_t rows,
                   int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(xr[i]) * xr[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / dim) + eps);
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = xr[i] * inv * w[i] * silu1(z[r * dim + i]);
  }
}

}  // namespace edge::ref
