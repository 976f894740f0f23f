// Reference audio ops (kernels/ref/audio_ref.h) and the STFT pair (kernels/istft.h):
// each checked against a formula written out independently here, on small odd shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/istft.h"
#include "kernels/ref/audio_ref.h"

namespace edge {
namespace {

std::vector<float> ramp(int64_t n, float scale, float phase = 0.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37f * i + phase) + 0.01f * (i % 5);
  return v;
}

// Direct definition: zero-padded correlation per group.
float conv_at(const ref::Conv1dShape& s, const std::vector<float>& x, int64_t t_in,
              const std::vector<float>& w, int64_t co, int64_t t) {
  const int64_t cin_g = s.c_in / s.groups, g = co / (s.c_out / s.groups);
  double acc = 0.0;
  for (int64_t ci = 0; ci < cin_g; ++ci)
    for (int64_t j = 0; j < s.kernel; ++j) {
      const int64_t src = t + j - s.pad;
      if (src < 0 || src >= t_in) continue;
      acc += w[(co * cin_g + ci) * s.kernel + j] * x[(g * cin_g + ci) * t_in + src];
    }
  return static_cast<float>(acc);
}

void check_conv(const ref::Conv1dShape& s, int64_t t_in) {
  const std::vector<float> x = ramp(s.c_in * t_in, 1.0f);
  const std::vector<float> w = ramp(s.c_out * (s.c_in / s.groups) * s.kernel, 0.5f, 1.0f);
  const std::vector<float> b = ramp(s.c_out, 0.2f, 2.0f);
  const int64_t t_out = ref::conv1d_out_len(s, t_in);
  std::vector<float> y(static_cast<size_t>(s.c_out * t_out));
  ASSERT_TRUE(ref::conv1d(s, x.data(), t_in, w.data(), b.data(), y.data()));
  for (int64_t co = 0; co < s.c_out; ++co)
    for (int64_t t = 0; t < t_out; ++t)
      ASSERT_NEAR(y[co * t_out + t], b[co] + conv_at(s, x, t_in, w, co, t), 1e-4f)
          << "co " << co << " t " << t;
}

TEST(AudioOps, Conv1dSamePaddingDenseGroupedAndDepthwise) {
  check_conv({.c_in = 5, .c_out = 3, .kernel = 7, .groups = 1, .pad = 3}, 11);  // dense
  check_conv({.c_in = 4, .c_out = 6, .kernel = 3, .groups = 2, .pad = 1}, 9);   // grouped
  check_conv({.c_in = 6, .c_out = 6, .kernel = 7, .groups = 6, .pad = 3}, 5);   // depthwise, t < k
  check_conv({.c_in = 3, .c_out = 2, .kernel = 1, .groups = 1, .pad = 0}, 4);   // pointwise
  check_conv({.c_in = 2, .c_out = 2, .kernel = 3, .groups = 1, .pad = 0}, 6);   // valid
}

TEST(AudioOps, Conv1dSingleTapIsTheIdentityKernel) {
  // A centred unit tap must copy the input: catches an off-by-one in the padding.
  const ref::Conv1dShape s{.c_in = 1, .c_out = 1, .kernel = 7, .groups = 1, .pad = 3};
  std::vector<float> w(7, 0.0f);
  w[3] = 1.0f;
  const std::vector<float> x = ramp(10, 1.0f);
  std::vector<float> y(10);
  ASSERT_TRUE(ref::conv1d(s, x.data(), 10, w.data(), nullptr, y.data()));
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(y[i], x[i]);
}

TEST(AudioOps, Conv1dRefusesInconsistentShapes) {
  std::vector<float> buf(64);
  EXPECT_FALSE(ref::conv1d({.c_in = 5, .c_out = 4, .kernel = 3, .groups = 2, .pad = 1}, buf.data(),
                           4, buf.data(), nullptr, buf.data()));
  EXPECT_FALSE(ref::conv1d({.c_in = 2, .c_out = 2, .kernel = 7, .groups = 1, .pad = 0}, buf.data(),
                           3, buf.data(), nullptr, buf.data()));
}

TEST(AudioOps, GroupNormUsesStatisticsOverChannelsAndTime) {
  const int64_t c = 6, t = 5, groups = 3;
  const std::vector<float> x = ramp(c * t, 2.0f);
  const std::vector<float> g = ramp(c, 0.5f, 1.0f), b = ramp(c, 0.3f, 2.0f);
  std::vector<float> y(x.size());
  ASSERT_TRUE(ref::group_norm(x.data(), c, t, groups, 1e-6f, g.data(), b.data(), y.data()));
  for (int64_t grp = 0; grp < groups; ++grp) {
    double mean = 0, var = 0;
    const int64_t n = (c / groups) * t;
    for (int64_t i = 0; i < n; ++i) mean += x[grp * n + i];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += (x[grp * n + i] - mean) * (x[grp * n + i] - mean);
    var /= n;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t ch = grp * (c / groups) + i / t;
      const double want = (x[grp * n + i] - mean) / std::sqrt(var + 1e-6) * g[ch] + b[ch];
      ASSERT_NEAR(y[grp * n + i], want, 1e-5);
    }
  }
  EXPECT_FALSE(ref::group_norm(x.data(), c, t, 4, 1e-6f, nullptr, nullptr, y.data()));
}

