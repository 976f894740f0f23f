// One-off check of the AVX-VNNI prefill tiles (packed_avx2_gemm.h, kVnni = true) on a CPU
// without AVX-VNNI (this Zen 3): vpdpbusd is emulated bit-exactly with AVX2 (u8 zero-extended
// and s8 sign-extended to s16, madd into s32 pairs, adjacent pairs added), and the tiles are
// compared with the scalar reference over W4 sym/asym and W8, groups 32/64/128, rows 1/17/40,
// tokens 1/2/5/8/11 (K = 3 groups). Not a substitute for running on an AVX-VNNI CPU: it
// checks the tile's logic (offsets, sums, rounds), not the real instruction.
// Build and run (from the repository root, after building the release kernel library):
//   g++ -O2 -std=c++20 -mavx2 -mfma -mf16c -I src -I build/release/generated \
//     bench/results/2026-12-01-avx2-int8-tile/vnni_emu_check.cpp build/release/libedge_kernels.a \
//     build/release/libedge_quant.a build/release/libedge_formats.a build/release/libedge_core.a \
//     -lfmt -lpthread -o /tmp/vnni_emu_check && /tmp/vnni_emu_check
// Result on 2026-12-01 (commit d8bf443): "vnni-emulated tiles: 0 of 14094 outputs off".
#include <immintrin.h>
static inline __m256i emu_dpbusd(__m256i acc, __m256i u, __m256i s) {
  const __m256i z = _mm256_setzero_si256();
  const __m256i ulo = _mm256_unpacklo_epi8(u, z), uhi = _mm256_unpackhi_epi8(u, z);
  const __m256i slo = _mm256_srai_epi16(_mm256_unpacklo_epi8(z, s), 8);
  const __m256i shi = _mm256_srai_epi16(_mm256_unpackhi_epi8(z, s), 8);
  // products of bytes (0,1),(2,3)... as s32 pairs: lo holds bytes 0-7 of each 128-bit lane
  const __m256i plo = _mm256_madd_epi16(ulo, slo), phi = _mm256_madd_epi16(uhi, shi);
  // plo = [b0b1, b2b3, b4b5, b6b7] per lane, phi = [b8b9, ..., b14b15]; hadd -> dwords
  const __m256i sum = _mm256_hadd_epi32(plo, phi);  // [b0-3, b4-7, b8-11, b12-15]
  return _mm256_add_epi32(acc, sum);
}
#define __AVXVNNI__ 1
#define _mm256_dpbusd_avx_epi32 emu_dpbusd
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/x86_avx2/packed_avx2_gemm.h"
using namespace edge;
int main() {
  int bad = 0, checked = 0;
  std::mt19937 rng(5);
  for (PackedKind kind : {PackedKind::kW4Sym, PackedKind::kW4Asym, PackedKind::kW8})
    for (int g : {32, 64, 128})
      for (int64_t rows : {1, 17, 40})
        for (int64_t n : {1, 2, 5, 8, 11}) {
          const int64_t k = 3 * g, cb = packed_cell_bytes(kind, g);
          std::vector<uint8_t> m(PackedFormat::panels(rows) * (k / g) * cb);
          for (auto& b : m) b = rng();
          for (int64_t c = 0; c < (int64_t)m.size() / cb; ++c) {
            uint8_t* cell = m.data() + c * cb;
            const int64_t so = kind == PackedKind::kW8 ? g * 16 : g * 8;
            for (int r = 0; r < (kind == PackedKind::kW4Asym ? 32 : 16); ++r) {
              uint16_t h = f32_to_f16(0.001f * (1 + rng() % 50));
              std::memcpy(cell + so + 2 * r, &h, 2);
            }
            if (kind == PackedKind::kW8) {
              for (int64_t i = 0; i < g * 16; ++i)
                if (cell[i] == 0x80) cell[i] = 0x81;
              for (int r = 0; r < 16; ++r) {
                int s = 0;
                for (int kk = 0; kk < g; ++kk) s += (int8_t)cell[(kk / 4) * 64 + r * 4 + kk % 4];
                int16_t s16 = s;
                std::memcpy(cell + g * 16 + 32 + 2 * r, &s16, 2);
              }
            }
          }
          PackedMatrixView w{PackedFormat{kind, g}, m.data(), rows, k};
          std::vector<float> x(n * k);
          std::normal_distribution<float> nd;
          for (auto& v : x) v = nd(rng);
          ActivationBuffer buf;
          QuantizedActivations qa = buf.view(n, k, g);
          reference_packed_kernels().quantize_act(x.data(), qa, 0, n);
          std::vector<float> want(n * rows), got(n * rows);
          const int64_t P = PackedFormat::panels(rows);
          reference_packed_kernels().a8(kind)(w, qa, 0, P, want.data());
          if (kind == PackedKind::kW8)
            w8_a8<true>(w, qa, 0, P, got.data());
          else
            w4_a8<true>(w, qa, 0, P, got.data());
          for (size_t i = 0; i < got.size(); ++i, ++checked)
            if (std::fabs(got[i] - want[i]) > 1e-4f * (1 + std::fabs(want[i]))) {
              if (bad++ < 5)
                std::printf("mismatch kind %d g %d rows %ld n %ld i %zu: %g vs %g\n", (int)kind, g,
                            rows, n, i, got[i], want[i]);
            }
        }
  std::printf("vnni-emulated tiles: %d of %d outputs off\n", bad, checked);
  return bad != 0;
}
