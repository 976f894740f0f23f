// Every reference kernel against a straightforward double-precision computation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/api.h"

namespace edge {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double max_rel_err(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / (1e-3 + std::abs(want[i])));
  return worst;
}

// A weight matrix stored in one dtype plus the exact float values it decodes to.
struct Weight {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
  TensorView view;
};

Weight make_weight(DType t, int64_t out, int64_t in, uint32_t seed) {
  Weight w;
  w.values = randn(static_cast<size_t>(out * in), seed, 0.5f);
  const size_t esz = t == DType::F32 ? 4 : 2;
  w.bytes.resize(w.values.size() * esz);
  for (size_t i = 0; i < w.values.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&w.bytes[i * 4], &w.values[i], 4);
      continue;
    }
    uint16_t h = t == DType::F16 ? f32_to_f16(w.values[i]) : f32_to_bf16(w.values[i]);
    w.values[i] = t == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
    std::memcpy(&w.bytes[i * 2], &h, 2);
  }
  w.view.name = "w";
  w.view.dtype = t;
  w.view.shape = {out, in};
  w.view.data = w.bytes.data();
  w.view.nbytes = w.bytes.size();
  return w;
}

class MatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTest, MatchesDoubleForEveryThreadCount) {
  const KernelTable& k = reference_kernels();
  const int64_t n = 5, in = 67, out = 29;  // odd sizes exercise the vector tails
  Weight w = make_weight(GetParam(), out, in, 7);
  std::vector<float> x = randn(static_cast<size_t>(n * in), 3);
  std::vector<double> want(static_cast<size_t>(n * out));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < out; ++r) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += double(x[t * in + i]) * w.values[r * in + i];
      want[t * out + r] = s;
    }
  for (int threads : {1, 3, 8}) {
    ThreadPool pool(threads);
    std::vector<float> y(want.size(), NAN);
    matmul(k, x.data(), n, w.view, y.data(), pool);
    EXPECT_LT(max_rel_err(y, want), 1e-4) << "threads " << threads;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulTest, ::testing::Values(DType::F32, DType::F16, DType::BF16));

TEST(Kernels, EmbeddingRowDecodesEachDtype) {
  const KernelTable& k = reference_kernels();
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    Weight w = make_weight(t, 4, 9, 11);
    std::vector<float> row(9);
    embedding_row(k, w.view, 2, row.data());
    for (int i = 0; i < 9; ++i) EXPECT_EQ(row[i], w.values[2 * 9 + i]) << dtype_name(t);
  }
}

TEST(Kernels, RmsNorm) {
  const int64_t rows = 3, dim = 37;
  std::vector<float> x = randn(rows * dim, 1), w = randn(dim, 2), y(rows * dim);
  reference_kernels().rmsnorm(x.data(), w.data(), y.data(), rows, dim, 1e-5f);
  std::vector<double> want(rows * dim);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    double inv = 1.0 / std::sqrt(ss / dim + 1e-5);
    for (int64_t i = 0; i < dim; ++i) want[r * dim + i] = x[r * dim + i] * inv * w[i];
  }
  EXPECT_LT(max_rel_err(y, want), 1e-5);
}

// Expected RoPE: for each pair (a, b) of a head, rotate by pos * theta^(-2i/rotary_dim).
std::vector<double> rope_double(const std::vector<float>& x, int heads, int hd, int rd,
                                int64_t pos, double theta, bool interleaved) {
  std::vector<double> y(x.begin(), x.end());
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < rd / 2; ++i) {
      double ang = pos * std::pow(theta, -2.0 * i / rd);
      int a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + rd / 2;
      double v0 = x[h * hd + a], v1 = x[h * hd + b];
      y[h * hd + a] = v0 * std::cos(ang) - v1 * std::sin(ang);
      y[h * hd + b] = v0 * std::sin(ang) + v1 * std::cos(ang);
    }
  return y;
}

// The reference RoPE of one token at position pos.
void rope_at(float* x, int64_t heads, int64_t pos, const RopeParams& p) {
  std::vector<float> cs(static_cast<size_t>(p.rotary_dim));
  rope_angles(pos, p, cs.data());
  reference_kernels().rope(x, heads, cs.data(), p);
}

TEST(Kernels, RopeBothStylesAndPartialRotary) {
  const int heads = 3, hd = 16;
  for (RopeStyle style : {RopeStyle::kInterleaved, RopeStyle::kNeox})
    for (int rd : {16, 4}) {
      std::vector<float> x = randn(heads * hd, 5);
      std::vector<double> want = rope_double(x, heads, hd, rd, 37, 10000.0,
                                             style == RopeStyle::kInterleaved);
      RopeParams p{style, hd, rd, 10000.0f};
      rope_at(x.data(), heads, 37, p);
      EXPECT_LT(max_rel_err(x, want), 1e-4) << rope_style_name(style) << " rd " << rd;
      if (rd < hd) {  // dims past rotary_dim are untouched
        for (int h = 0; h < heads; ++h)
          for (int d = rd; d < hd; ++d) EXPECT_EQ(x[h * hd + d], float(want[h * hd + d]));
      }
    }
}

