// Q4K cells (quant/packed.h: GGUF Q4_K's super-blocks kept whole): the reference against a
// dense float matmul of the weights the layout defines, and every variant this CPU runs
// against the reference, for int8 (per-256 activations with per-32 sums) and f32
// activations. Test matrices are written here byte by byte from the layout definition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/packed_api.h"
#include "packed_test_util.h"

namespace edge {
namespace {

using testing::dense_matmul;
using testing::expect_close;
using testing::run_guarded;

constexpr int64_t kCell = 2368;  // 16 rows x 256: sc, m, d, dmin, then the nibbles

struct Q4KMatrix {
  int64_t n = 0, k = 0;
  std::vector<uint8_t> data;
  std::vector<float> dense;  // [n, k]
  PackedMatrixView view() const { return {PackedFormat{PackedKind::kQ4K, 256}, data.data(), n, k}; }
};

float half_round(float v) {
  return f16_to_f32(f32_to_f16(v));
}

void put_half(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

// extreme: every code 15, sc and m 63 (the integer kernels' worst case).
Q4KMatrix make_q4k(int64_t n, int64_t k, uint32_t seed, bool extreme = false) {
  Q4KMatrix m;
  m.n = n;
  m.k = k;
  const int64_t ng = k / 256;
  m.data.assign(((n + 15) / 16) * ng * kCell, 0);
  m.dense.assign(n * k, 0.0f);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ud(0.0002f, 0.002f), udm(0.0f, 0.003f);
  for (int64_t row = 0; row < n; ++row) {
    const int64_t p = row / 16;
    const int r = static_cast<int>(row % 16);
    for (int64_t g = 0; g < ng; ++g) {
      uint8_t* c = m.data.data() + (p * ng + g) * kCell;
      const float d = half_round(ud(rng)), dmin = half_round(udm(rng));
      put_half(c + 256 + 2 * r, d);
      put_half(c + 288 + 2 * r, dmin);
      for (int j = 0; j < 8; ++j) {
        const int sc = extreme ? 63 : static_cast<int>(rng() % 64);
        const int mn = extreme ? 63 : static_cast<int>(rng() % 64);
        c[16 * j + r] = static_cast<uint8_t>(sc);
        c[128 + 32 * (j / 2) + 2 * r + j % 2] = static_cast<uint8_t>(mn);
        for (int l = 0; l < 32; ++l) {
          const int kk = 32 * j + l;
          const int code = extreme ? 15 : static_cast<int>(rng() % 16);
          uint8_t& byte = c[320 + (kk / 8) * 64 + r * 4 + kk % 4];
          byte |= (kk % 8) < 4 ? code : code << 4;
          m.dense[row * k + g * 256 + kk] =
              d * static_cast<float>(sc) * static_cast<float>(code) - dmin * static_cast<float>(mn);
        }
      }
    }
  }
  return m;
}

std::vector<float> make_acts(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n * k);
  for (int64_t i = 0; i < n * k; ++i) x[i] = nd(rng) * (1.0f + static_cast<float>(i % 5));
  x[3] = 30.0f;  // an outlier in the first super-block
  return x;
}

// Activations quantised by the reference (per 256, with sums per 32), and x' = q * scale.
struct QActs {
  ActivationBuffer buf;
  QuantizedActivations qa;
  std::vector<float> deq;
};

void quantize_ref(const std::vector<float>& x, int64_t n, int64_t k, QActs* out) {
  out->qa = out->buf.view(n, k, 256);
  quantize_activations(reference_packed_kernels(), x.data(), out->qa, 0, n);
  out->deq.resize(n * k);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < k; ++i)
      out->deq[t * k + i] = out->qa.q[t * k + i] * out->qa.scales[t * (k / 256) + i / 256];
}

struct Shape {
  int64_t rows, k;
};
// 2.5 panels; one row in the last panel; a last panel of 7 rows over 5 super-blocks; K of
// the 1.54B model's projections.
const Shape kShapes[] = {{40, 256}, {33, 512}, {23, 1280}, {32, 2048}};
// 1..9: every width of the token tiles (aarch64: 2 tokens plain NEON, 4 SDOT and A16) and
// the rest tiles after one or two whole ones, odd counts included; 17 and 34: the
// plain-AVX2 prefill over pre-unpacked codes (from 16 tokens) + rest tiles.
const int64_t kTokens[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 34};

TEST(PackedQ4K, FormatBookkeeping) {
  const PackedFormat f{PackedKind::kQ4K, 256};
  EXPECT_EQ(f.group_bytes(), kCell);
  EXPECT_EQ(packed_cell_bytes(PackedKind::kQ4K, 256), kCell);
  EXPECT_DOUBLE_EQ(f.bits_per_weight(), 4.625);
  EXPECT_EQ(f.name(), "q4k_g256");
  PackedFormat back;
  ASSERT_TRUE(packed_format_of(packed_dtype(f), &back));
  EXPECT_EQ(back.kind, PackedKind::kQ4K);
  EXPECT_EQ(back.group, 256);
  EXPECT_EQ(static_cast<uint32_t>(packed_dtype(f)), kFirstPackedType + 12);
  EXPECT_TRUE(is_valid_format(f));
  EXPECT_FALSE(is_valid_format(PackedFormat{PackedKind::kQ4K, 128}));
}

TEST(PackedQ4K, ReferenceDequantAndA16MatchTheLayout) {
  const PackedKernels& ref = reference_packed_kernels();
  for (const Shape& s : kShapes) {
    Q4KMatrix m = make_q4k(s.rows, s.k, 7);
    std::vector<float> row(s.k);
    for (int64_t r = 0; r < s.rows; ++r) {
      ref.dequant_row(m.view(), r, row.data());
      for (int64_t i = 0; i < s.k; ++i)
        ASSERT_EQ(row[i], m.dense[r * s.k + i]) << "row " << r << " k " << i;
    }
    std::vector<float> x = make_acts(3, s.k, 8), want;
    std::vector<double> mag;
    dense_matmul(m, x.data(), 3, &want, &mag);
    auto got = run_guarded(3, s.rows, [&](float* y) {
      ref.matmul_q4k_a16(m.view(), x.data(), 3, 0, PackedFormat::panels(s.rows), y);
    });
    expect_close(got, want, mag, 1e-6, "ref a16");
  }
}

// The reference A8 is the dense matmul of the dequantised activations (integer dots exact;
// float only in the per-super-block combine).
TEST(PackedQ4K, ReferenceA8MatchesDenseOfQuantisedActs) {
  const PackedKernels& ref = reference_packed_kernels();
  for (const Shape& s : kShapes) {
    Q4KMatrix m = make_q4k(s.rows, s.k, 9);
    std::vector<float> x = make_acts(5, s.k, 10), want;
    QActs q;
    quantize_ref(x, 5, s.k, &q);
    std::vector<double> mag;
    dense_matmul(m, q.deq.data(), 5, &want, &mag);
    auto got = run_guarded(5, s.rows, [&](float* y) {
      ref.matmul_q4k_a8(m.view(), q.qa, 0, PackedFormat::panels(s.rows), y);
    });
    expect_close(got, want, mag, 1e-5, "ref a8 K=" + std::to_string(s.k));
  }
}

TEST(PackedQ4K, QuantizeActivationsFillsSumsOf32) {
  const int64_t k = 512;
  std::vector<float> x = make_acts(3, k, 12);
  for (const PackedKernels* v : available_packed_kernels()) {
    ActivationBuffer buf;
    QuantizedActivations qa = buf.view(3, k, 256);
    ASSERT_NE(qa.sums32, nullptr);
    quantize_activations(*v, x.data(), qa, 0, 3);
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t b = 0; b < k / 32; ++b) {
        int want = 0;
        for (int i = 0; i < 32; ++i) want += qa.q[t * k + b * 32 + i];
        ASSERT_EQ(qa.sums32[t * (k / 32) + b], want) << v->name << " t " << t << " b " << b;
      }
  }
  ActivationBuffer other;
  EXPECT_EQ(other.view(3, k, 128).sums32, nullptr);
}

