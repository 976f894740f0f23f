// Q6K cells (quant/packed.h: GGUF Q6_K's super-blocks kept whole): the reference against a
// dense float matmul of the weights the layout defines, and every variant this CPU runs
// against the reference, for int8 (per-256 activations with per-16 sums) and f32
// activations. Test matrices are written here byte by byte from the layout definition. A
// variant without Q6K kernels of its own (aarch64 today) holds the reference's entry, so
// it is compared with itself; the x86 variants run theirs (AVX-512 borrows AVX-VNNI's).
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
using testing::make_acts;
using testing::QActs;
using testing::run_guarded;

constexpr int64_t kCell = 3360;  // 16 rows x 256: sc pairs, d, nibbles, high 2-bit plane

struct Q6KMatrix {
  int64_t n = 0, k = 0;
  std::vector<uint8_t> data;
  std::vector<float> dense;  // [n, k]
  PackedMatrixView view() const { return {PackedFormat{PackedKind::kQ6K, 256}, data.data(), n, k}; }
};

// Code (row r, kk) of a cell: in chunk kk / 16 of 192 bytes from byte 288, the low nibble in
// the W4 block layout (blocks 0 and 1), bits 4-5 in the high block after them (quant/packed.h,
// W6 with a group of 16).
void put_code(uint8_t* c, int r, int kk, int code) {
  uint8_t* chunk = c + 288 + 192 * (kk / 16);
  const int i = kk % 16;
  uint8_t& lo = chunk[(i / 8) * 64 + r * 4 + i % 4];
  lo |= static_cast<uint8_t>((i % 8) < 4 ? (code & 15) : (code & 15) << 4);
  uint8_t& hi = chunk[128 + r * 4 + i % 4];
  hi |= static_cast<uint8_t>((code >> 4) << (2 * (i / 4)));
}

// extreme: every code `code` and every scale `sc` (the integer kernels' worst cases).
Q6KMatrix make_q6k(int64_t n, int64_t k, uint32_t seed, int extreme_code = -1, int sc_fix = 0) {
  Q6KMatrix m;
  m.n = n;
  m.k = k;
  const int64_t ng = k / 256;
  m.data.assign(((n + 15) / 16) * ng * kCell, 0);
  m.dense.assign(n * k, 0.0f);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ud(0.0001f, 0.001f);
  for (int64_t row = 0; row < n; ++row) {
    const int64_t p = row / 16;
    const int r = static_cast<int>(row % 16);
    for (int64_t g = 0; g < ng; ++g) {
      uint8_t* c = m.data.data() + (p * ng + g) * kCell;
      const float d = f16_to_f32(f32_to_f16(ud(rng)));
      const uint16_t dh = f32_to_f16(d);
      std::memcpy(c + 256 + 2 * r, &dh, 2);
      for (int j = 0; j < 16; ++j) {
        const int sc = sc_fix != 0 ? sc_fix : static_cast<int>(rng() % 256) - 128;
        c[32 * (j / 2) + 2 * r + j % 2] = static_cast<uint8_t>(static_cast<int8_t>(sc));
        for (int l = 0; l < 16; ++l) {
          const int kk = 16 * j + l;
          const int code = extreme_code >= 0 ? extreme_code : static_cast<int>(rng() % 64);
          put_code(c, r, kk, code);
          m.dense[row * k + g * 256 + kk] =
              d * static_cast<float>(sc) * static_cast<float>(code - 32);
        }
      }
    }
  }
  return m;
}

// Activations quantised by the reference per 256 (with sums per 16 and 32).
void quantize_ref(const std::vector<float>& x, int64_t n, int64_t k, QActs* out) {
  testing::quantize_ref(x, n, k, 256, out);
}

struct Shape {
  int64_t rows, k;
};
// 2.5 panels; one row in the last panel; a last panel of 7 rows over 5 super-blocks; the
// K of the 1.54B model's FFN down projection.
const Shape kShapes[] = {{40, 256}, {33, 512}, {23, 1280}, {32, 6144}};
// Every width of the token tiles and the rest tiles; 17 and 34: the plain-AVX2 prefill
// over pre-unpacked codes (from 16 tokens) + rest tiles.
const int64_t kTokens[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 34};

