// Every SIMD dense variant this CPU can run (kernels/dense_isa.h) against the scalar
// reference: attention (causal, sliding window, GQA, odd head sizes, partial task ranges),
// the three dense matmuls (token counts around the register tiles, odd sizes, row ranges)
// and the elementwise ops.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/dense_isa.h"

namespace edge {
namespace {

struct Variant {
  std::string name;
  KernelTable table;
};

std::vector<Variant> variants() {
  std::vector<Variant> out;
  for (const KernelTable& t : simd_dense_kernels()) out.push_back({t.name, t});
  return out;
}

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// max |got - want| / max |want|: error relative to the output's scale (sums of many signed
// terms make elementwise relative error meaningless near zero). NaN mismatches count as huge.
double scaled_err(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return 1e30;
    if (std::isnan(want[i])) continue;
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  return worst / scale;
}

// max |got - want| / (floor + |want|); NaN in got (an element never written) counts as huge.
double max_rel_err(const std::vector<float>& got, const std::vector<float>& want, double floor) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return 1e30;
    if (std::isnan(want[i])) continue;
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) / (floor + std::abs(want[i])));
  }
  return worst;
}

TEST(DenseSimd, SelectKernelsPicksTheWidestVariant) {
  const std::vector<Variant> v = variants();
  const std::string want = v.empty() ? "ref" : v.back().name;
  EXPECT_EQ(select_kernels().name, want);
  EXPECT_STREQ(reference_kernels().name, "ref");
}

struct AttnCase {
  int64_t n_q, pos0;
  int32_t n_head, n_head_kv, head_dim, window;
};

void run_attention(const KernelTable& k, const AttnCase& c, const std::vector<float>& q,
                   const std::vector<float>& kc, const std::vector<float>& vc,
                   std::vector<float>* out, int splits) {
  AttentionArgs a;
  a.q = q.data(), a.out = out->data();
  a.n_q = c.n_q, a.pos0 = c.pos0;
  a.n_head = c.n_head, a.n_head_kv = c.n_head_kv, a.head_dim = c.head_dim;
  a.window = c.window;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const uint8_t* blocks[2];
  a.contiguous_f32(kc.data(), vc.data(), blocks);
  std::vector<float> scratch(static_cast<size_t>(c.pos0 + c.n_q + 2 * c.head_dim));
  const int64_t tasks = c.n_q * c.n_head;
  // Uneven task ranges: tiles then hold partial GQA groups and partial query blocks.
  for (int s = 0; s < splits; ++s)
    k.attention(a, tasks * s / splits, tasks * (s + 1) / splits, scratch.data());
}

TEST(DenseSimd, AttentionMatchesReference) {
  // 8 query heads over 8 / 4 / 2 kv heads: GQA ratios 1, 2, 4.
  std::vector<AttnCase> cases;
  for (int64_t n_q : {1, 3, 17, 64})
    for (int64_t pos0 : {0, 29})
      for (int32_t window : {0, 5, 16})
        for (int32_t ratio : {1, 2, 4})
          for (int32_t hd : {64, 128, 80}) cases.push_back({n_q, pos0, 8, 8 / ratio, hd, window});
  cases.push_back({5, 3, 6, 2, 20, 0});    // head_dim not a multiple of 8 / 16, ratio 3
  cases.push_back({2, 40, 32, 1, 64, 7});  // MQA: a group larger than one tile
  const KernelTable& ref = reference_kernels();
  for (const Variant& var : variants()) {
    uint32_t seed = 1;
    for (const AttnCase& c : cases) {
      const int64_t n_pos = c.pos0 + c.n_q;
      const auto q = randn(static_cast<size_t>(c.n_q * c.n_head * c.head_dim), seed++);
      const auto kc = randn(static_cast<size_t>(n_pos * c.n_head_kv * c.head_dim), seed++);
      const auto vc = randn(static_cast<size_t>(n_pos * c.n_head_kv * c.head_dim), seed++);
      std::vector<float> want(q.size(), NAN), got(q.size(), NAN);
      run_attention(ref, c, q, kc, vc, &want, 1);
      for (int splits : {1, 3}) {
        std::fill(got.begin(), got.end(), NAN);
        run_attention(var.table, c, q, kc, vc, &got, splits);
        EXPECT_LT(scaled_err(got, want), 1e-5)
            << var.name << " n_q " << c.n_q << " pos0 " << c.pos0 << " heads " << c.n_head << "/"
            << c.n_head_kv << " hd " << c.head_dim << " window " << c.window << " splits "
            << splits;
      }
    }
  }
}

