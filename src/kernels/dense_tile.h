// The dense matmul's register tile, written once for every ISA (x86_avx2/, x86_avx512/,
// arm_neon/) over a struct of per-ISA vector primitives P; the loop nest that runs it is
// kernels/dense_blocking.h. An ISA file installs its three matmuls (F32 / F16 / BF16
// weights, F32 activations) with dense::install_matmuls<P>.
//
// The tile: R (<= 4) weight rows x T (<= P::kTokens) tokens keep R*T accumulators of kW
// lanes in registers. Each kW-wide chunk of a weight row is loaded (and widened from F16 or
// BF16) once and multiplied into the T tokens' chunks; the accumulators are summed across
// lanes once, at the end. The last in % kW elements take one of two forms:
//   kMaskedTail  a vector chunk zero-padded past the row's end (x86: masked loads), added
//                before the horizontal sums;
//   otherwise    one element at a time after the horizontal sums (NEON has no masked load).
//
// The primitives (V: a vector of kW floats; the attention's set, kernels/attention_blocking.h,
// plus the tile's width and full-chunk half-precision loads):
//
//   struct P {
//     using V; using Tail;
//     static constexpr int kW;              // lanes
//     static constexpr int kTokens;         // widest tile: R * kTokens accumulators fit
//     static constexpr bool kMaskedTail;
//     V zero(); V load(const float*); V fma(V a, V b, V c);  // a * b + c
//     float hsum(V);
//     V load_f16_full(const uint16_t*); V load_bf16_full(const uint16_t*);  // kW lanes
//     // kMaskedTail only: lanes >= rem zero, only lanes < rem read
//     Tail tail(int64_t rem); V load_tail(Tail, const float*);
//     V load_f16(const uint16_t*, int64_t rem); V load_bf16(const uint16_t*, int64_t rem);
//     // !kMaskedTail only: one element
//     float f16_to_f32(uint16_t); float bf16_to_f32(uint16_t);
//   };
//
// ISA files are compiled with their own flags, so nothing here may be an inline function
// shared with portable code: every function is a template over P, and P lives in the ISA
// file's anonymous namespace, which gives each instantiation internal linkage.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/api.h"
#include "kernels/dense_blocking.h"

namespace edge::dense {

enum class Weight { kF32, kF16, kBF16 };

template <class P, Weight K>
struct RegisterTile {
  using V = typename P::V;
  static constexpr int kW = P::kW;
  static constexpr int kTokens = P::kTokens;

  // Elements [i, i + kW) of a weight row as F32.
  [[gnu::always_inline]] static V load_w(const uint8_t* row, int64_t i) {
    if constexpr (K == Weight::kF32)
      return P::load(reinterpret_cast<const float*>(row) + i);
    else if constexpr (K == Weight::kF16)
      return P::load_f16_full(reinterpret_cast<const uint16_t*>(row) + i);
    else
      return P::load_bf16_full(reinterpret_cast<const uint16_t*>(row) + i);
  }

  // The last rem (< kW) elements from i, zero-padded (kMaskedTail).
  [[gnu::always_inline]] static V load_w_tail(const uint8_t* row, int64_t i, int64_t rem) {
    if constexpr (K == Weight::kF32)
      return P::load_tail(P::tail(rem), reinterpret_cast<const float*>(row) + i);
    else if constexpr (K == Weight::kF16)
      return P::load_f16(reinterpret_cast<const uint16_t*>(row) + i, rem);
    else
      return P::load_bf16(reinterpret_cast<const uint16_t*>(row) + i, rem);
  }

  // Element i as F32 (!kMaskedTail).
  [[gnu::always_inline]] static float load_w1(const uint8_t* row, int64_t i) {
    if constexpr (K == Weight::kF32) {
      return reinterpret_cast<const float*>(row)[i];
    } else {
      uint16_t h;
      std::memcpy(&h, row + 2 * i, 2);
      if constexpr (K == Weight::kF16)
        return P::f16_to_f32(h);
      else
        return P::bf16_to_f32(h);
    }
  }

  // acc[r][t] += wv[r] * x chunk of token t, lane-wise: each token's chunk (load_x(t)) is
  // loaded once for the R rows, one token at a time, so only R + 1 vectors are live beside
  // the accumulators.
  template <int R, int T, class LoadX>
  [[gnu::always_inline]] static void fma_chunk(V (&acc)[R][T], const V (&wv)[R], LoadX load_x) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const V xv = load_x(t);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = P::fma(wv[r], xv, acc[r][t]);
    }
  }

  // y[t, r] for R weight rows x T tokens (x rows `in` apart, y rows `out` apart).
  template <int R, int T>
  static void run(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out) {
    V acc[R][T];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = P::zero();
    int64_t i = 0;
    for (; i + kW <= in; i += kW) {
      V wv[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) wv[r] = load_w(w[r], i);
      fma_chunk(acc, wv, [&](int t) { return P::load(x + t * in + i); });
    }
    if constexpr (P::kMaskedTail) {
      if (i < in) {
        const auto m = P::tail(in - i);
        V wv[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) wv[r] = load_w_tail(w[r], i, in - i);
        fma_chunk(acc, wv, [&](int t) { return P::load_tail(m, x + t * in + i); });
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) y[t * out + r] = P::hsum(acc[r][t]);
    } else {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          float s = P::hsum(acc[r][t]);
          for (int64_t j = i; j < in; ++j) s += load_w1(w[r], j) * x[t * in + j];
          y[t * out + r] = s;
        }
    }
  }
};

// The three dense matmuls of t (api.h MatmulRowsFn) as P's register tile in the shared
// loop nest.
template <class P>
void install_matmuls(KernelTable* t) {
  t->matmul_f32 = matmul_rows<RegisterTile<P, Weight::kF32>>;
  t->matmul_f16 = matmul_rows<RegisterTile<P, Weight::kF16>>;
  t->matmul_bf16 = matmul_rows<RegisterTile<P, Weight::kBF16>>;
}

}  // namespace edge::dense
