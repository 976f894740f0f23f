// Candidate fits of the quantiser's scale search (quantize.cpp): for one group of G values
// x and a candidate scale (and min), the squared error of the codes that scale gives and
// the moments the least-squares refit needs. ~80% of `quantize`'s time is spent here
// (~30 fits per group), so the fits have an AVX2 variant beside the scalar reference.
//
// Both variants give bit-identical results: 8 independent accumulators (lane j sums the
// elements i with i % 8 == j), no FMA, the lanes added in order 0..7 at the end. A file
// quantised on any x86 is therefore byte-identical, whichever variant ran.
#pragma once

namespace edge::quant_fit {

struct Fit {
  float err = 0, sq = 0, sqq = 0, sxq = 0;
};

// Symmetric: c = clamp(round(x / d), -half, half - 1), error of x ~ c * d. g % 8 == 0,
// d != 0; half = 8 for W4 (codes 0..15), 32 for W6 (codes 0..63).
Fit sym_fit_scalar(const float* x, int g, float d, int half = 8);
// Asymmetric: q = clamp(round((x - mn) / s), 0, 15), error of x ~ q * s + mn. s > 0.
Fit asym_fit_scalar(const float* x, int g, float s, float mn);

// AVX2 variants (x86_avx2/quant_fit_avx2.cpp; call only when avx2_available(), which is
// false on other architectures, where these names run the reference).
Fit sym_fit_avx2(const float* x, int g, float d, int half = 8);
Fit asym_fit_avx2(const float* x, int g, float s, float mn);
bool avx2_available();

// The variant chosen once per process (AVX2 where the CPU has it). EDGE_QUANT_FIT=scalar
// in the environment forces the reference (for A/B timing).
Fit sym_fit(const float* x, int g, float d, int half = 8);
Fit asym_fit(const float* x, int g, float s, float mn);

// Codes the winning candidate is written with (same rounding as the fits).
inline int sym_code(float x, float inv, int half = 8) {
  // Rounding after the clamp, on the non-negative code scale, is a plain truncation of
  // v + 0.5 (no libm call, no sign test).
  const float h = static_cast<float>(half), top = static_cast<float>(2 * half - 1);
  float v = x * inv + h;
  v = v < 0.0f ? 0.0f : v;
  v = v > top ? top : v;
  return static_cast<int>(v + 0.5f) - half;
}
inline int asym_code(float x, float mn, float inv) {
  float v = (x - mn) * inv;
  v = v < 0.0f ? 0.0f : v;
  v = v > 15.0f ? 15.0f : v;
  return static_cast<int>(v + 0.5f);
}

}  // namespace edge::quant_fit