// A weight matrix [out, in] in dtype t (random values, rounded to t).
std::vector<uint8_t> make_weight(DType t, int64_t out, int64_t in, uint32_t seed) {
  const std::vector<float> v = randn(static_cast<size_t>(out * in), seed, 0.5f);
  const size_t esz = t == DType::F32 ? 4 : 2;
  std::vector<uint8_t> bytes(v.size() * esz);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&bytes[i * 4], &v[i], 4);
    } else {
      const uint16_t h = t == DType::F16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  return bytes;
}

MatmulRowsFn matmul_of(const KernelTable& k, DType t) {
  return t == DType::F32 ? k.matmul_f32 : t == DType::F16 ? k.matmul_f16 : k.matmul_bf16;
}

TEST(DenseSimd, MatmulsMatchReference) {
  const KernelTable& ref = reference_kernels();
  for (const Variant& var : variants())
    for (DType t : {DType::F32, DType::F16, DType::BF16})
      for (int64_t n : {1, 2, 5, 9, 13})
        for (auto [in, out] : {std::pair<int64_t, int64_t>{37, 13}, {64, 8}, {133, 7}, {256, 21}}) {
          const auto w = make_weight(t, out, in, 5);
          const uint64_t row_bytes = static_cast<uint64_t>(in) * (t == DType::F32 ? 4 : 2);
          const auto x = randn(static_cast<size_t>(n * in), 9);
          std::vector<float> scratch(static_cast<size_t>(kMatmulRowTile * in));
          // Whole range, then a middle row range: rows outside it must stay untouched.
          for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, out}, {1, out - 2}}) {
            std::vector<float> want(static_cast<size_t>(n * out), NAN), got(want);
            matmul_of(ref, t)(x.data(), n, in, w.data(), row_bytes, out, r0, r1, want.data(),
                              scratch.data());
            matmul_of(var.table, t)(x.data(), n, in, w.data(), row_bytes, out, r0, r1, got.data(),
                                    scratch.data());
            EXPECT_LT(scaled_err(got, want), 1e-5)
                << var.name << " " << dtype_name(t) << " n " << n << " in " << in << " out " << out
                << " rows " << r0 << ".." << r1;
          }
        }
}

