// Scalar reference kernels (declarations shared by ref/*.cpp and dispatch.cpp).
#pragma once

#include "kernels/api.h"
#include "kernels/delta_net.h"

namespace edge::ref {

void matmul_f32(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                int64_t out, int64_t r0, int64_t r1, float* y, float* scratch);
void matmul_f16(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                int64_t out, int64_t r0, int64_t r1, float* y, float* scratch);
void matmul_bf16(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                 int64_t out, int64_t r0, int64_t r1, float* y, float* scratch);
void convert_row(DType t, const uint8_t* src, int64_t n, float* dst);
void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps);
void rope(float* x, int64_t n_heads, const float* cos_sin, const RopeParams& p);
void softmax(float* x, int64_t n);
void silu(float* x, int64_t n);
void gelu(float* x, int64_t n);
void mul(float* a, const float* b, int64_t n);
void add(float* a, const float* b, int64_t n);
void snake_beta(const float* x, int64_t rows, int64_t c, const float* alpha, const float* inv_beta,
                float* y);
void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch);
void delta_conv(const DeltaConvArgs& a, int64_t c0, int64_t c1);
// scratch: 2 * (d_k + d_v) floats.
void delta_net_recurrent(const DeltaNetArgs& a, int32_t h0, int32_t h1, float* scratch);
void delta_net_chunked(const DeltaNetArgs& a, int32_t h0, int32_t h1, float* scratch);
void rmsnorm_gated(const float* x, const float* w, const float* z, float* y, int64_t rows,
                   int64_t dim, float eps);

// Dot product with 16 independent partial sums: plain loops the compiler vectorises
// without -ffast-math (a single running sum cannot be reordered).
inline float dot(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace edge::ref
