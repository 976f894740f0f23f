// MXFP4 cells (quant/packed.h: GGUF MXFP4's blocks of 32, the E2M1 codes in the W4 block
// layout and one E8M0 byte per row): the reference against a plain dequantise-then-dot of
// the weights the layout defines, and every variant this CPU runs against the reference,
// for int8 activations (per 32, with their sums) and f32 activations. Test matrices are
// written here byte by byte from the layout definition. A variant this CPU cannot run is
// reported by Isa/KernelVariantTest.ExercisedOnThisCpu as a skipped test named after it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

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

// The E2M1 values doubled, written out from the OCP definition: sign bit 3, magnitudes
// {0, 0.5, 1, 1.5, 2, 3, 4, 6} doubled.
constexpr int kDoubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

struct MxMatrix {
  int64_t n = 0, k = 0;
  std::vector<uint8_t> data;
  std::vector<float> dense;  // [n, k]
  PackedMatrixView view() const {
    return {PackedFormat{PackedKind::kMxfp4, 32}, data.data(), n, k};
  }
};

// Code (row r, kk) of a cell: block kk / 8 of 64 bytes, byte 4 r + kk % 4, low nibble for
// kk % 8 < 4; row r's E8M0 byte at 256 + r.
void put_code(uint8_t* c, int r, int kk, int code) {
  c[(kk / 8) * 64 + 4 * r + kk % 4] |= static_cast<uint8_t>((kk % 8) < 4 ? code : code << 4);
}

// code_of(row, kk) and exp_of(row, group) choose the bytes; dense = 2^(e - 128) * doubled.
template <class CodeOf, class ExpOf>
MxMatrix make(int64_t n, int64_t k, CodeOf code_of, ExpOf exp_of) {
  MxMatrix m;
  m.n = n;
  m.k = k;
  m.data.assign(static_cast<size_t>(((n + 15) / 16) * (k / 32) * 272), 0);
  m.dense.assign(static_cast<size_t>(n * k), 0.0f);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t g = 0; g < k / 32; ++g) {
      uint8_t* c = m.data.data() + ((row / 16) * (k / 32) + g) * 272;
      const int r = static_cast<int>(row % 16);
      const int e = exp_of(row, g);
      c[256 + r] = static_cast<uint8_t>(e);
      for (int kk = 0; kk < 32; ++kk) {
        const int code = code_of(row, g * 32 + kk);
        put_code(c, r, kk, code);
        m.dense[static_cast<size_t>(row * k + g * 32 + kk)] =
            std::ldexp(1.0f, e - 128) * static_cast<float>(kDoubled[code]);
      }
    }
  return m;
}

MxMatrix make_random(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> codes(static_cast<size_t>(n * k)), exps(static_cast<size_t>(n * (k / 32)));
  for (int& c : codes) c = static_cast<int>(rng() % 16);
  for (int& e : exps) e = 118 + static_cast<int>(rng() % 8);  // weights ~ 2^-10 .. 2^-3 * 12
  return make(
      n, k, [&](int64_t r, int64_t kk) { return codes[static_cast<size_t>(r * k + kk)]; },
      [&](int64_t r, int64_t g) { return exps[static_cast<size_t>(r * (k / 32) + g)]; });
}

struct Shape {
  int64_t rows, k;
};
// A partial last panel (37 = 2 panels + 5 rows, 21, one row alone in 17); K of 1 to 90 blocks
// (2880: GPT-OSS's expert width).
const Shape kShapes[] = {{37, 32}, {21, 96}, {17, 256}, {48, 2880}};
// Every width of the token tiles and their rests (x86 4 / 6, aarch64 2 / 4), and 17, 34:
// the plain-AVX2 prefill over pre-unpacked codes (from 16 tokens) plus rest tiles.
const int64_t kTokens[] = {1, 2, 3, 4, 5, 6, 7, 9, 17, 34};

bool runs_own(const PackedKernels& v) {
  const PackedKernels& ref = reference_packed_kernels();
  return v.matmul_mxfp4_a8 != ref.matmul_mxfp4_a8 || v.matmul_mxfp4_a16 != ref.matmul_mxfp4_a16;
}

TEST(Mxfp4Kernels, TableSelectsTheEntriesByKind) {
  const PackedKernels& ref = reference_packed_kernels();
  EXPECT_EQ(ref.a8(PackedKind::kMxfp4), ref.matmul_mxfp4_a8);
  EXPECT_EQ(ref.a16(PackedKind::kMxfp4), ref.matmul_mxfp4_a16);
  EXPECT_NE(ref.matmul_mxfp4_a8, nullptr);
  EXPECT_EQ(packed_cell_bytes(PackedKind::kMxfp4, 32), 272);
  EXPECT_EQ(packed_cell_bytes(PackedKind::kMxfp4, 32),
            PackedFormat({PackedKind::kMxfp4, 32}).group_bytes());
}