TEST(DenseSimd, ElementwiseMatchReference) {
  const KernelTable& ref = reference_kernels();
  for (const Variant& var : variants())
    for (int64_t n : {1, 7, 16, 33, 100}) {
      const auto x = randn(static_cast<size_t>(n * 3), 21, 3.0f);
      const auto w = randn(static_cast<size_t>(n), 22);
      std::vector<float> want(x.size()), got(x.size());
      ref.rmsnorm(x.data(), w.data(), want.data(), 3, n, 1e-5f);
      var.table.rmsnorm(x.data(), w.data(), got.data(), 3, n, 1e-5f);
      EXPECT_LT(max_rel_err(got, want, 1e-3), 1e-5) << var.name << " rmsnorm " << n;
      using Op = void (*)(float*, int64_t);
      const std::pair<const char*, std::pair<Op, Op>> ops[] = {
          {"softmax", {ref.softmax, var.table.softmax}},
          {"silu", {ref.silu, var.table.silu}},
          {"gelu", {ref.gelu, var.table.gelu}}};
      for (const auto& [name, fns] : ops) {
        want = x, got = x;
        fns.first(want.data(), n);
        fns.second(got.data(), n);
        // The reference's 1 + tanh(u) cancels for negative inputs (~5e-5 relative at -4):
        // gelu is checked against double precision instead.
        if (std::string(name) == "gelu")
          for (int64_t i = 0; i < n; ++i) {
            const double v = x[i];
            want[i] = static_cast<float>(
                0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
          }
        EXPECT_LT(max_rel_err(got, want, 1e-3), 2e-5) << var.name << " " << name << " " << n;
        // Elements past n are not touched.
        for (size_t i = static_cast<size_t>(n); i < x.size(); ++i) ASSERT_EQ(got[i], x[i]);
      }
    }
}

TEST(DenseSimd, AddMulRopeMatchReference) {
  const KernelTable& ref = reference_kernels();
  for (const Variant& var : variants())
    for (int64_t n : {1, 7, 16, 33}) {
      const auto a = randn(static_cast<size_t>(n), 31), b = randn(static_cast<size_t>(n), 32);
      std::vector<float> want = a, got = a;
      ref.add(want.data(), b.data(), n);
      var.table.add(got.data(), b.data(), n);
      EXPECT_EQ(got, want) << var.name << " add " << n;
      want = a, got = a;
      ref.mul(want.data(), b.data(), n);
      var.table.mul(got.data(), b.data(), n);
      EXPECT_EQ(got, want) << var.name << " mul " << n;
    }
  // Head sizes around the vector width, partial rotary, both pair styles, freq factors.
  const std::vector<float> factors(64, 1.5f);
  for (const Variant& var : variants())
    for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved})
      for (auto [hd, rd] : {std::pair{64, 64}, {128, 128}, {80, 40}, {6, 6}, {96, 32}})
        for (int64_t pos : {0, 5, 3000}) {
          RopeParams p;
          p.style = style, p.head_dim = hd, p.rotary_dim = rd, p.theta = 500000.0f;
          p.freq_factors = pos == 5 ? factors.data() : nullptr;
          const auto x = randn(static_cast<size_t>(3 * hd), 33);
          std::vector<float> want = x, got = x;
          std::vector<float> cs(static_cast<size_t>(rd));
          rope_angles(pos, p, cs.data());
          ref.rope(want.data(), 3, cs.data(), p);
          var.table.rope(got.data(), 3, cs.data(), p);
          EXPECT_LT(max_rel_err(got, want, 1e-3), 1e-5)
              << var.name << " rope " << rope_style_name(style) << " " << hd << "/" << rd;
        }
}

// The KV row writer: F16 and BF16 bit-identical to the reference for finite values of every
// range (normal, half subnormals, below half's range, rounding ties, overflow to inf) and
// for infinities; NaN stays NaN; F32 / Q8 pass through. Row sizes around the vector widths.
TEST(DenseSimd, KvStoreRowMatchesReference) {
  const KernelTable& ref = reference_kernels();
  std::vector<float> special = {0.0f,
                                -0.0f,
                                1.0f,
                                -2.5f,
                                65504.0f,
                                65519.0f,
                                65520.0f,
                                -70000.0f,
                                6.1e-5f,
                                3.0e-6f,
                                -5.96e-8f,
                                2.0e-8f,
                                1e-40f,
                                -1e-39f,
                                1.0009765625f,
                                1.00048828125f,
                                3.0e38f,
                                INFINITY,
                                -INFINITY,
                                1.0f + 1.0f / 2048,
                                1.0f + 3.0f / 2048};
  for (const Variant& var : variants())
    for (KvType t : {KvType::kF16, KvType::kBF16, KvType::kF32, KvType::kQ8})
      for (auto [heads, hd] : {std::pair{1, 5}, {1, 8}, {2, 16}, {3, 24}, {8, 128}, {1, 64}}) {
        const size_t n = static_cast<size_t>(heads * hd);
        std::vector<float> x = randn(n, 41 + static_cast<uint32_t>(n), 3.0f);
        for (size_t i = 0; i < n; ++i)
          if (i % 3 == 0) x[i] = special[(i / 3) % special.size()];
        const size_t bytes = static_cast<size_t>(kv_row_bytes(t, heads, hd));
        std::vector<uint8_t> want(bytes + 8, 0xAB), got(bytes + 8, 0xAB);
        ref.kv_store_row(t, x.data(), heads, hd, want.data());
        var.table.kv_store_row(t, x.data(), heads, hd, got.data());
        EXPECT_EQ(got, want) << var.name << " " << kv_type_name(t) << " " << heads << "x" << hd;
      }
  // NaN: still a NaN after a round trip (the payload may differ from the reference's).
  for (const Variant& var : variants())
    for (KvType t : {KvType::kF16, KvType::kBF16}) {
      std::vector<float> x(16, 1.0f), back(16);
      x[3] = std::nanf("");
      x[12] = -std::nanf("");
      std::vector<uint8_t> row(static_cast<size_t>(kv_row_bytes(t, 1, 16)));
      var.table.kv_store_row(t, x.data(), 1, 16, row.data());
      kv_load_row(t, row.data(), 1, 16, back.data());
      EXPECT_TRUE(std::isnan(back[3]) && std::isnan(back[12])) << var.name << kv_type_name(t);
      EXPECT_EQ(back[0], 1.0f);
    }
}

