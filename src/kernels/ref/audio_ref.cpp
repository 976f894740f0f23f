// Scalar audio ops: accumulation in double where a sum spans a whole group or row, so the
// reference does not drift with sequence length (a group norm sums C/G * T values).
#include "kernels/ref/audio_ref.h"

#include <algorithm>
#include <cmath>

namespace edge::ref {

bool conv1d(const Conv1dShape& s, const float* x, int64_t t_in, const float* w, const float* bias,
            float* y) {
  if (s.groups <= 0 || s.kernel <= 0 || s.pad < 0 || s.c_in % s.groups || s.c_out % s.groups)
    return false;
  const int64_t t_out = conv1d_out_len(s, t_in);
  if (t_out < 1) return false;
  const int64_t cin_g = s.c_in / s.groups, cout_g = s.c_out / s.groups;
  for (int64_t co = 0; co < s.c_out; ++co) {
    const int64_t g = co / cout_g;
    float* yr = y + co * t_out;
    const float b = bias ? bias[co] : 0.0f;
    for (int64_t t = 0; t < t_out; ++t) yr[t] = b;
    for (int64_t ci = 0; ci < cin_g; ++ci) {
      const float* xr = x + (g * cin_g + ci) * t_in;
      const float* wr = w + (co * cin_g + ci) * s.kernel;  // [kernel]
      for (int64_t j = 0; j < s.kernel; ++j) {
        // Output step t reads input t + j - pad; clip t so the read stays inside x.
        const int64_t off = j - s.pad;
        const int64_t t0 = off < 0 ? -off : 0;
        const int64_t t1 = std::min(t_out, t_in - off);
        const float wj = wr[j];
        for (int64_t t = t0; t < t1; ++t) yr[t] += wj * xr[t + off];
      }
    }
  }
  return true;
}

bool group_norm(const float* x, int64_t c, int64_t t, int64_t groups, float eps, const float* gamma,
                const float* beta, float* y) {
  if (groups <= 0 || c % groups) return false;
  const int64_t per = c / groups;
  const int64_t n = per * t;  // values in one group: channels [g*per, (g+1)*per) x time
  for (int64_t g = 0; g < groups; ++g) {
    const float* xg = x + g * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += xg[i];
    const double mean = sum / static_cast<double>(n);
    double var = 0.0;
    for (int64_t i = 0; i < n; ++i) var += (xg[i] - mean) * (xg[i] - mean);
    var /= static_cast<double>(n);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float m = static_cast<float>(mean);
    for (int64_t ch = g * per; ch < (g + 1) * per; ++ch) {
      const float a = gamma ? gamma[ch] : 1.0f, b = beta ? beta[ch] : 0.0f;
      const float* xr = x + ch * t;
      float* yr = y + ch * t;
      for (int64_t i = 0; i < t; ++i) yr[i] = (xr[i] - m) * inv * a + b;
    }
  }
  return true;
}

void layer_norm(const float* x, int64_t rows, int64_t dim, float eps, const float* gamma,
                const float* beta, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double sum = 0.0;
    for (int64_t i = 0; i < dim; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(dim);
    double var = 0.0;
    for (int64_t i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(dim);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float m = static_cast<float>(mean);
    for (int64_t i = 0; i < dim; ++i) {
      const float v = (xr[i] - m) * inv;
      yr[i] = v * (gamma ? gamma[i] : 1.0f) + (beta ? beta[i] : 0.0f);
    }
  }
}

void swish(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void transpose(const float* x, int64_t rows, int64_t cols, float* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[c * rows + r] = x[r * cols + c];
}

}  // namespace edge::ref
