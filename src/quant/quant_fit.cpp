// Scalar reference of the quantiser's candidate fits and the choice of variant (the AVX2
// variant: x86_avx2/quant_fit_avx2.cpp; see quant_fit.h for why they agree bit for bit).
//
// The scalar loops are written for GCC to if-convert the clamps; that needs non-trapping
// FP, which changes no value, rounding or order.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "quant/quant_fit.h"

#include <cstdlib>
#include <cstring>

namespace edge::quant_fit {

Fit sym_fit_scalar(const float* x, int g, float d, int half) {
  const float inv = 1.0f / d;
  float err[8] = {}, sxq[8] = {}, sqq[8] = {};
  for (int i = 0; i < g; i += 8) {
    for (int j = 0; j < 8; ++j) {
      const float c = static_cast<float>(sym_code(x[i + j], inv, half));
      const float e = x[i + j] - c * d;
      err[j] += e * e;
      sxq[j] += x[i + j] * c;
      sqq[j] += c * c;
    }
  }
  Fit f;
  for (int j = 0; j < 8; ++j) {
    f.err += err[j];
    f.sxq += sxq[j];
    f.sqq += sqq[j];
  }
  return f;
}

Fit asym_fit_scalar(const float* x, int g, float s, float mn) {
  const float inv = 1.0f / s;
  float err[8] = {}, sq[8] = {}, sqq[8] = {}, sxq[8] = {};
  for (int i = 0; i < g; i += 8) {
    for (int j = 0; j < 8; ++j) {
      const float q = static_cast<float>(asym_code(x[i + j], mn, inv));
      const float e = x[i + j] - (q * s + mn);
      err[j] += e * e;
      sq[j] += q;
      sqq[j] += q * q;
      sxq[j] += x[i + j] * q;
    }
  }
  Fit f;
  for (int j = 0; j < 8; ++j) {
    f.err += err[j];
    f.sq += sq[j];
    f.sqq += sqq[j];
    f.sxq += sxq[j];
  }
  return f;
}

namespace {
bool use_avx2() {
  static const bool chosen = [] {
    const char* env = std::getenv("EDGE_QUANT_FIT");
    if (env != nullptr && std::strcmp(env, "scalar") == 0) return false;
    return avx2_available();
  }();
  return chosen;
}
}  // namespace

Fit sym_fit(const float* x, int g, float d, int half) {
  return use_avx2() ? sym_fit_avx2(x, g, d, half) : sym_fit_scalar(x, g, d, half);
}
Fit asym_fit(const float* x, int g, float s, float mn) {
  return use_avx2() ? asym_fit_avx2(x, g, s, mn) : asym_fit_scalar(x, g, s, mn);
}

}  // namespace edge::quant_fit