TEST(Kernels, RopeScaleAndFreqFactors) {
  const int hd = 8;
  std::vector<float> x = randn(hd, 9), y = x;
  // pos_scale 0.5 at position 20 == plain RoPE at position 10.
  RopeParams p{RopeStyle::kNeox, hd, hd, 500.0f, 0.5f};
  rope_at(x.data(), 1, 20, p);
  RopeParams q{RopeStyle::kNeox, hd, hd, 500.0f};
  rope_at(y.data(), 1, 10, q);
  for (int i = 0; i < hd; ++i) EXPECT_NEAR(x[i], y[i], 1e-5);
  // A freq factor of 2 on every pair halves the angle as well.
  std::vector<float> f(hd / 2, 2.0f), z = randn(hd, 9);
  RopeParams r{RopeStyle::kNeox, hd, hd, 500.0f, 1.0f, f.data()};
  rope_at(z.data(), 1, 20, r);
  for (int i = 0; i < hd; ++i) EXPECT_NEAR(z[i], y[i], 1e-5);
}

TEST(Kernels, SoftmaxSiluGelu) {
  const KernelTable& k = reference_kernels();
  std::vector<float> x = randn(50, 4, 3.0f);
  std::vector<float> s = x, si = x, ge = x;
  k.softmax(s.data(), 50);
  k.silu(si.data(), 50);
  k.gelu(ge.data(), 50);
  double mx = -1e30, sum = 0;
  for (float v : x) mx = std::max<double>(mx, v);
  for (float v : x) sum += std::exp(v - mx);
  std::vector<double> ws, wsi, wge;
  for (float v : x) {
    ws.push_back(std::exp(v - mx) / sum);
    wsi.push_back(v / (1 + std::exp(-double(v))));
    wge.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  EXPECT_LT(max_rel_err(s, ws), 1e-5);
  EXPECT_LT(max_rel_err(si, wsi), 1e-5);
  EXPECT_LT(max_rel_err(ge, wge), 1e-4);  // tanh in float near its tails
}

// Straight double attention over all heads and queries, with causal + window masks.
std::vector<double> attention_double(const AttentionArgs& a, const float* k, const float* v) {
  const int hd = a.head_dim;
  std::vector<double> out(a.n_q * a.n_head * hd, 0.0);
  for (int64_t qi = 0; qi < a.n_q; ++qi)
    for (int h = 0; h < a.n_head; ++h) {
      int64_t pos = a.pos0 + qi;
      int kvh = h / (a.n_head / a.n_head_kv);
      std::vector<double> sc;
      std::vector<int64_t> keys;
      for (int64_t j = 0; j <= pos; ++j) {
        if (a.window > 0 && pos - j >= a.window) continue;
        double s = 0;
        for (int d = 0; d < hd; ++d)
          s += double(a.q[(qi * a.n_head + h) * hd + d]) * k[(j * a.n_head_kv + kvh) * hd + d];
        sc.push_back(s * a.scale);
        keys.push_back(j);
      }
      double mx = *std::max_element(sc.begin(), sc.end()), sum = 0;
      for (double& s : sc) sum += (s = std::exp(s - mx));
      for (size_t i = 0; i < keys.size(); ++i)
        for (int d = 0; d < hd; ++d)
          out[(qi * a.n_head + h) * hd + d] +=
              sc[i] / sum * v[(keys[i] * a.n_head_kv + kvh) * hd + d];
    }
  return out;
}

TEST(Kernels, AttentionCausalSlidingGqa) {
  const int n_head = 4, n_head_kv = 2, hd = 8;
  const int64_t pos0 = 6, n_q = 5, n_kv = pos0 + n_q;
  std::vector<float> q = randn(n_q * n_head * hd, 1), kk = randn(n_kv * n_head_kv * hd, 2),
                     v = randn(n_kv * n_head_kv * hd, 3);
  for (int window : {0, 3}) {
    std::vector<float> out(q.size(), NAN);
    AttentionArgs a;
    a.q = q.data(); a.out = out.data();
    a.n_q = n_q; a.pos0 = pos0; a.n_head = n_head; a.n_head_kv = n_head_kv; a.head_dim = hd;
    a.window = window; a.scale = 0.35f;
    const uint8_t* blocks[2];
    a.contiguous_f32(kk.data(), v.data(), blocks);
    ThreadPool pool(3);
    attention(reference_kernels(), a, pool);
    EXPECT_LT(max_rel_err(out, attention_double(a, kk.data(), v.data())), 1e-4) << "window " << window;
  }
}

}  // namespace
}  // namespace edge
