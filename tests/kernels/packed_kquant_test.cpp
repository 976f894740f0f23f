// Q4K, Q5K and Q6K cells (quant/packed.h: GGUF Q4_K's, Q5_K's and Q6_K's super-blocks kept
// whole), one suite for all three: the reference against a dense float matmul of the weights the
// layout defines, and every variant this CPU runs against the reference, for int8 activations (per
// 256, with per-32 sums for Q4K / Q5K and per-16 sums for Q6K) and f32 activations. Test matrices
// are written here byte by byte from the layout definition. A variant without kernels of
// its own for a kind holds the reference's entries and is skipped (the report test below
// says what runs where).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
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

struct KQuantMatrix {
  PackedKind kind = PackedKind::kQ4K;
  int64_t n = 0, k = 0;
  std::vector<uint8_t> data;
  std::vector<float> dense;  // [n, k]
  PackedMatrixView view() const { return {PackedFormat{kind, 256}, data.data(), n, k}; }
};

float half_round(float v) {
  return f16_to_f32(f32_to_f16(v));
}

void put_half(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

KQuantMatrix blank(PackedKind kind, int64_t n, int64_t k) {
  KQuantMatrix m;
  m.kind = kind;
  m.n = n;
  m.k = k;
  m.data.assign(((n + 15) / 16) * (k / 256) * packed_cell_bytes(kind, 256), 0);
  m.dense.assign(n * k, 0.0f);
  return m;
}

// Q4K code (row r, kk): the W4 block layout from byte 320.
void put_q4k_code(uint8_t* c, int r, int kk, int code) {
  c[320 + (kk / 8) * 64 + r * 4 + kk % 4] |= static_cast<uint8_t>((kk % 8) < 4 ? code : code << 4);
}

// Q5K code (row r, kk): in chunk kk / 32 of 320 bytes from byte 320, the low nibble in the
// W4 block layout (blocks 0..3), bit 4 in the high block after them: byte 4 r + i % 4, bit
// i / 4 (i = kk % 32).
void put_q5k_code(uint8_t* c, int r, int kk, int code) {
  uint8_t* chunk = c + 320 + 320 * (kk / 32);
  const int i = kk % 32;
  chunk[(i / 8) * 64 + r * 4 + i % 4] |=
      static_cast<uint8_t>((i % 8) < 4 ? (code & 15) : (code & 15) << 4);
  chunk[256 + r * 4 + i % 4] |= static_cast<uint8_t>((code >> 4) << (i / 4));
}

// Q4K (codes 0..15) and Q5K (0..31), the same per-row fields: extreme 1 = every code at its
// largest, sc and m 63 (the integer kernels' worst case).
KQuantMatrix make_q4k_fields(PackedKind kind, int64_t n, int64_t k, uint32_t seed, int extreme) {
  KQuantMatrix m = blank(kind, n, k);
  const int64_t ng = k / 256, cb = packed_cell_bytes(kind, 256);
  const int codes = kind == PackedKind::kQ4K ? 16 : 32;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ud(0.0002f, 0.002f), udm(0.0f, 0.003f);
  for (int64_t row = 0; row < n; ++row) {
    const int r = static_cast<int>(row % 16);
    for (int64_t g = 0; g < ng; ++g) {
      uint8_t* c = m.data.data() + ((row / 16) * ng + g) * cb;
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
          const int code = extreme ? codes - 1 : static_cast<int>(rng() % codes);
          if (kind == PackedKind::kQ4K)
            put_q4k_code(c, r, kk, code);
          else
            put_q5k_code(c, r, kk, code);
          m.dense[row * k + g * 256 + kk] =
              d * static_cast<float>(sc) * static_cast<float>(code) - dmin * static_cast<float>(mn);
        }
      }
    }
  }
  return m;
}

KQuantMatrix make_q4k(int64_t n, int64_t k, uint32_t seed, int extreme) {
  return make_q4k_fields(PackedKind::kQ4K, n, k, seed, extreme);
}
KQuantMatrix make_q5k(int64_t n, int64_t k, uint32_t seed, int extreme) {
  return make_q4k_fields(PackedKind::kQ5K, n, k, seed, extreme);
}