// dequant_row (the embedding lookup) and the reference A16 against the layout's definition.
TEST(Mxfp4Kernels, ReferenceDequantAndA16MatchTheLayout) {
  const PackedKernels& ref = reference_packed_kernels();
  for (const Shape& s : kShapes) {
    MxMatrix m = make_random(s.rows, s.k, 7);
    std::vector<float> row(static_cast<size_t>(s.k));
    for (int64_t r = 0; r < s.rows; ++r) {
      ref.dequant_row(m.view(), r, row.data());
      for (int64_t i = 0; i < s.k; ++i)
        ASSERT_EQ(row[static_cast<size_t>(i)], m.dense[static_cast<size_t>(r * s.k + i)])
            << "row " << r << " k " << i;
    }
    std::vector<float> x = make_acts(3, s.k, 8), want;
    std::vector<double> mag;
    dense_matmul(m, x.data(), 3, &want, &mag);
    auto got = run_guarded(3, s.rows, [&](float* y) {
      ref.matmul_mxfp4_a16(m.view(), x.data(), 3, 0, PackedFormat::panels(s.rows), y);
    });
    expect_close(got, want, mag, 1e-6, "ref mxfp4 a16 K=" + std::to_string(s.k));
  }
}

// The reference A8 is the dense matmul of the dequantised activations (integer dots exact;
// float only in the per-block combine).
TEST(Mxfp4Kernels, ReferenceA8MatchesDenseOfQuantisedActs) {
  const PackedKernels& ref = reference_packed_kernels();
  for (const Shape& s : kShapes) {
    MxMatrix m = make_random(s.rows, s.k, 9);
    std::vector<float> x = make_acts(5, s.k, 10), want;
    QActs q;
    testing::quantize_ref(x, 5, s.k, 32, &q);
    std::vector<double> mag;
    dense_matmul(m, q.deq.data(), 5, &want, &mag);
    auto got = run_guarded(5, s.rows, [&](float* y) {
      ref.matmul_mxfp4_a8(m.view(), q.qa, 0, PackedFormat::panels(s.rows), y);
    });
    expect_close(got, want, mag, 1e-5, "ref mxfp4 a8 K=" + std::to_string(s.k));
  }
}

TEST(Mxfp4Kernels, EveryVariantMatchesReference) {
  const PackedKernels& ref = reference_packed_kernels();
  const auto variants = available_packed_kernels();
  for (const Shape& s : kShapes) {
    MxMatrix m = make_random(s.rows, s.k, 21);
    const int64_t P = PackedFormat::panels(s.rows);
    for (int64_t n : kTokens) {
      std::vector<float> x = make_acts(n, s.k, 22 + static_cast<uint32_t>(n)), dense;
      std::vector<double> mag;
      dense_matmul(m, x.data(), n, &dense, &mag);
      QActs q;
      testing::quantize_ref(x, n, s.k, 32, &q);
      auto want16 = run_guarded(
          n, s.rows, [&](float* y) { ref.matmul_mxfp4_a16(m.view(), x.data(), n, 0, P, y); });
      auto want8 =
          run_guarded(n, s.rows, [&](float* y) { ref.matmul_mxfp4_a8(m.view(), q.qa, 0, P, y); });
      for (size_t vi = 1; vi < variants.size(); ++vi) {
        const PackedKernels& v = *variants[vi];
        ASSERT_TRUE(runs_own(v)) << v.name << " has no MXFP4 kernels";
        const std::string what = std::string(v.name) + " N=" + std::to_string(s.rows) +
                                 " K=" + std::to_string(s.k) + " n=" + std::to_string(n);
        auto got16 = run_guarded(
            n, s.rows, [&](float* y) { v.matmul_mxfp4_a16(m.view(), x.data(), n, 0, P, y); });
        expect_close(got16, want16, mag, 2e-6, what + " a16");
        auto got8 =
            run_guarded(n, s.rows, [&](float* y) { v.matmul_mxfp4_a8(m.view(), q.qa, 0, P, y); });
        expect_close(got8, want8, mag, 2e-6, what + " a8");
      }
    }
  }
}

// The largest values (+-12, stored by the x86 tiles as u8 24 and 0) against activations of
// +-127 of one sign: the maddubs pair sums and s16 rounds at their largest must not
// saturate, for every tile width (1, 4, 17 tokens).
TEST(Mxfp4Kernels, ExtremeValuesDoNotSaturate) {
  for (int code : {7, 15}) {
    MxMatrix m = make(
        32, 2048, [&](int64_t, int64_t) { return code; }, [](int64_t, int64_t) { return 120; });
    for (float sign : {1.0f, -1.0f})
      for (int64_t n : {1, 4, 17}) {
        std::vector<float> x(static_cast<size_t>(n * 2048), sign);
        QActs q;
        testing::quantize_ref(x, n, 2048, 32, &q);
        std::vector<float> want;
        std::vector<double> mag;
        dense_matmul(m, q.deq.data(), n, &want, &mag);
        for (const PackedKernels* v : available_packed_kernels()) {
          auto got =
              run_guarded(n, 32, [&](float* y) { v->matmul_mxfp4_a8(m.view(), q.qa, 0, 2, y); });
          expect_close(
              got, want, mag, 1e-5,
              std::string(v->name) + " code " + std::to_string(code) + " n=" + std::to_string(n));
        }
      }
  }
}

