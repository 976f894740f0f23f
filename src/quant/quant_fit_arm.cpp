// aarch64: no SIMD fits yet (the scalar reference runs); the AVX2 names forward to it so
// the interface of quant_fit.h is the same on every architecture.
#include "quant/quant_fit.h"

namespace edge::quant_fit {

bool avx2_available() { return false; }
Fit sym_fit_avx2(const float* x, int g, float d, int half) {
  return sym_fit_scalar(x, g, d, half);
}
Fit asym_fit_avx2(const float* x, int g, float s, float mn) { return asym_fit_scalar(x, g, s, mn); }

}  // namespace edge::quant_fit