// Q6K code (row r, kk): in chunk kk / 16 of 192 bytes from byte 288, the low nibble in the
// W4 block layout (blocks 0 and 1), bits 4-5 in the high block after them (W6, group 16).
void put_q6k_code(uint8_t* c, int r, int kk, int code) {
  uint8_t* chunk = c + 288 + 192 * (kk / 16);
  const int i = kk % 16;
  chunk[(i / 8) * 64 + r * 4 + i % 4] |=
      static_cast<uint8_t>((i % 8) < 4 ? (code & 15) : (code & 15) << 4);
  chunk[128 + r * 4 + i % 4] |= static_cast<uint8_t>((code >> 4) << (2 * (i / 4)));
}

// Q6K extremes (code, scale): 1 = (63, -128), 2 = (0, 127), 3 = (63, 127).
KQuantMatrix make_q6k(int64_t n, int64_t k, uint32_t seed, int extreme) {
  static const std::pair<int, int> kExtremes[] = {{0, 0}, {63, -128}, {0, 127}, {63, 127}};
  KQuantMatrix m = blank(PackedKind::kQ6K, n, k);
  const int64_t ng = k / 256, cb = packed_cell_bytes(PackedKind::kQ6K, 256);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ud(0.0001f, 0.001f);
  for (int64_t row = 0; row < n; ++row) {
    const int r = static_cast<int>(row % 16);
    for (int64_t g = 0; g < ng; ++g) {
      uint8_t* c = m.data.data() + ((row / 16) * ng + g) * cb;
      const float d = half_round(ud(rng));
      put_half(c + 256 + 2 * r, d);
      for (int j = 0; j < 16; ++j) {
        const int sc = extreme ? kExtremes[extreme].second : static_cast<int>(rng() % 256) - 128;
        c[32 * (j / 2) + 2 * r + j % 2] = static_cast<uint8_t>(static_cast<int8_t>(sc));
        for (int l = 0; l < 16; ++l) {
          const int kk = 16 * j + l;
          const int code = extreme ? kExtremes[extreme].first : static_cast<int>(rng() % 64);
          put_q6k_code(c, r, kk, code);
          m.dense[row * k + g * 256 + kk] =
              d * static_cast<float>(sc) * static_cast<float>(code - 32);
        }
      }
    }
  }
  return m;
}

// What differs between the kinds.
struct Kind {
  const char* name;
  PackedKind kind;
  int64_t cell_bytes;
  double bits;
  uint32_t type_id;  // kFirstPackedType + this
  KQuantMatrix (*make)(int64_t, int64_t, uint32_t, int);
  int extremes;  // extreme cases 1 .. extremes of make
  PackedMatmulA8Fn PackedKernels::*a8;
  PackedMatmulA16Fn PackedKernels::*a16;
};

// True when variant v has a kernel of its own (or a narrower variant's) for the kind.
bool runs_own(const PackedKernels& v, const Kind& kd) {
  const PackedKernels& ref = reference_packed_kernels();
  return v.*kd.a8 != ref.*kd.a8 || v.*kd.a16 != ref.*kd.a16;
}

const Kind kKinds[] = {
    {"q4k", PackedKind::kQ4K, 2368, 4.625, 12, make_q4k, 1, &PackedKernels::matmul_q4k_a8,
     &PackedKernels::matmul_q4k_a16},
    {"q6k", PackedKind::kQ6K, 3360, 6.5625, 13, make_q6k, 3, &PackedKernels::matmul_q6k_a8,
     &PackedKernels::matmul_q6k_a16},
    {"q5k", PackedKind::kQ5K, 2880, 5.625, 14, make_q5k, 1, &PackedKernels::matmul_q5k_a8,
     &PackedKernels::matmul_q5k_a16},
};

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

void quantize_ref(const std::vector<float>& x, int64_t n, int64_t k, QActs* out) {
  testing::quantize_ref(x, n, k, 256, out);
}

class KQuantCells : public ::testing::TestWithParam<Kind> {};