TEST(AudioOps, LayerNormRowsHaveZeroMeanUnitVarianceBeforeAffine) {
  const int64_t rows = 3, dim = 8;
  std::vector<float> x = ramp(rows * dim, 3.0f);
  for (int64_t i = 0; i < rows * dim; ++i) x[i] += static_cast<float>(i / dim) * 10.0f;
  std::vector<float> y(x.size());
  ref::layer_norm(x.data(), rows, dim, 1e-6f, nullptr, nullptr, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < dim; ++i) m += y[r * dim + i];
    for (int64_t i = 0; i < dim; ++i) v += y[r * dim + i] * y[r * dim + i];
    EXPECT_NEAR(m / dim, 0.0, 1e-5);
    EXPECT_NEAR(v / dim, 1.0, 1e-4);
  }
  const std::vector<float> g(dim, 2.0f), b(dim, -1.0f);
  std::vector<float> z(x.size());
  ref::layer_norm(x.data(), rows, dim, 1e-6f, g.data(), b.data(), z.data());
  for (size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(z[i], 2.0f * y[i] - 1.0f, 1e-5f);
}

TEST(AudioOps, SwishAndTranspose) {
  std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.5f, 4.0f};
  const std::vector<float> x0 = x;
  ref::swish(x.data(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(x[i], x0[i] / (1.0 + std::exp(-x0[i])), 1e-6);
  const std::vector<float> m = {1, 2, 3, 4, 5, 6};  // [2][3]
  std::vector<float> t(6);
  ref::transpose(m.data(), 2, 3, t.data());
  EXPECT_EQ(t, (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

// --- STFT / ISTFT -------------------------------------------------------------------------

std::vector<float> sine(int64_t n, double freq_hz, double rate) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(0.7 * std::sin(2 * M_PI * freq_hz * i / rate) +
                              0.2 * std::cos(2 * M_PI * 3.1 * freq_hz * i / rate));
  return v;
}

TEST(Istft, RoundTripRecoversASine) {
  // WavTokenizer's framing (n_fft 1280, hop 320, "same" padding) and a small one.
  for (const IstftParams p : {IstftParams{1280, 320}, IstftParams{64, 16}, IstftParams{30, 10}}) {
    const int64_t n = p.hop * 37;
    const std::vector<float> x = sine(n, 440.0, 24000.0);
    auto spec = stft(p, x.data(), n);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    ASSERT_EQ(spec->size(), static_cast<size_t>(37 * p.n_bins() * 2));
    auto y = istft(p, spec->data(), 37);
    ASSERT_TRUE(y.ok());
    ASSERT_EQ(y->size(), x.size());
    float worst = 0.0f;
    for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs((*y)[i] - x[i]));
    EXPECT_LT(worst, 1e-4f) << "n_fft " << p.n_fft;
  }
}

TEST(Istft, StftOfASinePeaksAtItsBin) {
  // A sine at exactly bin 10 of a 64-point frame: |X| peaks there in an interior frame.
  const IstftParams p{64, 16};
  const int64_t n = 16 * 12;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = std::sin(2 * M_PI * 10 * i / 64.0);
  auto spec = stft(p, x.data(), n);
  ASSERT_TRUE(spec.ok());
  const float* f = spec->data() + 6 * p.n_bins() * 2;
  int best = 0;
  for (int k = 0; k < p.n_bins(); ++k)
    if (std::hypot(f[2 * k], f[2 * k + 1]) > std::hypot(f[2 * best], f[2 * best + 1])) best = k;
  EXPECT_EQ(best, 10);
}

// llama.cpp's convention written out as its definition: each frame is
// sum_{m < n/2+1} Re(X_m e^{2 pi i k m / n}) / (n/2+1), windowed, overlap-added, divided by
// the squared-window envelope, trimmed by pad.
std::vector<float> llama_convention(const IstftParams& p, const std::vector<float>& spec,
                                    int64_t frames) {
  const int64_t nb = p.n_bins(), n = p.n_fft;
  std::vector<double> acc((frames - 1) * p.hop + n), env(acc.size());
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t k = 0; k < n; ++k) {
      double s = 0;
      for (int64_t m = 0; m < nb; ++m) {
        const double a = 2 * M_PI * k * m / n;
        s += spec[(f * nb + m) * 2] * std::cos(a) - spec[(f * nb + m) * 2 + 1] * std::sin(a);
      }
      const double w = 0.5 - 0.5 * std::cos(2 * M_PI * k / n);
      acc[f * p.hop + k] += s / nb * w;
      env[f * p.hop + k] += w * w;
    }
  std::vector<float> out;
  for (size_t i = p.pad(); i < acc.size() - p.pad(); ++i) out.push_back(acc[i] / env[i]);
  return out;
}

TEST(Istft, LlamaCppScaleMatchesItsDefinition) {
  IstftParams p{32, 8, IstftScale::kLlamaCpp};
  const int64_t frames = 9;
  const std::vector<float> spec = ramp(frames * p.n_bins() * 2, 1.5f);
  auto y = istft(p, spec.data(), frames);
  ASSERT_TRUE(y.ok());
  const std::vector<float> want = llama_convention(p, spec, frames);
  ASSERT_EQ(y->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR((*y)[i], want[i], 1e-4f) << i;
  // And the torch convention differs from it (the test can tell them apart).
  p.scale = IstftScale::kTorch;
  auto t = istft(p, spec.data(), frames);
  float diff = 0;
  for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::fabs((*t)[i] - want[i]));
  EXPECT_GT(diff, 1e-3f);
}

TEST(Istft, StreamingInAnyGroupingEqualsWhole) {
  const IstftParams p{64, 16};
  const int64_t frames = 23;
  const std::vector<float> spec = ramp(frames * p.n_bins() * 2, 1.0f);
  auto whole = istft(p, spec.data(), frames);
  ASSERT_TRUE(whole.ok());
  for (int64_t step : {1, 2, 5, 23}) {
    auto s = IstftStream::create(p);
    ASSERT_TRUE(s.ok());
    std::vector<float> out;
    for (int64_t f = 0; f < frames; f += step) {
      s->push(spec.data() + f * p.n_bins() * 2, std::min(step, frames - f), &out);
      // Samples become final as frames arrive (3 frames reach past the 24-sample pad).
      if (f + step >= 3) {
        EXPECT_GT(out.size(), 0u);
      }
    }
    s->finish(&out);
    ASSERT_EQ(out, *whole) << "step " << step;
  }
}

TEST(Istft, RefusesBadParams) {
  EXPECT_FALSE(validate_istft_params({63, 16}).ok());
  EXPECT_FALSE(validate_istft_params({64, 0}).ok());
  EXPECT_FALSE(validate_istft_params({64, 15}).ok());
  EXPECT_FALSE(stft({64, 16}, nullptr, 17).ok());
}

}  // namespace
}  // namespace edge
