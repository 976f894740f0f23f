// The int8 multiply-add peak of one x86 core with AVX2, measured: the denominator of "the
// GEMM tile reaches N% of the CPU's int8 peak" (issue 11). Not part of the test suite.
//
//   g++ -O2 -mavx2 bench/int8_peak.cpp -o int8_peak && ./int8_peak
//
// Clock: a chain of dependent 64-bit adds retires one per cycle, so adds per second is the
// core's clock while it runs vector code. Peak: 8 independent vpmaddubsw chains (more than
// latency x ports on any AVX2 core) give that instruction's throughput per cycle; each
// vpmaddubsw ymm is 32 u8 x s8 multiply-adds. vpmaddwd is measured alongside (the plain
// AVX2 tile widens its s16 sums with it). Where the CPU has AVX-512 VNNI, vpdpbusd zmm (64 u8 x
// s8 multiply-adds into int32) and ymm are measured the same way, in 16 chains (latency x
// ports is up to 8 on current cores).
#include <immintrin.h>

#include <cstdint>
#include <cstdio>

#include "cycle_clock.h"

namespace {

constexpr long kIters = 200'000'000;

#define EDGE_R8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define EDGE_DECL(j) __m256i a##j = _mm256_set1_epi8(j + 1);
#define EDGE_XOR8                                                                        \
  _mm256_xor_si256(_mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3)), \
                   _mm256_xor_si256(_mm256_xor_si256(a4, a5), _mm256_xor_si256(a6, a7)))

// kIters of op (a vector instruction, inlined) in 8 independent chains; the asm keeps each
// chain in its register.
template <class Op>
__attribute__((noinline)) __m256i chains(__m256i w, Op op) {
  EDGE_R8(EDGE_DECL)
  for (long i = 0; i < kIters / 8; ++i) {
#define EDGE_STEP(j)  \
  a##j = op(w, a##j); \
  asm volatile("" : "+x"(a##j));
    EDGE_R8(EDGE_STEP)
#undef EDGE_STEP
  }
  return EDGE_XOR8;
}

#define EDGE_R16(X) EDGE_R8(X) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

// vpdpbusd in 16 chains (acc = acc + w.w), 512-bit (zmm) and 256-bit (AVX512VL ymm).
#define EDGE_DPBUSD_CHAINS(NAME, V, SET1, DPBUSD, LOW)                                   \
  __attribute__((noinline, target("avx512f,avx512bw,avx512vl,avx512vnni"))) int NAME() { \
    const V w = SET1(3);                                                                 \
    EDGE_R16(EDGE_DECL16)                                                                \
    for (long i = 0; i < kIters / 16; ++i) {                                             \
      EDGE_R16(EDGE_STEP16)                                                              \
    }                                                                                    \
    return _mm_cvtsi128_si32(LOW(a0)) ^ _mm_cvtsi128_si32(LOW(a15));                     \
  }
#define EDGE_DECL16(j) auto a##j = w;
#define EDGE_STEP16(j)       \
  a##j = DPBUSD(a##j, w, w); \
  asm volatile("" : "+v"(a##j));
#define DPBUSD _mm512_dpbusd_epi32
EDGE_DPBUSD_CHAINS(dpbusd_zmm_chains, __m512i, _mm512_set1_epi8, _mm512_dpbusd_epi32,
                   _mm512_castsi512_si128)
#undef DPBUSD
#define DPBUSD _mm256_dpbusd_epi32
EDGE_DPBUSD_CHAINS(dpbusd_ymm_chains, __m256i, _mm256_set1_epi8, _mm256_dpbusd_epi32,
                   _mm256_castsi256_si128)
#undef DPBUSD

}  // namespace

int main() {
  volatile int sink_i = 0;
  const double hz = bench::clock_hz(kIters);
  const double mad_s = bench::best_seconds([&] {
    sink_i = _mm256_extract_epi32(
        chains(_mm256_set1_epi8(3),
               [](__m256i a, __m256i b) { return _mm256_maddubs_epi16(a, b); }),
        0);
  });
  const double wd_s = bench::best_seconds([&] {
    sink_i = _mm256_extract_epi32(
        chains(_mm256_set1_epi16(3), [](__m256i a, __m256i b) { return _mm256_madd_epi16(a, b); }),
        0);
  });
  const double mad_per_cycle = kIters / mad_s / hz;
  std::printf(
      "{\"clock_ghz\": %.3f, \"vpmaddubsw_ymm_per_cycle\": %.2f, \"vpmaddwd_ymm_per_cycle\": "
      "%.2f, \"int8_peak_gmacs_per_core\": %.1f}\n",
      hz / 1e9, mad_per_cycle, kIters / wd_s / hz, mad_per_cycle * 32 * hz / 1e9);
  if (__builtin_cpu_supports("avx512vnni")) {
    const double z_s = bench::best_seconds([&] { sink_i = dpbusd_zmm_chains(); });
    const double y_s = bench::best_seconds([&] { sink_i = dpbusd_ymm_chains(); });
    const double z_per_cycle = kIters / z_s / hz;
    std::printf(
        "{\"vpdpbusd_zmm_per_cycle\": %.2f, \"vpdpbusd_ymm_per_cycle\": %.2f, "
        "\"int8_peak_gmacs_per_core_avx512vnni\": %.1f}\n",
        z_per_cycle, kIters / y_s / hz, z_per_cycle * 64 * hz / 1e9);
  }
  return 0;
}
