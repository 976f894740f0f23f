// The AVX2 Q4K prefill tile's inner loop (src/kernels/x86_avx2/packed_avx2_gemm.h,
// W4A8Gemm::tile<4, true>) rebuilt alone: one 16-row panel of unpacked u8 code planes
// (lo0 lo1 hi0 hi1, 128 bytes per 8 k) against T tokens of int8 activations, s16 round sums
// over 4 blocks (32 k) folded into int32 by a madd with the sub-block scales. Prints cycles
// per 64-byte block for 4 tokens (clock and best-of-5 timing: bench/cycle_clock.h).
// Variants: -DTT=3 (3 tokens), -DPAIR (lo + hi products added before accumulating),
// -DNOFOLD (the fold without its madd: what the scaling costs), -DPRESC (the scales read
// ready-made from memory instead of widened per round).
#include <immintrin.h>

#include "../../cycle_clock.h"
#ifndef TT
#define TT 4
#endif
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
static inline __m256i bc(const int8_t* p) {
  int32_t x;
  memcpy(&x, p, 4);
  return _mm256_set1_epi32(x);
}
template <int T>
__attribute__((noinline)) void tile(const uint8_t* u, const int8_t* q, long ld, long nblk,
                                    const uint8_t* scp, __m256i* out) {
  __m256i d[T][2];
  for (int t = 0; t < T; ++t) d[t][0] = d[t][1] = _mm256_setzero_si256();
  for (long r = 0; r < nblk; r += 4) {
    __m256i s[T][2];
    for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (long b = r; b < r + 4; ++b) {
      __m256i lo0 = _mm256_load_si256((const __m256i*)(u + b * 128)),
              lo1 = _mm256_load_si256((const __m256i*)(u + b * 128 + 32));
      __m256i hi0 = _mm256_load_si256((const __m256i*)(u + b * 128 + 64)),
              hi1 = _mm256_load_si256((const __m256i*)(u + b * 128 + 96));
#ifdef PAIR
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        __m256i qa = bc(q + t * ld + 8 * b), qc = bc(q + t * ld + 8 * b + 4);
        __m256i m0 = _mm256_add_epi16(_mm256_maddubs_epi16(lo0, qa), _mm256_maddubs_epi16(hi0, qc));
        s[t][0] = _mm256_add_epi16(s[t][0], m0);
        asm("" : "+x"(s[t][0]));
        __m256i m1 = _mm256_add_epi16(_mm256_maddubs_epi16(lo1, qa), _mm256_maddubs_epi16(hi1, qc));
        s[t][1] = _mm256_add_epi16(s[t][1], m1);
        asm("" : "+x"(s[t][1]));
      }
#else
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        __m256i qb = bc(q + t * ld + 8 * b);
        s[t][0] = _mm256_add_epi16(s[t][0], _mm256_maddubs_epi16(lo0, qb));
        s[t][1] = _mm256_add_epi16(s[t][1], _mm256_maddubs_epi16(lo1, qb));
        asm("" : "+x"(s[t][0]), "+x"(s[t][1]));
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        __m256i qb = bc(q + t * ld + 8 * b + 4);
        s[t][0] = _mm256_add_epi16(s[t][0], _mm256_maddubs_epi16(hi0, qb));
        s[t][1] = _mm256_add_epi16(s[t][1], _mm256_maddubs_epi16(hi1, qb));
        asm("" : "+x"(s[t][0]), "+x"(s[t][1]));
      }
#endif
    }
    __m256i sc[2];
#ifdef PRESC
    for (int h = 0; h < 2; ++h)
      sc[h] = _mm256_load_si256((const __m256i*)(scp + 64 * ((r / 4) & 3) + 32 * h));
    if (0)
#endif
      for (int h = 0; h < 2; ++h) {
        sc[h] = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64((const __m128i*)(scp + 16 * ((r / 4) & 15) + 8 * h)));
        sc[h] = _mm256_or_si256(sc[h], _mm256_slli_epi32(sc[h], 16));
      }
#ifdef NOFOLD
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < 2; ++h) d[t][h] = _mm256_add_epi32(d[t][h], s[t][h]);
#else
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < 2; ++h)
        d[t][h] = _mm256_add_epi32(d[t][h], _mm256_madd_epi16(s[t][h], sc[h]));
#endif
  }
  for (int t = 0; t < T; ++t) {
    out[2 * t] = d[t][0];
    out[2 * t + 1] = d[t][1];
  }
}
int main(int argc, char** argv) {
  const long K = argc > 1 ? atol(argv[1]) : 2048;  // k per panel
  const long nblk = K / 8;
  uint8_t* u = static_cast<uint8_t*>(aligned_alloc(64, nblk * 128));
  for (long i = 0; i < nblk * 128; ++i) u[i] = i % 16;
  int8_t* q = static_cast<int8_t*>(aligned_alloc(64, 4 * K));
  for (long i = 0; i < 4 * K; ++i) q[i] = static_cast<int8_t>((i * 7) % 255 - 127);
  alignas(64) uint8_t sc[256];
  for (int i = 0; i < 256; ++i) sc[i] = i % 64;
  __m256i out[8];
  const long reps = 50000000 / nblk;
  const double hz = bench::clock_hz(200000000);
  const double s = bench::best_seconds([&] {
    for (long i = 0; i < reps; ++i) tile<TT>(u, q, K, nblk, sc, out);
  });
  printf("K=%ld planes %ld KB: %.2f cycles/block (T=%d, clock %.2f GHz)\n", K, nblk * 128 / 1024,
         s * hz / (reps * nblk) * 4.0 / TT, TT, hz / 1e9);
}