TEST_P(KQuantCells, FormatBookkeeping) {
  const Kind& kd = GetParam();
  const PackedFormat f{kd.kind, 256};
  EXPECT_EQ(f.group_bytes(), kd.cell_bytes);
  EXPECT_EQ(packed_cell_bytes(kd.kind, 256), kd.cell_bytes);
  EXPECT_DOUBLE_EQ(f.bits_per_weight(), kd.bits);
  EXPECT_EQ(f.name(), std::string(kd.name) + "_g256");
  PackedFormat back;
  ASSERT_TRUE(packed_format_of(packed_dtype(f), &back));
  EXPECT_EQ(back.kind, kd.kind);
  EXPECT_EQ(back.group, 256);
  EXPECT_EQ(static_cast<uint32_t>(packed_dtype(f)), kFirstPackedType + kd.type_id);
  EXPECT_TRUE(is_valid_format(f));
  EXPECT_FALSE(is_valid_format(PackedFormat{kd.kind, 128}));
  EXPECT_FALSE(packed_format_of(static_cast<DType>(kFirstPackedType + 15), &back));
}

TEST_P(KQuantCells, ReferenceDequantAndA16MatchTheLayout) {
  const Kind& kd = GetParam();
  const PackedKernels& ref = reference_packed_kernels();
  for (const Shape& s : kShapes) {
    KQuantMatrix m = kd.make(s.rows, s.k, 7, 0);
    std::vector<float> row(s.k);
    for (int64_t r = 0; r < s.rows; ++r) {
      ref.dequant_row(m.view(), r, row.data());
      for (int64_t i = 0; i < s.k; ++i)
        ASSERT_EQ(row[i], m.dense[r * s.k + i]) << kd.name << " row " << r << " k " << i;
    }
    std::vector<float> x = make_acts(3, s.k, 8), want;
    std::vector<double> mag;
    dense_matmul(m, x.data(), 3, &want, &mag);
    auto got = run_guarded(3, s.rows, [&](float* y) {
      (ref.*kd.a16)(m.view(), x.data(), 3, 0, PackedFormat::panels(s.rows), y);
    });
    expect_close(got, want, mag, 1e-6, std::string(kd.name) + " ref a16");
  }
}

// The reference A8 is the dense matmul of the dequantised activations (integer dots exact;
// float only in the per-super-block combine).
TEST_P(KQuantCells, ReferenceA8MatchesDenseOfQuantisedActs) {
  const Kind& kd = GetParam();
  const PackedKernels& ref = reference_packed_kernels();
  for (const Shape& s : kShapes) {
    KQuantMatrix m = kd.make(s.rows, s.k, 9, 0);
    std::vector<float> x = make_acts(5, s.k, 10), want;
    QActs q;
    quantize_ref(x, 5, s.k, &q);
    std::vector<double> mag;
    dense_matmul(m, q.deq.data(), 5, &want, &mag);
    auto got = run_guarded(5, s.rows, [&](float* y) {
      (ref.*kd.a8)(m.view(), q.qa, 0, PackedFormat::panels(s.rows), y);
    });
    expect_close(got, want, mag, 1e-5, std::string(kd.name) + " ref a8 K=" + std::to_string(s.k));
  }
}

TEST_P(KQuantCells, EveryVariantMatchesReference) {
  const Kind& kd = GetParam();
  const PackedKernels& ref = reference_packed_kernels();
  const auto variants = available_packed_kernels();
  for (const Shape& s : kShapes) {
    KQuantMatrix m = kd.make(s.rows, s.k, 21, 0);
    const int64_t P = PackedFormat::panels(s.rows);
    for (int64_t n : kTokens) {
      std::vector<float> x = make_acts(n, s.k, 22 + static_cast<uint32_t>(n)), dense;
      std::vector<double> mag;
      dense_matmul(m, x.data(), n, &dense, &mag);
      QActs q;
      quantize_ref(x, n, s.k, &q);
      auto want16 =
          run_guarded(n, s.rows, [&](float* y) { (ref.*kd.a16)(m.view(), x.data(), n, 0, P, y); });
      auto want8 = run_guarded(n, s.rows, [&](float* y) { (ref.*kd.a8)(m.view(), q.qa, 0, P, y); });
      for (size_t vi = 1; vi < variants.size(); ++vi) {
        const PackedKernels& v = *variants[vi];
        if (!runs_own(v, kd)) continue;
        const std::string what = std::string(v.name) + " " + kd.name +
                                 " N=" + std::to_string(s.rows) + " K=" + std::to_string(s.k) +
                                 " n=" + std::to_string(n);
        auto got16 =
            run_guarded(n, s.rows, [&](float* y) { (v.*kd.a16)(m.view(), x.data(), n, 0, P, y); });
        expect_close(got16, want16, mag, 2e-6, what + " a16");
        auto got8 = run_guarded(n, s.rows, [&](float* y) { (v.*kd.a8)(m.view(), q.qa, 0, P, y); });
        expect_close(got8, want8, mag, 2e-6, what + " a8");
      }
    }
  }
}

