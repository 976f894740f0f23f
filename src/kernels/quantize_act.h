// Activation quantisation (packed_api.h QuantizeActFn) written once for every ISA
// (x86_avx2/, x86_avx512/, arm_neon/) over a struct of per-ISA primitives P. Per row t and
// block b of `group` floats, exactly the reference's operations (ref/packed_ref.cpp):
// amax = max |x|, inv = 127 / amax (0 for an all-zero block), q = round-half-even(x * inv)
// clamped to [-127, 127], scale = amax / 127, sum = the block's codes. Max and integer sums
// are exact in any order, so every ISA's lane order gives the reference's bits; each ISA
// keeps its own reduction (P::hmax, P::hsum) all the same.
//
// The primitives (a chunk is kW consecutive floats of the block; group % kW == 0):
//
//   struct P {
//     static constexpr int kW;
//     using Max;    // running lane-wise max of |x|
//     using Codes;  // one chunk's kW codes as int32
//     using Sum;    // running lane-wise sum of codes
//     Max max_zero(); Sum sum_zero();
//     Max abs_max(Max m, const float* x);         // max(m, |chunk|) lane-wise
//     float hmax(Max);
//     Codes quantize(const float* x, float inv);  // clamp(round-half-even(chunk * inv))
//     Sum add(Sum, Codes);
//     void store(int8_t* q, Codes);               // kW int8 codes
//     int32_t hsum(Sum);
//   };
//
// ISA files are compiled with their own flags, so nothing here may be an inline function
// shared with portable code: quantize_act is a template over P, which lives in the ISA
// file's anonymous namespace, giving each instantiation internal linkage.
#pragma once

#include <cstdint>

#include "kernels/packed_api.h"

namespace edge::packed {

// Rows [t0, t1) of x [n, a.k] into a (codes, scales, sums).
template <class P>
void quantize_act(const float* x, const QuantizedActivations& a, int64_t t0, int64_t t1) {
  const int32_t G = a.group;
  const int64_t nb = a.k / G;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + t * a.k + b * G;
      int8_t* qb = a.q + t * a.k + b * G;
      auto mx = P::max_zero();
      for (int i = 0; i < G; i += P::kW) mx = P::abs_max(mx, xb + i);
      const float amax = P::hmax(mx);
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      auto sum = P::sum_zero();
      for (int i = 0; i < G; i += P::kW) {
        const auto q = P::quantize(xb + i, inv);
        sum = P::add(sum, q);
        P::store(qb + i, q);
      }
      a.scales[t * nb + b] = amax / 127.0f;
      a.sums[t * nb + b] = P::hsum(sum);
    }
  }
}

}  // namespace edge::packed