// Every E8M0 byte turns into 2^(e - 128), the subnormal 2^-128 and 2^-127 for e = 0 and 1
// and 2^127 for 255 included: row r holds the exponent kExps[r] and the value 1 (code 1) at
// k = 0 alone, x is 1 at k = 0, so y[r] is the scale itself (A16) or 127 * (2^(e - 128) *
// (1 / 127)) (A8), the same float operations in every variant.
TEST(Mxfp4Kernels, EveryExponentByteScalesAsTheReference) {
  const int kExps[16] = {0, 1, 2, 3, 64, 100, 126, 127, 128, 129, 130, 160, 200, 253, 254, 255};
  MxMatrix m = make(
      16, 32, [](int64_t, int64_t kk) { return kk == 0 ? 1 : 0; },
      [&](int64_t r, int64_t) { return kExps[r]; });
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  QActs q;
  testing::quantize_ref(x, 1, 32, 32, &q);
  const PackedKernels& ref = reference_packed_kernels();
  std::vector<float> want8(16);
  ref.matmul_mxfp4_a8(m.view(), q.qa, 0, 1, want8.data());
  for (const PackedKernels* v : available_packed_kernels()) {
    std::vector<float> y16(16), y8(16);
    v->matmul_mxfp4_a16(m.view(), x.data(), 1, 0, 1, y16.data());
    v->matmul_mxfp4_a8(m.view(), q.qa, 0, 1, y8.data());
    for (int r = 0; r < 16; ++r) {
      EXPECT_EQ(y16[r], std::ldexp(1.0f, kExps[r] - 128)) << v->name << " e " << kExps[r];
      EXPECT_EQ(y8[r], want8[r]) << v->name << " e " << kExps[r];
    }
  }
}

TEST(Mxfp4Kernels, ParallelDriversMatchReference) {
  MxMatrix m = make_random(70, 256, 31);
  ThreadPool pool(2);
  const PackedKernels& ref = reference_packed_kernels();
  for (int64_t n : {1, 5}) {
    std::vector<float> x = make_acts(n, 256, 32), want;
    std::vector<double> mag;
    dense_matmul(m, x.data(), n, &want, &mag);
    std::vector<float> y(static_cast<size_t>(n * 70));
    packed_matmul_a16(packed_kernels(), m.view(), x.data(), n, y.data(), pool);
    expect_close(y, want, mag, 2e-6, "driver a16 n=" + std::to_string(n));
    ActivationBuffer buf;
    packed_matmul_a8(packed_kernels(), m.view(), x.data(), n, y.data(), buf, pool);
    QActs q;
    testing::quantize_ref(x, n, 256, 32, &q);
    std::vector<float> want8(y.size());
    ref.matmul_mxfp4_a8(m.view(), q.qa, 0, PackedFormat::panels(70), want8.data());
    expect_close(y, want8, mag, 2e-6, "driver a8 n=" + std::to_string(n));
  }
}

// Expert e of a 3-D packed tensor [E, N, K] starts at e * matrix_bytes(N, K).
TEST(Mxfp4Kernels, ExpertViewPointsAtTheExpertsMatrix) {
  const PackedFormat f{PackedKind::kMxfp4, 32};
  std::vector<uint8_t> bytes;
  std::vector<MxMatrix> experts;
  for (int e = 0; e < 3; ++e) {
    experts.push_back(make_random(20, 64, 50 + static_cast<uint32_t>(e)));
    bytes.insert(bytes.end(), experts.back().data.begin(), experts.back().data.end());
  }
  ASSERT_EQ(static_cast<int64_t>(bytes.size()), 3 * f.matrix_bytes(20, 64));
  TensorView t{
      "blk.0.ffn_up_exps.weight", packed_dtype(f), {3, 20, 64}, bytes.data(), bytes.size()};
  std::vector<float> row(64);
  for (int e = 0; e < 3; ++e) {
    const PackedMatrixView v = packed_expert_view(t, e);
    EXPECT_EQ(v.n, 20);
    EXPECT_EQ(v.k, 64);
    EXPECT_EQ(v.data, bytes.data() + e * f.matrix_bytes(20, 64));
    reference_packed_kernels().dequant_row(v, 19, row.data());
    for (int i = 0; i < 64; ++i) ASSERT_EQ(row[i], experts[e].dense[19 * 64 + i]) << e;
  }
}

TEST(Mxfp4Kernels, ReportNamesTheMxfp4Owner) {
  const std::string report = packed_kernels_description();
  EXPECT_NE(report.find("mxfp4_a8 ->"), std::string::npos) << report;
  if (available_packed_kernels().size() > 1)  // a SIMD variant runs: it owns MXFP4
    EXPECT_EQ(report.find("mxfp4_a8 -> ref"), std::string::npos) << report;
}

}  // namespace
}  // namespace edge
