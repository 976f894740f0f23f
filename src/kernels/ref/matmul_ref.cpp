// Scalar matmul y[n, out] = x[n, in] . W[out, in]^T, rows [r0, r1) of the output.
// Weight rows are taken kMatmulRowTile at a time: each token's x row is then read once per
// tile instead of once per row (prefill is bound by re-reading x otherwise), and F16/BF16
// rows are converted once into scratch whatever the batch width.
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "kernels/ref/ref_kernels.h"

namespace edge::ref {

namespace {

// out[j] = x . w[j] for the kMatmulRowTile rows w[0..3]; independent partial sums per lane
// so the loop vectorises without reassociation flags.
inline void dot_tile(const float* x, const float* const* w, int64_t n, float* out) {
  constexpr int kLanes = 8;
  float acc[kMatmulRowTile][kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float xv = x[i + l];
      acc[0][l] += xv * w[0][i + l];
      acc[1][l] += xv * w[1][i + l];
      acc[2][l] += xv * w[2][i + l];
      acc[3][l] += xv * w[3][i + l];
    }
  for (int j = 0; j < kMatmulRowTile; ++j) {
    float s = 0.0f;
    for (int l = 0; l < kLanes; ++l) s += acc[j][l];
    for (int64_t k = i; k < n; ++k) s += x[k] * w[j][k];
    out[j] = s;
  }
}

static_assert(kMatmulRowTile == 4, "dot_tile unrolls four rows");

// Rows [r0, r1) with row pointers from `row(r, slot)` (slot < kMatmulRowTile).
template <typename RowFn>
void matmul_tiled(const float* x, int64_t n, int64_t in, int64_t out, int64_t r0, int64_t r1,
                  float* y, RowFn row) {
  int64_t r = r0;
  for (; r + kMatmulRowTile <= r1; r += kMatmulRowTile) {
    const float* w[kMatmulRowTile];
    for (int j = 0; j < kMatmulRowTile; ++j) w[j] = row(r + j, j);
    float o[kMatmulRowTile];
    for (int64_t t = 0; t < n; ++t) {
      dot_tile(x + t * in, w, in, o);
      for (int j = 0; j < kMatmulRowTile; ++j) y[t * out + r + j] = o[j];
    }
  }
  for (; r < r1; ++r) {  // tail rows
    const float* w = row(r, 0);
    for (int64_t t = 0; t < n; ++t) y[t * out + r] = dot(x + t * in, w, in);
  }
}

void matmul_half(DType t, const float* x, int64_t n, int64_t in, const uint8_t* w,
                 uint64_t w_row_bytes, int64_t out, int64_t r0, int64_t r1, float* y,
                 float* scratch) {
  matmul_tiled(x, n, in, out, r0, r1, y, [&](int64_t r, int slot) {
    float* dst = scratch + slot * in;
    convert_row(t, w + r * w_row_bytes, in, dst);
    return static_cast<const float*>(dst);
  });
}

}  // namespace

void matmul_f32(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                int64_t out, int64_t r0, int64_t r1, float* y, float* /*scratch*/) {
  matmul_tiled(x, n, in, out, r0, r1, y, [&](int64_t r, int) {
    return reinterpret_cast<const float*>(w + r * w_row_bytes);
  });
}

void matmul_f16(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                int64_t out, int64_t r0, int64_t r1, float* y, float* scratch) {
  matmul_half(DType::F16, x, n, in, w, w_row_bytes, out, r0, r1, y, scratch);
}

void matmul_bf16(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                 int64_t out, int64_t r0, int64_t r1, float* y, float* scratch) {
  matmul_half(DType::BF16, x, n, in, w, w_row_bytes, out, r0, r1, y, scratch);
}

void convert_row(DType t, const uint8_t* src, int64_t n, float* dst) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::F16: {
      const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::BF16: {
      const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    default:
      CHECK_MSG(false, "convert_row: unsupported dtype");
  }
}

}  // namespace edge::ref