// The largest codes and scales against activations of +-127 (all one sign): the s16 sums
// of maddubs and the int32 scaled dots at their largest must not saturate.
TEST_P(KQuantCells, ExtremeCodesDoNotSaturate) {
  const Kind& kd = GetParam();
  const PackedKernels& ref = reference_packed_kernels();
  for (int e = 1; e <= kd.extremes; ++e) {
    KQuantMatrix m = kd.make(32, 2048, 5, e);
    for (float sign : {1.0f, -1.0f})
      for (int64_t n : {1, 4, 17}) {
        std::vector<float> x(n * 2048, sign);
        QActs q;
        quantize_ref(x, n, 2048, &q);
        std::vector<float> dense;
        std::vector<double> mag;
        dense_matmul(m, q.deq.data(), n, &dense, &mag);
        auto want = run_guarded(n, 32, [&](float* y) { (ref.*kd.a8)(m.view(), q.qa, 0, 2, y); });
        expect_close(want, dense, mag, 1e-5, std::string(kd.name) + " ref extreme");
        for (const PackedKernels* v : available_packed_kernels()) {
          if (v != &ref && !runs_own(*v, kd)) continue;
          auto got = run_guarded(n, 32, [&](float* y) { (v->*kd.a8)(m.view(), q.qa, 0, 2, y); });
          expect_close(got, want, mag, 2e-6,
                       std::string(v->name) + " " + kd.name + " extreme " + std::to_string(e) +
                           " n=" + std::to_string(n));
        }
      }
  }
}

// The parallel driver (quantise, barrier, split panels) equals one reference call.
TEST_P(KQuantCells, ParallelDriverMatchesReference) {
  const Kind& kd = GetParam();
  KQuantMatrix m = kd.make(100, 1024, 41, 0);
  std::vector<float> x = make_acts(9, 1024, 42), dense;
  std::vector<double> mag;
  QActs q;
  quantize_ref(x, 9, 1024, &q);
  auto want = run_guarded(9, 100, [&](float* y) {
    (reference_packed_kernels().*kd.a8)(m.view(), q.qa, 0, PackedFormat::panels(100), y);
  });
  dense_matmul(m, x.data(), 9, &dense, &mag);
  ThreadPool pool(2);
  ActivationBuffer buf;
  for (const PackedKernels* v : available_packed_kernels()) {
    if (v != &reference_packed_kernels() && !runs_own(*v, kd)) continue;
    auto got = run_guarded(
        9, 100, [&](float* y) { packed_matmul_a8(*v, m.view(), x.data(), 9, y, buf, pool); });
    expect_close(got, want, mag, 2e-6, std::string(v->name) + " " + kd.name + " driver");
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, KQuantCells, ::testing::ValuesIn(kKinds),
                         [](const ::testing::TestParamInfo<Kind>& i) { return i.param.name; });

TEST(KQuantActivations, QuantizeActivationsFillsSumsOf16And32) {
  const int64_t k = 512;
  std::vector<float> x = make_acts(3, k, 12);
  for (const PackedKernels* v : available_packed_kernels()) {
    ActivationBuffer buf;
    QuantizedActivations qa = buf.view(3, k, 256);
    ASSERT_NE(qa.sums32, nullptr);
    ASSERT_NE(qa.sums16, nullptr);
    quantize_activations(*v, x.data(), qa, 0, 3);
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t b = 0; b < k / 16; ++b) {
        int want = 0;
        for (int i = 0; i < 16; ++i) want += qa.q[t * k + b * 16 + i];
        ASSERT_EQ(qa.sums16[t * (k / 16) + b], want) << v->name << " t " << t << " b " << b;
        if (b % 2 == 1) {
          ASSERT_EQ(qa.sums32[t * (k / 32) + b / 2], qa.sums16[t * (k / 16) + b - 1] + want);
        }
      }
  }
  ActivationBuffer other;
  EXPECT_EQ(other.view(3, k, 128).sums32, nullptr);
  EXPECT_EQ(other.view(3, k, 128).sums16, nullptr);
}