// A (query, head) row's output depends on its own q and the cache only, not on the tile it
// was computed in: the same bits whatever the task split (tiles of every width, down to one
// row) and when each query runs alone as a decode step. The server relies on it (a sequence
// gives the same logits batched or alone); it fails if the prefill and decode paths of a
// variant sum in different orders.
TEST(DenseSimd, AttentionOfARowDoesNotDependOnItsTile) {
  const std::vector<AttnCase> cases = {
      {40, 3, 8, 4, 64, 0}, {33, 0, 16, 8, 128, 0}, {37, 5, 8, 2, 80, 16}, {21, 0, 8, 8, 20, 0}};
  for (const Variant& var : variants()) {
    uint32_t seed = 7;
    for (const AttnCase& c : cases) {
      const int64_t n_pos = c.pos0 + c.n_q, row = int64_t{c.n_head} * c.head_dim;
      const auto q = randn(static_cast<size_t>(c.n_q * row), seed++);
      const auto kc = randn(static_cast<size_t>(n_pos * c.n_head_kv * c.head_dim), seed++);
      const auto vc = randn(kc.size(), seed++);
      std::vector<float> whole(q.size(), NAN), got(q.size(), NAN);
      run_attention(var.table, c, q, kc, vc, &whole, 1);
      for (int splits : {2, 3, 7}) {
        run_attention(var.table, c, q, kc, vc, &got, splits);
        EXPECT_EQ(got, whole) << var.name << " n_q " << c.n_q << " splits " << splits;
      }
      for (int64_t i = 0; i < c.n_q; ++i) {
        const AttnCase one{1, c.pos0 + i, c.n_head, c.n_head_kv, c.head_dim, c.window};
        const std::vector<float> qi(q.begin() + i * row, q.begin() + (i + 1) * row);
        std::vector<float> oi(qi.size(), NAN);
        run_attention(var.table, one, qi, kc, vc, &oi, 1);
        EXPECT_TRUE(std::equal(oi.begin(), oi.end(), whole.begin() + i * row))
            << var.name << " n_q " << c.n_q << " query " << i << " alone";
      }
    }
  }
}

// Timings (printed, not asserted): 512-token prefill attention (16 heads, 8 kv heads, head
// dim 128) and an F16 2048x2048 GEMV, reference vs each variant, one thread.
TEST(DenseSimd, PrintTimings) {
  using Clock = std::chrono::steady_clock;
  const AttnCase c{512, 0, 16, 8, 128, 0};
  const auto q = randn(static_cast<size_t>(c.n_q * c.n_head * c.head_dim), 1);
  const auto kc = randn(static_cast<size_t>(c.n_q * c.n_head_kv * c.head_dim), 2);
  const auto vc = randn(kc.size(), 3);
  std::vector<float> o(q.size());
  const int64_t in = 2048, out = 2048;
  const auto w = make_weight(DType::F16, out, in, 4);
  const auto x = randn(static_cast<size_t>(in), 5);
  std::vector<float> y(static_cast<size_t>(out)), scratch(static_cast<size_t>(kMatmulRowTile * in));
  std::vector<Variant> vs = variants();
  vs.insert(vs.begin(), Variant{"ref", reference_kernels()});
  for (const Variant& v : vs) {
    auto t0 = Clock::now();
    run_attention(v.table, c, q, kc, vc, &o, 1);
    const double attn_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const int reps = 20;
    t0 = Clock::now();
    for (int r = 0; r < reps; ++r)
      v.table.matmul_f16(x.data(), 1, in, w.data(), in * 2, out, 0, out, y.data(), scratch.data());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
    std::printf(
        "[%s] attention 512x16/8x128 prefill: %.1f ms; F16 GEMV 2048x2048: %.3f ms, %.1f GB/s\n",
        v.name.c_str(), attn_ms, s * 1e3, double(w.size()) / s / 1e9);
  }
}

}  // namespace
}  // namespace edge