TEST(PackedQ4K, EveryVariantMatchesReference) {
  const PackedKernels& ref = reference_packed_kernels();
  const auto variants = available_packed_kernels();
  for (const Shape& s : kShapes) {
    Q4KMatrix m = make_q4k(s.rows, s.k, 21);
    const int64_t P = PackedFormat::panels(s.rows);
    for (int64_t n : kTokens) {
      std::vector<float> x = make_acts(n, s.k, 22 + static_cast<uint32_t>(n)), dense;
      std::vector<double> mag;
      dense_matmul(m, x.data(), n, &dense, &mag);
      QActs q;
      quantize_ref(x, n, s.k, &q);
      auto want16 = run_guarded(
          n, s.rows, [&](float* y) { ref.matmul_q4k_a16(m.view(), x.data(), n, 0, P, y); });
      auto want8 =
          run_guarded(n, s.rows, [&](float* y) { ref.matmul_q4k_a8(m.view(), q.qa, 0, P, y); });
      for (size_t vi = 1; vi < variants.size(); ++vi) {
        const PackedKernels& v = *variants[vi];
        const std::string what = std::string(v.name) + " N=" + std::to_string(s.rows) +
                                 " K=" + std::to_string(s.k) + " n=" + std::to_string(n);
        auto got16 = run_guarded(
            n, s.rows, [&](float* y) { v.matmul_q4k_a16(m.view(), x.data(), n, 0, P, y); });
        expect_close(got16, want16, mag, 2e-6, what + " a16");
        auto got8 =
            run_guarded(n, s.rows, [&](float* y) { v.matmul_q4k_a8(m.view(), q.qa, 0, P, y); });
        expect_close(got8, want8, mag, 2e-6, what + " a8");
      }
    }
  }
}