// The report names the variant whose kernel for `op` runs (the first in the list that has
// the chosen table's, as for W6), or says that none does.
void expect_report_names_owner(PackedMatmulA8Fn PackedKernels::*op, const std::string& label,
                               bool runs) {
  const std::string report = packed_kernels_description();
  if (runs) {
    std::string owner;
    for (const PackedKernels* v : available_packed_kernels())
      if (owner.empty() && v->*op == packed_kernels().*op) owner = v->name;
    EXPECT_NE(report.find(label + "  -> " + owner + " "), std::string::npos) << report;
  } else {
    EXPECT_NE(report.find(label + "  -> none"), std::string::npos) << report;
  }
}

// Every SIMD variant runs Q4K cells in SIMD, A8 and A16 (its own or a narrower variant's:
// x86 AVX-512 borrows AVX2's A16, the aarch64 tables share NEON's A16 and i8mm takes the
// SDOT A8), so the engine keeps GGUF Q4_K's super-blocks wherever a SIMD variant runs.
// Q6K likewise (x86 AVX-512 borrows AVX2's A16; aarch64 shares NEON's A16), and Q5K (x86
// AVX-512 borrows AVX2's A16; aarch64 shares NEON's A16 and i8mm takes the SDOT A8).
TEST(KQuantDispatch, SimdVariantsRunTheCellsAndTheReportSaysWhere) {
  const PackedKernels& ref = reference_packed_kernels();
  bool any_simd = false;
  for (const PackedKernels* v : available_packed_kernels()) {
    if (v == &ref) continue;
    any_simd = true;
    EXPECT_NE(v->matmul_q4k_a8, ref.matmul_q4k_a8) << v->name;
    EXPECT_NE(v->matmul_q4k_a16, ref.matmul_q4k_a16) << v->name;
    EXPECT_NE(v->matmul_q6k_a8, ref.matmul_q6k_a8) << v->name;
    EXPECT_NE(v->matmul_q6k_a16, ref.matmul_q6k_a16) << v->name;
    EXPECT_NE(v->matmul_q5k_a8, ref.matmul_q5k_a8) << v->name;
    EXPECT_NE(v->matmul_q5k_a16, ref.matmul_q5k_a16) << v->name;
  }
  EXPECT_EQ(packed_kernels_run_q4k(), any_simd);
  EXPECT_EQ(packed_kernels_run_q6k(), packed_kernels().matmul_q6k_a8 != ref.matmul_q6k_a8);
  EXPECT_EQ(packed_kernels_run_q5k(), packed_kernels().matmul_q5k_a8 != ref.matmul_q5k_a8);
  expect_report_names_owner(&PackedKernels::matmul_q4k_a8, "q4k_a8", packed_kernels_run_q4k());
  expect_report_names_owner(&PackedKernels::matmul_q6k_a8, "q6k_a8", packed_kernels_run_q6k());
  expect_report_names_owner(&PackedKernels::matmul_q5k_a8, "q5k_a8", packed_kernels_run_q5k());
  // With a SIMD variant no op is reported as the scalar reference (the aarch64 dispatch
  // test holds the same).
  if (any_simd) {
    const std::string report = packed_kernels_description();
    EXPECT_EQ(report.find("-> ref"), std::string::npos) << report;
  }
}

}  // namespace
}  // namespace edge
