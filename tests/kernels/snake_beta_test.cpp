// SnakeBeta (api.h KernelTable::snake_beta, kernels/snake_blocking.h): the reference against
// the formula in double precision, the polynomial sin^2 against double precision over a wide
// range, every SIMD variant against the reference (tails, in place), and the NEON geometry
// (4 lanes, 1-3 lane tails) through portable primitives, so that its use of the template is
// checked on a CPU that cannot run NEON.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "kernels/api.h"
#include "kernels/dense_isa.h"
#include "kernels/isa.h"
#include "kernels/snake_blocking.h"

namespace edge {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Inputs as the codec has them: activations of a few units, alpha = exp(log-alpha) and
// inv_beta = 1 / (exp(log-beta) + 1e-9) around 1 (log parameters ~ N(0, 0.5)).
struct Inputs {
  std::vector<float> x, alpha, inv_beta;
  Inputs(int64_t rows, int64_t c, uint32_t seed) : x(randn(size_t(rows * c), seed, 3.0f)) {
    for (float a : randn(size_t(c), seed + 1, 0.5f)) alpha.push_back(std::exp(a));
    for (float b : randn(size_t(c), seed + 2, 0.5f))
      inv_beta.push_back(1.0f / (std::exp(b) + 1e-9f));
  }
};

// The polynomial's bound against double sin^2 for |v| <= 1e4 (snake_blocking.h), plus the
// rounding of v + inv_beta * s: |err| <= kSinSqErr * |inv_beta| + 2^-23 * |y|.
constexpr double kSinSqErr = 2.5e-7;

double worst_excess(const std::vector<float>& got, const std::vector<float>& want, const Inputs& in,
                    int64_t c) {
  double worst = -1e30;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return 1e30;
    const double bound = kSinSqErr * std::abs(in.inv_beta[i % size_t(c)]) +
                         2.0 * std::ldexp(std::abs(double(want[i])), -23);
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) - bound);
  }
  return worst;
}

const std::vector<int64_t>& channel_counts() {
  static const std::vector<int64_t> c = {1, 3, 7, 16, 37, 96, 1536};
  return c;
}

// Runs k's snake_beta out of place and in place; both must agree bit for bit.
std::vector<float> run(const KernelTable& k, const Inputs& in, int64_t rows, int64_t c) {
  std::vector<float> y(in.x.size()), z(in.x);
  k.snake_beta(in.x.data(), rows, c, in.alpha.data(), in.inv_beta.data(), y.data());
  k.snake_beta(z.data(), rows, c, in.alpha.data(), in.inv_beta.data(), z.data());
  EXPECT_EQ(y, z) << k.name << ": in place differs from out of place, c=" << c;
  return y;
}

TEST(SnakeBeta, ReferenceIsTheFormula) {
  const int64_t rows = 5, c = 37;
  const Inputs in(rows, c, 10);
  const auto y = run(reference_kernels(), in, rows, c);
  for (int64_t i = 0; i < rows * c; ++i) {
    const double v = in.x[size_t(i)], s = std::sin(v * double(in.alpha[size_t(i % c)]));
    const double want = v + double(in.inv_beta[size_t(i % c)]) * s * s;
    EXPECT_NEAR(y[size_t(i)], want, 1e-6 * (1.0 + std::abs(want))) << i;
  }
}

// The vector sin^2 of the table the engine uses on arguments v up to 1e4: one row with
// x = 2^-10 and alpha = v * 2^10 (both exact, so alpha * x is v exactly) and inv_beta 1 gives
// 2^-10 + sin(v)^2, whose rounding is at most 2^-24 * |y|.
TEST(SnakeBeta, PolynomialSinSquaredWithinItsBound) {
  const KernelTable& k = select_kernels();
  std::vector<float> v;
  for (float a = -12.0f; a <= 12.0f; a += 1.0f / 1024) v.push_back(a);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-1e4f, 1e4f);
  for (int i = 0; i < 200000; ++i) v.push_back(wide(rng));
  const float x0 = std::ldexp(1.0f, -10);
  std::vector<float> x(v.size(), x0), alpha(v.size()), one(v.size(), 1.0f), y(v.size());
  for (size_t i = 0; i < v.size(); ++i) alpha[i] = std::ldexp(v[i], 10);
  k.snake_beta(x.data(), 1, int64_t(v.size()), alpha.data(), one.data(), y.data());
  double worst = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double s = std::sin(double(v[i]));
    const double err = std::abs((double(y[i]) - x0) - s * s) - std::ldexp(std::abs(y[i]), -24);
    worst = std::max(worst, err);
  }
  std::printf("%s: max |sin^2 error| %.3g for |v| <= 1e4\n", k.name, worst);
  EXPECT_LT(worst, kSinSqErr) << k.name;
}