TEST(PackedQ6K, FormatBookkeeping) {
  const PackedFormat f{PackedKind::kQ6K, 256};
  EXPECT_EQ(f.group_bytes(), kCell);
  EXPECT_EQ(packed_cell_bytes(PackedKind::kQ6K, 256), kCell);
  EXPECT_DOUBLE_EQ(f.bits_per_weight(), 6.5625);
  EXPECT_EQ(f.name(), "q6k_g256");
  PackedFormat back;
  ASSERT_TRUE(packed_format_of(packed_dtype(f), &back));
  EXPECT_EQ(back.kind, PackedKind::kQ6K);
  EXPECT_EQ(back.group, 256);
  EXPECT_EQ(static_cast<uint32_t>(packed_dtype(f)), kFirstPackedType + 13);
  EXPECT_TRUE(is_valid_format(f));
  EXPECT_FALSE(is_valid_format(PackedFormat{PackedKind::kQ6K, 128}));
  EXPECT_FALSE(packed_format_of(static_cast<DType>(kFirstPackedType + 14), &back));
}

TEST(PackedQ6K, ReferenceDequantAndA16MatchTheLayout) {
  const PackedKernels& ref = reference_packed_kernels();
  for (const Shape& s : kShapes) {
    Q6KMatrix m = make_q6k(s.rows, s.k, 7);
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
      ref.matmul_q6k_a16(m.view(), x.data(), 3, 0, PackedFormat::panels(s.rows), y);
    });
    expect_close(got, want, mag, 1e-6, "ref a16");
  }
}

// The reference A8 is the dense matmul of the dequantised activations (integer dots exact;
// float only in the per-super-block combine).
TEST(PackedQ6K, ReferenceA8MatchesDenseOfQuantisedActs) {
  const PackedKernels& ref = reference_packed_kernels();
  for (const Shape& s : kShapes) {
    Q6KMatrix m = make_q6k(s.rows, s.k, 9);
    std::vector<float> x = make_acts(5, s.k, 10), want;
    QActs q;
    quantize_ref(x, 5, s.k, &q);
    std::vector<double> mag;
    dense_matmul(m, q.deq.data(), 5, &want, &mag);
    auto got = run_guarded(5, s.rows, [&](float* y) {
      ref.matmul_q6k_a8(m.view(), q.qa, 0, PackedFormat::panels(s.rows), y);
    });
    expect_close(got, want, mag, 1e-5, "ref a8 K=" + std::to_string(s.k));
  }
}

TEST(PackedQ6K, QuantizeActivationsFillsSumsOf16And32) {
  const int64_t k = 512;
  std::vector<float> x = make_acts(3, k, 12);
  for (const PackedKernels* v : available_packed_kernels()) {
    ActivationBuffer buf;
    QuantizedActivations qa = buf.view(3, k, 256);
    ASSERT_NE(qa.sums16, nullptr);
    quantize_activations(*v, x.data(), qa, 0, 3);
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t b = 0; b < k / 16; ++b) {
        int want = 0;
        for (int i = 0; i < 16; ++i) want += qa.q[t * k + b * 16 + i];
        ASSERT_EQ(qa.sums16[t * (k / 16) + b], want) << v->name << " t " << t << " b " << b;
        if (b % 2 == 1)
          ASSERT_EQ(qa.sums32[t * (k / 32) + b / 2], qa.sums16[t * (k / 16) + b - 1] + want);
      }
  }
  ActivationBuffer other;
  EXPECT_EQ(other.view(3, k, 128).sums16, nullptr);
}

TEST(PackedQ6K, EveryVariantMatchesReference) {
  const PackedKernels& ref = reference_packed_kernels();
  const auto variants = available_packed_kernels();
  for (const Shape& s : kShapes) {
    Q6KMatrix m = make_q6k(s.rows, s.k, 21);
    const int64_t P = PackedFormat::panels(s.rows);
    for (int64_t n : kTokens) {
      std::vector<float> x = make_acts(n, s.k, 22 + static_cast<uint32_t>(n)), dense;
      std::vector<double> mag;
      dense_matmul(m, x.data(), n, &dense, &mag);
      QActs q;
      quantize_ref(x, n, s.k, &q);
      auto want16 = run_guarded(
          n, s.rows, [&](float* y) { ref.matmul_q6k_a16(m.view(), x.data(), n, 0, P, y); });
      auto want8 =
          run_guarded(n, s.rows, [&](float* y) { ref.matmul_q6k_a8(m.view(), q.qa, 0, P, y); });
      for (size_t vi = 1; vi < variants.size(); ++vi) {
        const PackedKernels& v = *variants[vi];
        const std::string what = std::string(v.name) + " N=" + std::to_string(s.rows) +
                                 " K=" + std::to_string(s.k) + " n=" + std::to_string(n);
        auto got16 = run_guarded(
            n, s.rows, [&](float* y) { v.matmul_q6k_a16(m.view(), x.data(), n, 0, P, y); });
        expect_close(got16, want16, mag, 2e-6, what + " a16");
        auto got8 =
            run_guarded(n, s.rows, [&](float* y) { v.matmul_q6k_a8(m.view(), q.qa, 0, P, y); });
        expect_close(got8, want8, mag, 2e-6, what + " a8");
      }
    }
  }
}

