// Scalar matmul y[n, out] = x[n, in] . W[out, in]^T, rows [r0, r1) of the output.
// F16/BF16 rows are converted once into scratch, then dotted with every token's row, so
// the conversion cost is paid once per weight row whatever the batch width.
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "kernels/ref/ref_kernels.h"

namespace edge::ref {

namespace {

inline void dot_rows(const float* x, int64_t n, int64_t in, const float* wrow, int64_t out,
                     int64_t r, float* y) {
  for (int64_t t = 0; t < n; ++t) y[t * out + r] = dot(x + t * in, wrow, in);
}

}  // namespace

void matmul_f32(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                int64_t out, int64_t r0, int64_t r1, float* y, float* /*scratch*/) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* wrow = reinterpret_cast<const float*>(w + r * w_row_bytes);
    dot_rows(x, n, in, wrow, out, r, y);
  }
}

void matmul_f16(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                int64_t out, int64_t r0, int64_t r1, float* y, float* scratch) {
  for (int64_t r = r0; r < r1; ++r) {
    convert_row(DType::F16, w + r * w_row_bytes, in, scratch);
    dot_rows(x, n, in, scratch, out, r, y);
  }
}

void matmul_bf16(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                 int64_t out, int64_t r0, int64_t r1, float* y, float* scratch) {
  for (int64_t r = r0; r < r1; ++r) {
    convert_row(DType::BF16, w + r * w_row_bytes, in, scratch);
    dot_rows(x, n, in, scratch, out, r, y);
  }
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
