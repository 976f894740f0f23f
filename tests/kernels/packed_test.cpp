// Packed kernels: every variant this CPU runs against the scalar reference, and the
// reference against a dense float matmul of the dequantised matrix. Test matrices come from
// a test-local packer that writes codes/scales by the layout definition in quant/packed.h
// (independent of the quant library's quantiser).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/packed_api.h"
#include "packed_test_util.h"

namespace edge {
namespace {

using testing::dense_matmul;
using testing::expect_close;
using testing::kSentinel;
using testing::QActs;
using testing::quantize_ref;
using testing::run_guarded;

// A packed matrix plus its logical codes and the dense f32 weights they stand for.
struct TestMatrix {
  PackedFormat fmt;
  int64_t n = 0, k = 0;
  std::vector<uint8_t> data;
  std::vector<float> dense;  // [n, k]

  PackedMatrixView view() const { return PackedMatrixView{fmt, data.data(), n, k}; }
};

void put_half(uint8_t* p, float v) {
  uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

TestMatrix make_matrix(PackedKind kind, int32_t group, int64_t n, int64_t k, uint32_t seed) {
  TestMatrix m;
  m.fmt = PackedFormat{kind, group};
  m.n = n;
  m.k = k;
  const int64_t cb = packed_cell_bytes(kind, group), ng = k / group;
  m.data.assign(PackedFormat::panels(n) * ng * cb, 0);
  m.dense.assign(n * k, 0.0f);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> us(0.001f, 0.05f), um(-0.3f, 0.1f);
  for (int64_t row = 0; row < n; ++row) {
    const int64_t p = row / 16;
    const int r = static_cast<int>(row % 16);
    for (int64_t g = 0; g < ng; ++g) {
      uint8_t* c = m.data.data() + (p * ng + g) * cb;
      // Scales/mins rounded through fp16 so the dense copy uses exactly the stored values.
      const float s = f16_to_f32(f32_to_f16(us(rng)));
      const float mn = f16_to_f32(f32_to_f16(um(rng)));
      int sum = 0;
      for (int kk = 0; kk < group; ++kk) {
        float wv;
        if (kind == PackedKind::kW8) {
          const int code = static_cast<int>(rng() % 255) - 127;
          c[(kk / 4) * 64 + r * 4 + kk % 4] = static_cast<uint8_t>(static_cast<int8_t>(code));
          sum += code;
          wv = static_cast<float>(code) * s;
        } else if (kind == PackedKind::kW6) {  // nibble as W4, top 2 bits in block kk/16
          const int code = static_cast<int>(rng() % 64);
          c[(kk / 8) * 64 + r * 4 + kk % 4] |= (kk % 8) < 4 ? (code & 15) : (code & 15) << 4;
          c[group * 8 + (kk / 16) * 64 + r * 4 + kk % 4] |= (code >> 4) << (2 * ((kk % 16) / 4));
          wv = static_cast<float>(code - 32) * s;
        } else {
          const int code = static_cast<int>(rng() % 16);
          uint8_t& byte = c[(kk / 8) * 64 + r * 4 + kk % 4];
          byte |= (kk % 8) < 4 ? code : code << 4;
          wv = kind == PackedKind::kW4Sym ? static_cast<float>(code - 8) * s
                                          : static_cast<float>(code) * s + mn;
        }
        m.dense[row * k + g * group + kk] = wv;
      }
      if (kind == PackedKind::kW8) {
        put_half(c + group * 16 + 2 * r, s);
        const int16_t s16 = static_cast<int16_t>(sum);
        std::memcpy(c + group * 16 + 32 + 2 * r, &s16, 2);
      } else if (kind == PackedKind::kW6) {
        put_half(c + group * 12 + 2 * r, s);
      } else {
        put_half(c + group * 8 + 2 * r, s);
        if (kind == PackedKind::kW4Asym) put_half(c + group * 8 + 32 + 2 * r, mn);
      }
    }
  }
  return m;
}

// Scaled by 1 + i % 7, an outlier block at x[5] where k >= 64.
std::vector<float> make_acts(int64_t n, int64_t k, uint32_t seed) {
  return testing::make_acts(n, k, seed, 7, k >= 64 ? 5 : k, 40.0f);
}

const PackedKind kAllKinds[] = {PackedKind::kW4Sym, PackedKind::kW4Asym, PackedKind::kW8,
                                PackedKind::kW6};

struct Case {
  PackedKind kind;
  int32_t group;
  int64_t rows, k;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (PackedKind kind : kAllKinds)
    for (int32_t g : {32, 64, 128}) {
      out.push_back({kind, g, 40, 3 * g});    // 2.5 panels, 3 groups
      out.push_back({kind, g, 33, 2 * 128});  // one row in the last panel
      out.push_back({kind, g, 64, g == 128 ? 512 : 160 * (g / 32)});
      // Many groups (K = 1280: 40, 20 or 10), a token tile crossing several rounds and
      // cache-block panels, and a last panel with 7 of its 16 rows.
      out.push_back({kind, g, 23, 1280});
    }
  return out;
}

// 17 and 34 reach the x86 prefill path over pre-unpacked codes (from 16 tokens) with rest
// tiles of 1 and 2 tokens.
const int64_t kTokens[] = {1, 2, 3, 5, 8, 17, 34};

std::string kind_name(PackedKind k) {
  return k == PackedKind::kW4Sym    ? "w4s"
         : k == PackedKind::kW4Asym ? "w4a"
         : k == PackedKind::kW6     ? "w6"
                                    : "w8";
}

std::string label(const Case& c, int64_t n, const char* variant) {
  return std::string(variant) + " " + kind_name(c.kind) + "_g" + std::to_string(c.group) +
         " N=" + std::to_string(c.rows) + " K=" + std::to_string(c.k) + " n=" + std::to_string(n);
}

TEST(PackedRef, DequantRowEqualsLayoutDefinition) {
  for (const Case& c : cases()) {
    TestMatrix m = make_matrix(c.kind, c.group, c.rows, c.k, 11);
    std::vector<float> row(c.k);
    for (int64_t r = 0; r < c.rows; ++r) {
      reference_packed_kernels().dequant_row(m.view(), r, row.data());
      for (int64_t i = 0; i < c.k; ++i)
        ASSERT_EQ(row[i], m.dense[r * c.k + i]) << label(c, 1, "ref") << " row " << r << " k " << i;
    }
  }
}

TEST(PackedRef, MatmulEqualsDenseFloatMatmul) {
  const PackedKernels& ref = reference_packed_kernels();
  for (const Case& c : cases()) {
    TestMatrix m = make_matrix(c.kind, c.group, c.rows, c.k, 12);
    const int64_t P = PackedFormat::panels(c.rows);
    for (int64_t n : {1, 3, 17}) {
      std::vector<float> x = make_acts(n, c.k, 13), want;
      std::vector<double> mag;
      dense_matmul(m, x.data(), n, &want, &mag);
      auto got = run_guarded(n, c.rows,
                             [&](float* y) { ref.a16(c.kind)(m.view(), x.data(), n, 0, P, y); });
      expect_close(got, want, mag, 1e-6, label(c, n, "ref a16"));
      // A8: the integer-per-group path equals the dense matmul of the quantised activations.
      QActs q;
      quantize_ref(x, n, c.k, c.group, &q);
      std::vector<float> want8;
      dense_matmul(m, q.deq.data(), n, &want8, &mag);
      auto got8 =
          run_guarded(n, c.rows, [&](float* y) { ref.a8(c.kind)(m.view(), q.qa, 0, P, y); });
      expect_close(got8, want8, mag, 1e-5, label(c, n, "ref a8"));
      // ... and within the rounding bound of the unquantised result: each activation moves
      // by at most half its block's scale, so |dy| <= sum_k |w| * scale / 2.
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < c.rows; ++r) {
          double bound = 0;
          for (int64_t i = 0; i < c.k; ++i)
            bound += std::fabs(m.dense[r * c.k + i]) *
                     q.qa.scales[t * (c.k / c.group) + i / c.group] / 2;
          const size_t o = t * c.rows + r;
          ASSERT_LE(std::fabs(double{got8[o]} - want[o]), bound * 1.001 + 1e-5 * mag[o])
              << label(c, n, "ref a8 vs f32") << " t" << t << " r" << r;
        }
    }
  }
}

TEST(PackedRef, QuantizeActBlocks) {
  std::vector<float> x(64, 0.0f);
  x[3] = -2.0f, x[7] = 1.0f, x[40] = 0.5f;  // block 0 amax 2, block 1 amax 0.5
  ActivationBuffer buf;
  QuantizedActivations qa = buf.view(1, 64, 32);
  reference_packed_kernels().quantize_act(x.data(), qa, 0, 1);
  EXPECT_EQ(qa.q[3], -127);
  EXPECT_EQ(qa.q[7], 64);  // 63.5 rounds to even
  EXPECT_EQ(qa.q[40], 127);
  EXPECT_FLOAT_EQ(qa.scales[0], 2.0f / 127);
  EXPECT_FLOAT_EQ(qa.scales[1], 0.5f / 127);
  EXPECT_EQ(qa.sums[0], -127 + 64);
  EXPECT_EQ(qa.sums[1], 127);
}

TEST(PackedKernels, QuantizeActMatchesReferenceBitForBit) {
  const int64_t n = 5, k = 384;
  std::vector<float> x = make_acts(n, k, 21);
  for (int i = 0; i < 32; ++i) x[64 + i] = 0.0f;  // an all-zero block
  for (int32_t g : {32, 64, 128}) {
    ActivationBuffer rb;
    QuantizedActivations want = rb.view(n, k, g);
    reference_packed_kernels().quantize_act(x.data(), want, 0, n);
    for (const PackedKernels* v : available_packed_kernels()) {
      ActivationBuffer vb;
      QuantizedActivations got = vb.view(n, k, g);
      v->quantize_act(x.data(), got, 1, n);  // rows split: 0 separately
      v->quantize_act(x.data(), got, 0, 1);
      EXPECT_EQ(std::memcmp(got.q, want.q, n * k), 0) << v->name << " g" << g;
      for (int64_t i = 0; i < n * (k / g); ++i) {
        EXPECT_EQ(got.scales[i], want.scales[i]) << v->name << " g" << g << " block " << i;
        EXPECT_EQ(got.sums[i], want.sums[i]) << v->name << " g" << g << " block " << i;
      }
    }
  }
}

TEST(PackedKernels, EveryVariantMatchesReference) {
  const PackedKernels& ref = reference_packed_kernels();
  const auto variants = available_packed_kernels();
  ASSERT_GE(variants.size(), 1u);
  EXPECT_STREQ(variants[0]->name, "ref");
  for (const Case& c : cases()) {
    TestMatrix m = make_matrix(c.kind, c.group, c.rows, c.k, 31);
    const int64_t P = PackedFormat::panels(c.rows);
    for (int64_t n : kTokens) {
      std::vector<float> x = make_acts(n, c.k, 32 + static_cast<uint32_t>(n)), dense;
      std::vector<double> mag;
      dense_matmul(m, x.data(), n, &dense, &mag);
      QActs q;
      quantize_ref(x, n, c.k, c.group, &q);
      auto want16 = run_guarded(n, c.rows,
                                [&](float* y) { ref.a16(c.kind)(m.view(), x.data(), n, 0, P, y); });
      auto want8 =
          run_guarded(n, c.rows, [&](float* y) { ref.a8(c.kind)(m.view(), q.qa, 0, P, y); });
      for (size_t vi = 1; vi < variants.size(); ++vi) {
        const PackedKernels& v = *variants[vi];
        auto got16 = run_guarded(n, c.rows,
                                 [&](float* y) { v.a16(c.kind)(m.view(), x.data(), n, 0, P, y); });
        expect_close(got16, want16, mag, 2e-6, label(c, n, v.name) + " a16");
        auto got8 =
            run_guarded(n, c.rows, [&](float* y) { v.a8(c.kind)(m.view(), q.qa, 0, P, y); });
        expect_close(got8, want8, mag, 2e-6, label(c, n, v.name) + " a8");
      }
    }
  }
}

// Panels [p0, p1) write exactly their rows; split calls equal one whole call.
TEST(PackedKernels, PanelRangesWriteOnlyTheirRows) {
  for (const PackedKernels* v : available_packed_kernels()) {
    for (PackedKind kind : kAllKinds) {
      TestMatrix m = make_matrix(kind, 64, 45, 128, 41);  // 3 panels, last has 13 rows
      const int64_t n = 6;
      std::vector<float> x = make_acts(n, 128, 42);
      QActs q;
      quantize_ref(x, n, 128, 64, &q);
      for (bool a8 : {false, true}) {
        auto call = [&](int64_t p0, int64_t p1, float* y) {
          if (a8)
            v->a8(kind)(m.view(), q.qa, p0, p1, y);
          else
            v->a16(kind)(m.view(), x.data(), n, p0, p1, y);
        };
        auto whole = run_guarded(n, 45, [&](float* y) { call(0, 3, y); });
        auto middle = run_guarded(n, 45, [&](float* y) { call(1, 2, y); });
        auto split = run_guarded(n, 45, [&](float* y) { call(2, 3, y), call(0, 2, y); });
        for (int64_t t = 0; t < n; ++t)
          for (int64_t r = 0; r < 45; ++r) {
            const size_t i = t * 45 + r;
            EXPECT_EQ(split[i], whole[i]) << v->name << " a8=" << a8 << " t" << t << " r" << r;
            if (r >= 16 && r < 32)
              EXPECT_EQ(middle[i], whole[i]) << v->name << " r" << r;
            else
              EXPECT_EQ(middle[i], kSentinel) << v->name << " wrote row " << r;
          }
      }
    }
  }
}

// Edges of the prefill register tiles (4 tokens x one 16-row panel on AVX2, 8 tokens x 2
// panels on AVX-512): token counts that leave every tail (n % 4, n % 8), row counts that
// end mid-half and mid-panel, and K of a single group (one widening round or less).
TEST(PackedKernels, GemmTileEdgesMatchReference) {
  const PackedKernels& ref = reference_packed_kernels();
  for (PackedKind kind : kAllKinds)
    for (int32_t g : {32, 64, 128})
      for (int64_t rows : {1, 7, 15, 17, 24, 40}) {
        TestMatrix m = make_matrix(kind, g, rows, g, 71 + static_cast<uint32_t>(rows));
        const int64_t P = PackedFormat::panels(rows);
        for (int64_t n : {2, 3, 4, 5, 6, 7, 9, 10, 11, 13}) {
          std::vector<float> x = make_acts(n, g, 72 + static_cast<uint32_t>(n)), dense;
          std::vector<double> mag;
          dense_matmul(m, x.data(), n, &dense, &mag);
          QActs q;
          quantize_ref(x, n, g, g, &q);
          auto want =
              run_guarded(n, rows, [&](float* y) { ref.a8(kind)(m.view(), q.qa, 0, P, y); });
          for (const PackedKernels* v : available_packed_kernels()) {
            auto got =
                run_guarded(n, rows, [&](float* y) { v->a8(kind)(m.view(), q.qa, 0, P, y); });
            expect_close(got, want, mag, 2e-6, label({kind, g, rows, g}, n, v->name) + " a8 tile");
          }
        }
      }
}

// Largest integer partial sums the layout allows: every W4 code 15 (W6 code 63, or W8 code
// +-127 with the activation's sign) against activations of +-127. The AVX2 tile sums maddubs
// pairs in s16 over 32 k (16 * 15 * 127 = 30480 of 32767), W6 over 8 k (4 * 63 * 127 =
// 32004) and W8 pairs reach 2 * 127 * 127 = 32258: any saturation or wrap would be off by
// >= 2^15 codes, far outside the tolerance.
TEST(PackedKernels, A8ExtremeCodesDoNotSaturate) {
  const PackedKernels& ref = reference_packed_kernels();
  const int64_t rows = 20, k = 512;
  for (PackedKind kind : kAllKinds)
    for (int32_t g : {32, 128})
      for (float sign : {1.0f, -1.0f}) {
        TestMatrix m = make_matrix(kind, g, rows, k, 81);
        const int64_t cb = packed_cell_bytes(kind, g);
        for (int64_t c = 0; c < static_cast<int64_t>(m.data.size()) / cb; ++c) {
          uint8_t* cell = m.data.data() + c * cb;
          if (kind == PackedKind::kW8) {  // +127 where k is even, -127 where odd
            for (int64_t i = 0; i < g * 16; ++i) cell[i] = (i % 2 == 0) ? 0x7F : 0x81;
            std::memset(cell + g * 16 + 32, 0, 32);  // row code sums: g/2 * (127 - 127)
          } else {
            std::memset(cell, 0xFF, kind == PackedKind::kW6 ? g * 12 : g * 8);  // 15 / 63
          }
        }
        for (int64_t r = 0; r < rows; ++r)  // keep the dense copy consistent (not used here)
          reference_packed_kernels().dequant_row(m.view(), r, m.dense.data() + r * k);
        const int64_t P = PackedFormat::panels(rows);
        for (int64_t n : {1, 4, 5, 17}) {  // 17: the AVX2 prefill's pre-unpacked codes
          std::vector<float> x(n * k);
          for (int64_t i = 0; i < n * k; ++i)  // |x| equal in a block: every q = +-127
            x[i] = kind == PackedKind::kW8 && (i % k) % 2 == 1 ? -sign : sign;
          std::vector<float> dense;
          std::vector<double> mag;
          dense_matmul(m, x.data(), n, &dense, &mag);
          QActs q;
          quantize_ref(x, n, k, g, &q);
          auto want =
              run_guarded(n, rows, [&](float* y) { ref.a8(kind)(m.view(), q.qa, 0, P, y); });
          for (const PackedKernels* v : available_packed_kernels()) {
            auto got =
                run_guarded(n, rows, [&](float* y) { v->a8(kind)(m.view(), q.qa, 0, P, y); });
            expect_close(got, want, mag, 2e-6,
                         label({kind, g, rows, k}, n, v->name) + " a8 extreme sign " +
                             std::to_string(static_cast<int>(sign)));
          }
        }
      }
}

// Large K: the prefill path walks panels in cache blocks (~256 KB of weights), so several
// blocks per call. n = 17 must agree with the dense matmul (A16) and with per-token GEMV
// calls (A8).
TEST(PackedKernels, CacheBlockedPrefillMatchesPerTokenDecode) {
  for (PackedKind kind : {PackedKind::kW4Sym, PackedKind::kW8, PackedKind::kW6}) {
    const int64_t rows = 100, k = 6144, n = 17;  // W8: 3 panels a block, W4: 5
    TestMatrix m = make_matrix(kind, 128, rows, k, 61);
    std::vector<float> x = make_acts(n, k, 62), dense;
    std::vector<double> mag;
    dense_matmul(m, x.data(), n, &dense, &mag);
    QActs q;
    quantize_ref(x, n, k, 128, &q);
    for (const PackedKernels* v : available_packed_kernels()) {
      if (std::string(v->name) == "ref") continue;
      auto got16 =
          run_guarded(n, rows, [&](float* y) { v->a16(kind)(m.view(), x.data(), n, 0, 7, y); });
      expect_close(got16, dense, mag, 2e-6, std::string(v->name) + " large-K a16");
      auto got8 = run_guarded(n, rows, [&](float* y) { v->a8(kind)(m.view(), q.qa, 0, 7, y); });
      std::vector<float> per_token(n * rows);
      for (int64_t t = 0; t < n; ++t) {
        QuantizedActivations one = q.qa;
        one.q += t * k, one.scales += t * (k / 128), one.sums += t * (k / 128), one.n = 1;
        v->a8(kind)(m.view(), one, 0, 7, per_token.data() + t * rows);
      }
      expect_close(got8, per_token, mag, 2e-6, std::string(v->name) + " large-K a8");
    }
  }
}

TEST(PackedKernels, ParallelDriversMatchSingleCall) {
  ThreadPool pool(2);
  const PackedKernels& kern = packed_kernels();
  TestMatrix m = make_matrix(PackedKind::kW4Sym, 128, 100, 256, 51);
  for (int64_t n : {1, 7}) {
    std::vector<float> x = make_acts(n, 256, 52);
    std::vector<float> y(n * 100), want(n * 100);
    packed_matmul_a16(kern, m.view(), x.data(), n, y.data(), pool);
    kern.matmul_w4_a16(m.view(), x.data(), n, 0, 7, want.data());
    EXPECT_EQ(y, want);
    ActivationBuffer buf;
    packed_matmul_a8(kern, m.view(), x.data(), n, y.data(), buf, pool);
    QActs q;
    quantize_ref(x, n, 256, 128, &q);
    kern.matmul_w4_a8(m.view(), q.qa, 0, 7, want.data());
    EXPECT_EQ(y, want);
  }
}

TEST(PackedKernels, DispatchChoosesARunnableVariantAndSaysWhy) {
  const PackedKernels& chosen = packed_kernels();
  bool found = false;
  for (const PackedKernels* v : available_packed_kernels())
    found |= std::string(v->name) == chosen.name;
  EXPECT_TRUE(found) << chosen.name;
  const std::string d = packed_kernels_description();
  EXPECT_NE(d.find("CPU:"), std::string::npos) << d;
  EXPECT_NE(d.find("w4_a8"), std::string::npos) << d;
  EXPECT_NE(d.find(chosen.name), std::string::npos) << d;
  EXPECT_NE(d.find("w6_a8"), std::string::npos) << d;
}

// The loop nest's cache block follows the L2 read from sysfs; the prefetch distance takes a
// valid EDGE_PREFETCH_BYTES and names a bad one.
TEST(PackedKernels, TilingFollowsTheCacheSizes) {
  CacheSizes c;
  EXPECT_EQ(packed_tiling_for(c, nullptr).block_bytes, 256 << 10);  // L2 unknown
  EXPECT_NE(packed_tiling_for(c, nullptr).why.find("unknown"), std::string::npos);
  c.l2 = 2 << 20;  // Sapphire Rapids / Zen 4-5 class
  EXPECT_EQ(packed_tiling_for(c, nullptr).block_bytes, 1 << 20);
  c.l2 = 512 << 10;  // Zen 2-3
  EXPECT_EQ(packed_tiling_for(c, nullptr).block_bytes, 256 << 10);
  c.l2 = 64 << 10;  // a tiny L2 is clamped to a useful block
  EXPECT_EQ(packed_tiling_for(c, nullptr).block_bytes, 64 << 10);
  c.l2 = 32 << 20;  // an L2 reported per cluster: the block stays at 2 MiB
  EXPECT_EQ(packed_tiling_for(c, nullptr).block_bytes, 2 << 20);
  EXPECT_EQ(packed_tiling_for(c, "0").prefetch_bytes, 0);
  EXPECT_EQ(packed_tiling_for(c, "2048").prefetch_bytes, 2048);
  const PackedTiling bad = packed_tiling_for(c, "lots");
  EXPECT_EQ(bad.prefetch_bytes, PackedTiling{}.prefetch_bytes);
  EXPECT_NE(bad.why.find("EDGE_PREFETCH_BYTES=lots"), std::string::npos) << bad.why;
  EXPECT_NE(packed_kernels_description().find("tiling: cache block"), std::string::npos);
}

// W6 runs in SIMD, not the scalar reference: on x86 every SIMD variant (its own kernels or
// the nearest narrower variant's), on aarch64 every variant (plain NEON has its own A8 by
// widening multiplies and the A16 every aarch64 variant shares), A8 and A16 alike.
TEST(PackedKernels, SimdVariantsHaveW6Kernels) {
  const PackedKernels& ref = reference_packed_kernels();
  for (const PackedKernels* v : available_packed_kernels()) {
    if (v == &ref) continue;
    EXPECT_NE(v->matmul_w6_a8, ref.matmul_w6_a8) << v->name;
    EXPECT_NE(v->matmul_w6_a16, ref.matmul_w6_a16) << v->name;
#if defined(__aarch64__)
    // ... and so does every other op: no aarch64 variant falls back to the reference.
    EXPECT_NE(v->matmul_w4_a8, ref.matmul_w4_a8) << v->name;
    EXPECT_NE(v->matmul_w8_a8, ref.matmul_w8_a8) << v->name;
    EXPECT_NE(v->matmul_w4_a16, ref.matmul_w4_a16) << v->name;
    EXPECT_NE(v->matmul_w8_a16, ref.matmul_w8_a16) << v->name;
#endif
  }
}

}  // namespace
}  // namespace edge
