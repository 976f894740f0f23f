// Helpers of the packed-kernel tests: test activations and their reference quantisation, a
// double-precision dense matmul of a test matrix's f32 weights, guarded output buffers,
// and a closeness check scaled by sum |x w|.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/packed_api.h"

namespace edge::testing {

// [n, k] normal activations, scaled by 1 + i % period, with one outlier at x[outlier_at]
// (when k > outlier_at) so that its block's scale differs from the rest.
inline std::vector<float> make_acts(int64_t n, int64_t k, uint32_t seed, int period = 5,
                                    int64_t outlier_at = 3, float outlier = 30.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n * k);
  for (int64_t i = 0; i < n * k; ++i) x[i] = nd(rng) * (1.0f + static_cast<float>(i % period));
  if (k > outlier_at) x[outlier_at] = outlier;
  return x;
}

// Activations quantised by the reference (with the per-32 and per-16 sums at group 256),
// and their dequantised f32 copy x' = q * scale.
struct QActs {
  ActivationBuffer buf;
  QuantizedActivations qa;
  std::vector<float> deq;
};

inline void quantize_ref(const std::vector<float>& x, int64_t n, int64_t k, int32_t group,
                         QActs* out) {
  out->qa = out->buf.view(n, k, group);
  quantize_activations(reference_packed_kernels(), x.data(), out->qa, 0, n);
  out->deq.resize(n * k);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < k; ++i)
      out->deq[t * k + i] = out->qa.q[t * k + i] * out->qa.scales[t * (k / group) + i / group];
}

constexpr float kSentinel = 12345.0f;

// y[t, r] = sum_k x[t, k] * m.dense[r, k] in double, and sum |x * w| per output (the error
// scale). M: any test matrix with n, k and dense [n, k].
template <class M>
void dense_matmul(const M& m, const float* x, int64_t n, std::vector<float>* y,
                  std::vector<double>* mag) {
  y->assign(n * m.n, 0.0f);
  mag->assign(n * m.n, 0.0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < m.n; ++r) {
      double acc = 0.0, a = 0.0;
      for (int64_t i = 0; i < m.k; ++i) {
        const double v = double{x[t * m.k + i]} * m.dense[r * m.k + i];
        acc += v;
        a += std::fabs(v);
      }
      (*y)[t * m.n + r] = static_cast<float>(acc);
      (*mag)[t * m.n + r] = a;
    }
}

// Runs a matmul on panels [0, P) into a sentinel-filled buffer with a guard tail; checks
// the guard is untouched and returns the [n, rows] result.
template <typename Fn>
std::vector<float> run_guarded(int64_t n, int64_t rows, Fn fn) {
  std::vector<float> y(n * rows + 64, kSentinel);
  fn(y.data());
  for (size_t i = n * rows; i < y.size(); ++i) EXPECT_EQ(y[i], kSentinel) << "wrote past y";
  y.resize(n * rows);
  return y;
}

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         const std::vector<double>& mag, double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double tol = rel * mag[i] + 1e-6;
    if (!(std::fabs(double{got[i]} - want[i]) <= tol)) {
      ++bad;
      ADD_FAILURE() << what << " at " << i << ": got " << got[i] << " want " << want[i] << " tol "
                    << tol;
    }
  }
}

}  // namespace edge::testing