// One test per compiled dense variant (SnakeBeta installs with it); a variant this CPU
// cannot run is SKIPPED under its own name.
class SnakeBetaVariant : public ::testing::TestWithParam<KernelVariant> {};

TEST_P(SnakeBetaVariant, MatchesReference) {
  const KernelVariant& v = GetParam();
  const std::string missing = isa_missing_features(v.isa, cpu_info());
  if (!missing.empty()) GTEST_SKIP() << v.name << " not exercised: this CPU lacks " << missing;
  const std::vector<KernelTable> simd = simd_dense_kernels();
  const KernelTable* k = nullptr;
  for (const KernelTable& t : simd)
    if (std::string(t.name) == v.name) k = &t;
  ASSERT_NE(k, nullptr) << v.name << " runs here but is not among simd_dense_kernels()";
  uint32_t seed = 100;
  for (int64_t c : channel_counts())
    for (int64_t rows : {1, 3}) {
      const Inputs in(rows, c, seed += 10);
      const auto want = run(reference_kernels(), in, rows, c);
      EXPECT_LE(worst_excess(run(*k, in, rows, c), want, in, c), 0.0) << v.name << " c=" << c;
    }
}

std::vector<KernelVariant> dense_variants() {
  std::vector<KernelVariant> out;
  for (const KernelVariant& v : kernel_variants())
    if (std::string(v.family) == "dense") out.push_back(v);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Isa, SnakeBetaVariant, ::testing::ValuesIn(dense_variants()),
                         [](const ::testing::TestParamInfo<KernelVariant>& i) {
                           return std::string(i.param.name);
                         });

// arm_neon/snake_neon.cpp's geometry with portable 4-lane primitives (std::fma, nearbyint:
// the same operations as vfmaq_f32 and vrndnq_f32).
struct FourLanePrims {
  using V = std::array<float, 4>;
  static constexpr int kW = 4;
  static V set1(float x) { return {x, x, x, x}; }
  static V load(const float* p) { return {p[0], p[1], p[2], p[3]}; }
  static void store(float* p, V v) { std::copy(v.begin(), v.end(), p); }
  static V load_n(const float* p, int64_t rem) {
    V v{};
    for (int64_t i = 0; i < std::min<int64_t>(rem, 4); ++i) v[size_t(i)] = p[i];
    return v;
  }
  static void store_n(float* p, int64_t rem, V v) {
    for (int64_t i = 0; i < std::min<int64_t>(rem, 4); ++i) p[i] = v[size_t(i)];
  }
  static V fma(V a, V b, V c) {
    for (int i = 0; i < 4; ++i) c[i] = std::fma(a[i], b[i], c[i]);
    return c;
  }
  static V mul(V a, V b) {
    for (int i = 0; i < 4; ++i) a[i] *= b[i];
    return a;
  }
  static V round(V a) {
    for (float& x : a) x = std::nearbyint(x);
    return a;
  }
};

TEST(SnakeBeta, NeonGeometryEmulatedMatchesReference) {
  KernelTable k = reference_kernels();
  snake::Kernels<FourLanePrims>::install(&k);
  uint32_t seed = 300;
  for (int64_t c : channel_counts()) {
    const Inputs in(3, c, seed += 10);
    const auto want = run(reference_kernels(), in, 3, c);
    EXPECT_LE(worst_excess(run(k, in, 3, c), want, in, c), 0.0) << "c=" << c;
  }
}

}  // namespace
}  // namespace edge