// Codes 15, sub-scales and mins 63 against activations of +-127 (all one sign): the s16
// sums of maddubs and the int32 scaled dots at their largest must not saturate.
TEST(PackedQ4K, ExtremeCodesDoNotSaturate) {
  const PackedKernels& ref = reference_packed_kernels();
  Q4KMatrix m = make_q4k(32, 2048, 5, /*extreme=*/true);
  for (float sign : {1.0f, -1.0f})
    for (int64_t n : {1, 4, 17}) {
      std::vector<float> x(n * 2048, sign);
      QActs q;
      quantize_ref(x, n, 2048, &q);
      std::vector<float> dense;
      std::vector<double> mag;
      dense_matmul(m, q.deq.data(), n, &dense, &mag);
      auto want = run_guarded(n, 32, [&](float* y) { ref.matmul_q4k_a8(m.view(), q.qa, 0, 2, y); });
      expect_close(want, dense, mag, 1e-5, "ref extreme");
      for (const PackedKernels* v : available_packed_kernels()) {
        auto got = run_guarded(n, 32, [&](float* y) { v->matmul_q4k_a8(m.view(), q.qa, 0, 2, y); });
        expect_close(got, want, mag, 2e-6,
                     std::string(v->name) + " extreme n=" + std::to_string(n));
      }
    }
}

// The parallel driver (quantise, barrier, split panels) equals one reference call.
TEST(PackedQ4K, ParallelDriverMatchesReference) {
  Q4KMatrix m = make_q4k(100, 1024, 41);
  std::vector<float> x = make_acts(9, 1024, 42), dense;
  std::vector<double> mag;
  QActs q;
  quantize_ref(x, 9, 1024, &q);
  auto want = run_guarded(9, 100, [&](float* y) {
    reference_packed_kernels().matmul_q4k_a8(m.view(), q.qa, 0, PackedFormat::panels(100), y);
  });
  dense_matmul(m, x.data(), 9, &dense, &mag);
  ThreadPool pool(2);
  ActivationBuffer buf;
  for (const PackedKernels* v : available_packed_kernels()) {
    auto got = run_guarded(
        9, 100, [&](float* y) { packed_matmul_a8(*v, m.view(), x.data(), 9, y, buf, pool); });
    expect_close(got, want, mag, 2e-6, std::string(v->name) + " driver");
  }
}

// Every SIMD variant runs Q4K cells in SIMD, A8 and A16 (its own or a narrower variant's:
// x86 AVX-512 borrows AVX2's A16, the aarch64 tables share NEON's A16 and i8mm takes the
// SDOT A8), so the engine keeps GGUF Q4_K's super-blocks wherever a SIMD variant runs.
TEST(PackedQ4K, EveryVariantRunsQ4KInSimd) {
  const PackedKernels& ref = reference_packed_kernels();
  bool any_simd = false;
  for (const PackedKernels* v : available_packed_kernels()) {
    if (v == &ref) continue;
    any_simd = true;
    EXPECT_NE(v->matmul_q4k_a8, ref.matmul_q4k_a8) << v->name;
    EXPECT_NE(v->matmul_q4k_a16, ref.matmul_q4k_a16) << v->name;
  }
  EXPECT_EQ(packed_kernels_run_q4k(), any_simd);
  // The report names the variant whose Q4K A8 kernel runs (the first in the list that has
  // the chosen table's, as for W6), or says that none does; with a SIMD variant no op is
  // reported as the scalar reference (the aarch64 dispatch test holds the same).
  const std::string report = packed_kernels_description();
  if (packed_kernels_run_q4k()) {
    std::string owner;
    for (const PackedKernels* v : available_packed_kernels())
      if (owner.empty() && v->matmul_q4k_a8 == packed_kernels().matmul_q4k_a8) owner = v->name;
    EXPECT_NE(report.find("q4k_a8  -> " + owner + " "), std::string::npos) << report;
  } else {
    EXPECT_NE(report.find("q4k_a8  -> none"), std::string::npos) << report;
  }
  if (any_simd) {
    EXPECT_EQ(report.find("-> ref"), std::string::npos) << report;
  }
}

}  // namespace
}  // namespace edge