// Codes 63 (or 0) and scales -128 (or 127) against activations of +-127 (all one sign):
// the s16 sums of maddubs and the int32 scaled dots at their largest must not saturate.
TEST(PackedQ6K, ExtremeCodesDoNotSaturate) {
  const PackedKernels& ref = reference_packed_kernels();
  for (auto [code, sc] : {std::pair{63, -128}, std::pair{0, 127}, std::pair{63, 127}}) {
    Q6KMatrix m = make_q6k(32, 2048, 5, code, sc);
    for (float sign : {1.0f, -1.0f})
      for (int64_t n : {1, 4, 17}) {
        std::vector<float> x(n * 2048, sign);
        QActs q;
        quantize_ref(x, n, 2048, &q);
        std::vector<float> dense;
        std::vector<double> mag;
        dense_matmul(m, q.deq.data(), n, &dense, &mag);
        auto want =
            run_guarded(n, 32, [&](float* y) { ref.matmul_q6k_a8(m.view(), q.qa, 0, 2, y); });
        expect_close(want, dense, mag, 1e-5, "ref extreme");
        for (const PackedKernels* v : available_packed_kernels()) {
          auto got =
              run_guarded(n, 32, [&](float* y) { v->matmul_q6k_a8(m.view(), q.qa, 0, 2, y); });
          expect_close(got, want, mag, 2e-6,
                       std::string(v->name) + " extreme code " + std::to_string(code) +
                           " n=" + std::to_string(n));
        }
      }
  }
}

// The parallel driver (quantise, barrier, split panels) equals one reference call.
TEST(PackedQ6K, ParallelDriverMatchesReference) {
  Q6KMatrix m = make_q6k(100, 1024, 41);
  std::vector<float> x = make_acts(9, 1024, 42), dense;
  std::vector<double> mag;
  QActs q;
  quantize_ref(x, 9, 1024, &q);
  auto want = run_guarded(9, 100, [&](float* y) {
    reference_packed_kernels().matmul_q6k_a8(m.view(), q.qa, 0, PackedFormat::panels(100), y);
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

// Every x86 SIMD variant runs Q6K cells in SIMD, A8 and A16 (its own or a narrower
// variant's: AVX-512 borrows AVX-VNNI's A8 and AVX2's A16), so the engine keeps GGUF
// Q6_K's super-blocks there; the aarch64 variants have no Q6K kernels yet, so the engine
// requantises Q6_K to w6_g32 and the report says so.
TEST(PackedQ6K, X86VariantsRunQ6KInSimdAndTheReportSaysWhere) {
  const PackedKernels& ref = reference_packed_kernels();
  for (const PackedKernels* v : available_packed_kernels()) {
    if (v == &ref) continue;
#if defined(__x86_64__)
    EXPECT_NE(v->matmul_q6k_a8, ref.matmul_q6k_a8) << v->name;
    EXPECT_NE(v->matmul_q6k_a16, ref.matmul_q6k_a16) << v->name;
#endif
  }
  const bool simd = packed_kernels().matmul_q6k_a8 != ref.matmul_q6k_a8;
  EXPECT_EQ(packed_kernels_run_q6k(), simd);
  const std::string report = packed_kernels_description();
  if (simd) {
    std::string owner;
    for (const PackedKernels* v : available_packed_kernels())
      if (owner.empty() && v->matmul_q6k_a8 == packed_kernels().matmul_q6k_a8) owner = v->name;
    EXPECT_NE(report.find("q6k_a8  -> " + owner + " "), std::string::npos) << report;
  } else {
    EXPECT_NE(report.find("q6k_a8  -> none"), std::string::npos) << report;
  }
}

}  // namespace
}  // namespace edge
