// Attention over a paged KV cache: rows of position p live in block p / B of a shuffled
// block table, in F32, F16, BF16, Q8 or Q4 (rotated rows), K and V of the same or of
// different types. The reference on a paged typed cache must equal the
// reference on a contiguous F32 copy of the same (decoded) rows, and every SIMD variant
// must match the reference on the paged cache; blocks wholly before every query's window
// are null (a sliding ring reused them) and must never be read. Cases span GQA ratios
// 1/2/4/8, sliding windows, odd head sizes and odd key counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/dense_isa.h"

namespace edge {
namespace {

std::vector<std::pair<std::string, KernelTable>> simd_variants() {
  std::vector<std::pair<std::string, KernelTable>> out;
  for (const KernelTable& t : simd_dense_kernels()) out.emplace_back(t.name, t);
  return out;
}

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double scaled_err(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return 1e30;
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  return worst / scale;
}

// A paged cache of n_pos positions: physical blocks in shuffled order; blocks that end
// before `keep_from` are left null.
struct PagedCache {
  KvTypes types;
  int64_t block_tokens, k_row_bytes, v_row_bytes;
  std::vector<uint8_t> k_store, v_store;      // [n_blocks * block_tokens * k/v_row_bytes]
  std::vector<const uint8_t*> k_ptr, v_ptr;   // logical block -> first row (or null)
  std::vector<float> k_dec, v_dec;            // decoded rows [n_pos, kv_dim]

  PagedCache(KvTypes t, int64_t bt, int64_t n_pos, int32_t n_head_kv, int32_t hd, int64_t keep_from,
             uint32_t seed)
      : types(t),
        block_tokens(bt),
        k_row_bytes(kv_row_bytes(t.k, n_head_kv, hd)),
        v_row_bytes(kv_row_bytes(t.v, n_head_kv, hd)) {
    const int64_t kv_dim = int64_t{n_head_kv} * hd;
    const int64_t n_blocks = (n_pos + bt - 1) / bt;
    std::vector<int64_t> phys(static_cast<size_t>(n_blocks));
    std::iota(phys.begin(), phys.end(), 0);
    std::shuffle(phys.begin(), phys.end(), std::mt19937(seed));
    k_store.assign(static_cast<size_t>(n_blocks * bt * k_row_bytes), 0xAB);
    v_store.assign(static_cast<size_t>(n_blocks * bt * v_row_bytes), 0xCD);
    const std::vector<float> k = randn(static_cast<size_t>(n_pos * kv_dim), seed + 1);
    const std::vector<float> v = randn(static_cast<size_t>(n_pos * kv_dim), seed + 2);
    k_dec.resize(k.size());
    v_dec.resize(v.size());
    for (int64_t p = 0; p < n_pos; ++p) {
      const int64_t row = phys[p / bt] * bt + p % bt;
      uint8_t* kr = k_store.data() + row * k_row_bytes;
      uint8_t* vr = v_store.data() + row * v_row_bytes;
      kv_store_row(t.k, k.data() + p * kv_dim, n_head_kv, hd, kr);
      kv_store_row(t.v, v.data() + p * kv_dim, n_head_kv, hd, vr);
      kv_load_row(t.k, kr, n_head_kv, hd, k_dec.data() + p * kv_dim);
      kv_load_row(t.v, vr, n_head_kv, hd, v_dec.data() + p * kv_dim);
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      const bool dropped = (b + 1) * bt <= keep_from;
      k_ptr.push_back(dropped ? nullptr : k_store.data() + phys[b] * bt * k_row_bytes);
      v_ptr.push_back(dropped ? nullptr : v_store.data() + phys[b] * bt * v_row_bytes);
    }
  }
  void attach(AttentionArgs* a) const {
    a->k_blocks = k_ptr.data(), a->v_blocks = v_ptr.data();
    a->block_tokens = block_tokens;
    a->k_row_bytes = k_row_bytes, a->v_row_bytes = v_row_bytes;
    a->k_type = types.k, a->v_type = types.v;
  }
};

struct Case {
  int64_t n_q, pos0;
  int32_t n_head, n_head_kv, hd, window;
  int64_t block_tokens;
};

void run(const KernelTable& k, AttentionArgs a, std::vector<float>* out, int splits) {
  a.out = out->data();
  std::vector<float> scratch(static_cast<size_t>(a.pos0 + a.n_q + 2 * a.head_dim));
  const int64_t tasks = a.n_q * a.n_head;
  for (int s = 0; s < splits; ++s) k.attention(a, tasks * s / splits, tasks * (s + 1) / splits, scratch.data());
}

// One case in cache type t: the reference on the paged cache against the reference on a
// contiguous F32 copy, then every SIMD variant (whole task range, and three uneven parts
// that cut GQA groups and query blocks) against it.
void check_case(KvTypes t, const Case& c, uint32_t seed, const float* sinks = nullptr) {
  const int64_t n_pos = c.pos0 + c.n_q;
  const int64_t keep_from = c.window > 0 ? std::max<int64_t>(0, c.pos0 - c.window + 1) : 0;
  PagedCache cache(t, c.block_tokens, n_pos, c.n_head_kv, c.hd, keep_from, seed);
  const std::vector<float> q = randn(static_cast<size_t>(c.n_q * c.n_head * c.hd), seed + 3);
  AttentionArgs a;
  a.q = q.data(), a.n_q = c.n_q, a.pos0 = c.pos0, a.n_head = c.n_head;
  a.n_head_kv = c.n_head_kv, a.head_dim = c.hd, a.window = c.window;
  a.scale = 1.0f / std::sqrt(float(c.hd));
  a.sinks = sinks;
  std::vector<float> want(q.size(), NAN), got(q.size(), NAN);
  AttentionArgs contiguous = a;
  const uint8_t* blocks[2];
  contiguous.contiguous_f32(cache.k_dec.data(), cache.v_dec.data(), blocks);
  run(reference_kernels(), contiguous, &want, 1);
  AttentionArgs paged = a;
  cache.attach(&paged);
  run(reference_kernels(), paged, &got, 1);
  const std::string what = kv_types_name(t) + " n_q " + std::to_string(c.n_q) + " pos0 " +
                           std::to_string(c.pos0) + " heads " + std::to_string(c.n_head) + "/" +
                           std::to_string(c.n_head_kv) + " hd " + std::to_string(c.hd) +
                           " window " + std::to_string(c.window) + " B " +
                           std::to_string(c.block_tokens) + (sinks ? " sinks" : "");
  EXPECT_LT(scaled_err(got, want), 1e-6) << "ref " << what;
  for (const auto& [name, table] : simd_variants())
    for (int splits : {1, 3}) {
      std::fill(got.begin(), got.end(), NAN);
      run(table, paged, &got, splits);
      EXPECT_LT(scaled_err(got, want), 1e-5) << name << " " << what << " splits " << splits;
    }
}

// Every single type, and K and V of different types (Q4 beside each other type, both ways).
std::vector<KvTypes> type_pairs(int32_t hd) {
  std::vector<KvTypes> out = {KvType::kF32, KvType::kF16, KvType::kBF16, KvType::kQ8};
  if (hd % 2 == 0)
    out.insert(out.end(), {KvType::kQ4,
                           {KvType::kQ4, KvType::kF16},
                           {KvType::kF16, KvType::kQ4},
                           {KvType::kQ4, KvType::kQ8},
                           {KvType::kF32, KvType::kQ4},
                           {KvType::kQ8, KvType::kBF16}});
  return out;
}

TEST(PagedAttention, EveryTypeAndVariantMatchesTheContiguousReference) {
  const std::vector<Case> cases = {
      {1, 40, 8, 2, 64, 0, 16},  {1, 40, 8, 2, 64, 9, 16},  {7, 30, 8, 4, 32, 0, 5},
      {7, 30, 8, 4, 32, 6, 5},   {19, 50, 4, 1, 80, 13, 16}, {3, 0, 6, 2, 20, 0, 4},
      {1, 100, 16, 8, 128, 20, 16}};
  uint32_t seed = 7;
  for (const Case& c : cases)
    for (KvTypes t : type_pairs(c.hd)) check_case(t, c, seed += 4);
}

// Attention sinks (GPT-OSS): a per-head logit that only joins the denominator. Every variant
// against the reference, in the decode, prefill and lane tiles, and the reference against the
// definition: with a sink of -inf nothing changes, and a large sink shrinks every output
// by the same factor exp(s) / (sum + exp(s)).
TEST(PagedAttention, SinksJoinTheDenominatorInEveryVariant) {
  std::vector<float> sinks(16);
  for (size_t h = 0; h < sinks.size(); ++h) sinks[h] = -2.0f + 0.5f * static_cast<float>(h);
  uint32_t seed = 3000;
  for (KvTypes t : {KvTypes(KvType::kF32), KvTypes(KvType::kF16), KvTypes(KvType::kQ8),
                    KvTypes(KvType::kQ4), KvTypes(KvType::kQ4, KvType::kF16)})
    for (const Case& c : {Case{1, 40, 16, 4, 64, 0, 16}, Case{9, 30, 16, 2, 64, 12, 5},
                          Case{21, 3, 16, 16, 32, 0, 4}})
      check_case(t, c, seed += 4, sinks.data());
  // A single key: out = v * e^s0 / (e^s0 + e^sink), s0 the scaled score.
  const std::vector<float> q = randn(4, 1), k = randn(4, 2), v = randn(4, 3);
  AttentionArgs a;
  const uint8_t* blocks[2];
  a.contiguous_f32(k.data(), v.data(), blocks);
  a.q = q.data(), a.n_q = 1, a.pos0 = 0, a.n_head = 1, a.n_head_kv = 1, a.head_dim = 4;
  a.scale = 0.5f;
  const float sink = 1.25f;
  a.sinks = &sink;
  std::vector<float> out(4);
  run(reference_kernels(), a, &out, 1);
  double s0 = 0;
  for (int i = 0; i < 4; ++i) s0 += double(q[i]) * k[i] * 0.5;
  const double p = std::exp(s0) / (std::exp(s0) + std::exp(double(sink)));
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[i], p * v[i], 1e-5);
}

// The shared tiling (kernels/attention_blocking.h) on every cache type across GQA ratios
// 1/2/4/8 (one K/V block serves every query head of a group), with and without a sliding
// window, head sizes that are not a multiple of any vector width (odd ones too) and key
// counts that end inside a key block and a page.
TEST(PagedAttention, SharedTilingAcrossGqaRatiosWindowsAndOddSizes) {
  uint32_t seed = 1000;
  for (int32_t hd : {37, 64, 100})
    for (KvTypes t : type_pairs(hd))
      for (int32_t ratio : {1, 2, 4, 8})
        for (int32_t window : {0, 11})
          for (const auto& [n_q, pos0] : {std::pair<int64_t, int64_t>{1, 52}, {6, 21}})
            check_case(t, {n_q, pos0, 16, 16 / ratio, hd, window, 7}, seed += 4);
}

// The batch's caches: F16, then Q4 keys beside F16 values, then Q4 for both.
KvTypes i_types(size_t i) {
  return i == 0   ? KvTypes(KvType::kF16)
         : i == 1 ? KvTypes(KvType::kQ4, KvType::kF16)
                  : KvTypes(KvType::kQ4);
}

TEST(PagedAttention, BatchOfSequencesEqualsOneAtATime) {
  ThreadPool pool(2);
  std::vector<PagedCache> caches;
  std::vector<std::vector<float>> qs, outs, wants;
  std::vector<AttentionArgs> args;
  const std::vector<Case> cases = {{1, 33, 8, 2, 32, 0, 16}, {12, 0, 8, 2, 32, 0, 16}, {1, 5, 8, 2, 32, 4, 16}};
  uint32_t seed = 99;
  for (const Case& c : cases) {
    caches.emplace_back(i_types(caches.size()), c.block_tokens, c.pos0 + c.n_q, c.n_head_kv, c.hd,
                        0, seed++);
    qs.push_back(randn(static_cast<size_t>(c.n_q * c.n_head * c.hd), seed++));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    AttentionArgs a;
    a.q = qs[i].data(), a.n_q = c.n_q, a.pos0 = c.pos0, a.n_head = c.n_head;
    a.n_head_kv = c.n_head_kv, a.head_dim = c.hd, a.window = c.window, a.scale = 0.2f;
    caches[i].attach(&a);
    outs.emplace_back(qs[i].size(), NAN);
    wants.emplace_back(qs[i].size(), NAN);
    a.out = wants[i].data();
    attention(select_kernels(), a, pool);
    a.out = outs[i].data();
    args.push_back(a);
  }
  attention_batch(select_kernels(), args, pool);
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(outs[i], wants[i]) << "sequence " << i;
}

// A query's output must not depend on the tile it came in: the last query of a prompt
// chunk (a wide tile, rows in lanes) and the same query decoded alone (a tile of its GQA
// group's four heads, which reads F16/Q8 keys and F16 values in place) give the same bits,
// for every cache type pair; head sizes with and without a partial last vector.
TEST(PagedAttention, DecodeTileEqualsTheSameQueryInAPromptChunk) {
  ThreadPool pool(1);
  uint32_t seed = 500;
  for (int32_t hd : {64, 100})
    for (KvTypes t : type_pairs(hd)) {
      const int32_t n_head = 8, n_head_kv = 2;
      const int64_t n_q = 6, pos0 = 37;
      PagedCache cache(t, 16, pos0 + n_q, n_head_kv, hd, 0, seed++);
      const std::vector<float> q = randn(static_cast<size_t>(n_q * n_head * hd), seed++);
      AttentionArgs a;
      a.q = q.data(), a.n_q = n_q, a.pos0 = pos0, a.n_head = n_head, a.n_head_kv = n_head_kv;
      a.head_dim = hd, a.scale = 0.15f;
      cache.attach(&a);
      std::vector<float> chunk(q.size(), NAN);
      a.out = chunk.data();
      attention(select_kernels(), a, pool);
      const int64_t row = int64_t{n_head} * hd;
      std::vector<float> alone(static_cast<size_t>(row), NAN);
      a.q = q.data() + (n_q - 1) * row, a.n_q = 1, a.pos0 = pos0 + n_q - 1, a.out = alone.data();
      attention(select_kernels(), a, pool);
      const std::vector<float> last(chunk.end() - row, chunk.end());
      EXPECT_EQ(alone, last) << "K " << kv_type_name(t.k) << " V " << kv_type_name(t.v)
                             << " head_dim " << hd;
    }
}

TEST(KvRows, RoundTripWithinTheTypesPrecision) {
  const int32_t n_head_kv = 3, hd = 24;
  const std::vector<float> x = randn(static_cast<size_t>(n_head_kv * hd), 5);
  const std::vector<std::pair<KvType, double>> bounds = {{KvType::kF32, 0.0},
                                                         {KvType::kF16, 1e-3},
                                                         {KvType::kBF16, 8e-3},
                                                         {KvType::kQ8, 1.0 / 127 + 1e-6},
                                                         {KvType::kQ4, 0.5}};
  for (const auto& [t, rel] : bounds) {
    std::vector<uint8_t> row(static_cast<size_t>(kv_row_bytes(t, n_head_kv, hd)));
    std::vector<float> back(x.size());
    kv_store_row(t, x.data(), n_head_kv, hd, row.data());
    kv_load_row(t, row.data(), n_head_kv, hd, back.data());
    for (int32_t h = 0; h < n_head_kv; ++h) {
      float amax = 0;
      for (int32_t d = 0; d < hd; ++d) amax = std::max(amax, std::abs(x[h * hd + d]));
      std::vector<float> slice(hd);
      kv_load_head(t, row.data(), n_head_kv, hd, h, slice.data());
      for (int32_t d = 0; d < hd; ++d) {
        const float v = x[h * hd + d];
        const bool scaled = t == KvType::kQ8 || t == KvType::kQ4;
        EXPECT_LE(std::abs(back[h * hd + d] - v), rel * (scaled ? amax : std::abs(v)) + 1e-7)
            << kv_type_name(t);
        EXPECT_EQ(slice[d], back[h * hd + d]);
      }
    }
  }
  EXPECT_EQ(kv_row_bytes(KvType::kQ8, n_head_kv, hd), n_head_kv * hd + 4 * n_head_kv);
  // Q4: half a byte per element and an f16 scale per group (24 = one group per head).
  EXPECT_EQ(kv_row_bytes(KvType::kQ4, n_head_kv, hd), n_head_kv * hd / 2 + 2 * n_head_kv);
  EXPECT_EQ(kv_row_bytes(KvType::kQ4, 8, 128), 8 * 64 + 2 * 8 * 4);
  EXPECT_FALSE(kv_type_fits(KvType::kQ4, 37));
  EXPECT_TRUE(kv_type_fits(KvType::kQ8, 37));
  EXPECT_TRUE(check_kv_types(KvTypes(KvType::kQ8, KvType::kQ4), 38).ok());
  const Status odd = check_kv_types(KvTypes(KvType::kQ8, KvType::kQ4), 37);
  EXPECT_FALSE(odd.ok());
  EXPECT_NE(odd.message().find("q4 cannot hold heads of 37"), std::string::npos) << odd.message();
  KvType parsed;
  EXPECT_TRUE(parse_kv_type("q4", &parsed));
  EXPECT_EQ(parsed, KvType::kQ4);
  EXPECT_TRUE(parse_kv_type("bf16", &parsed));
  EXPECT_EQ(parsed, KvType::kBF16);
  EXPECT_FALSE(parse_kv_type("f8", &parsed));
  auto pair = parse_kv_types("q4", "f16");
  ASSERT_TRUE(pair.ok());
  EXPECT_EQ(*pair, KvTypes(KvType::kQ4, KvType::kF16));
  EXPECT_EQ(kv_types_name(*pair), "q4/f16");
  EXPECT_EQ(*parse_kv_types("q8", ""), KvTypes(KvType::kQ8));
  auto bad = parse_kv_types("q8", "q3");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'q3'"), std::string::npos) << bad.status().message();
}

// kv_rotate is orthogonal (lengths kept, inverse undoes it) on power-of-two heads and on
// heads cut into power-of-two blocks (96 = 3 x 32, 20 = 5 x 4).
TEST(KvRows, RotationIsOrthogonal) {
  for (int32_t hd : {128, 96, 20, 8}) {
    const std::vector<float> x = randn(static_cast<size_t>(hd), static_cast<uint32_t>(hd));
    std::vector<float> y = x;
    kv_rotate(y.data(), hd, false);
    double nx = 0, ny = 0, moved = 0;
    for (int32_t i = 0; i < hd; ++i)
      nx += x[i] * x[i], ny += y[i] * y[i], moved += std::abs(y[i] - x[i]);
    EXPECT_NEAR(ny, nx, 1e-4 * nx) << hd;
    EXPECT_GT(moved, 0.1) << hd << ": the rotation did nothing";
    kv_rotate(y.data(), hd, true);
    for (int32_t i = 0; i < hd; ++i) EXPECT_NEAR(y[i], x[i], 1e-5) << hd << " " << i;
  }
}

// Why Q4 rows are rotated: keys with a few large channels (as trained models' keys have)
// quantised in groups of 32 lose the small channels that share a group with a large one.
// q.k errors over random queries: Q4 as stored (rotated) against the same 4-bit group
// codec without the rotation (written here), on the same keys.
TEST(KvRows, RotationKeepsFourBitKeysAccurate) {
  const int32_t hd = 128, n_keys = 64, n_queries = 32;
  std::vector<float> keys = randn(static_cast<size_t>(n_keys * hd), 21);
  for (int32_t j = 0; j < n_keys; ++j) keys[j * hd + 5] += 12.0f, keys[j * hd + 70] -= 9.0f;
  const std::vector<float> qs = randn(static_cast<size_t>(n_queries * hd), 22);
  const auto plain_q4 = [&](const float* x, float* out) {  // no rotation, 16 levels per group
    for (int32_t g = 0; g < hd; g += 32) {
      float peak = 0;
      for (int32_t i = g; i < g + 32; ++i)
        if (std::abs(x[i]) > std::abs(peak)) peak = x[i];
      const float scale = peak / -8.0f;
      for (int32_t i = g; i < g + 32; ++i)
        out[i] = scale == 0 ? 0 : std::clamp<float>(std::round(x[i] / scale), -8, 7) * scale;
    }
  };
  double err_rot = 0, err_plain = 0;
  std::vector<uint8_t> row(static_cast<size_t>(kv_row_bytes(KvType::kQ4, 1, hd)));
  std::vector<float> rot(hd), plain(hd);
  for (int32_t j = 0; j < n_keys; ++j) {
    const float* k = keys.data() + j * hd;
    kv_store_row(KvType::kQ4, k, 1, hd, row.data());
    kv_load_row(KvType::kQ4, row.data(), 1, hd, rot.data());
    plain_q4(k, plain.data());
    for (int32_t i = 0; i < n_queries; ++i) {
      const float* q = qs.data() + i * hd;
      double exact = 0, a = 0, b = 0;
      for (int32_t d = 0; d < hd; ++d)
        exact += q[d] * k[d], a += q[d] * rot[d], b += q[d] * plain[d];
      err_rot += (a - exact) * (a - exact), err_plain += (b - exact) * (b - exact);
    }
  }
  const double rms_rot = std::sqrt(err_rot / (n_keys * n_queries));
  const double rms_plain = std::sqrt(err_plain / (n_keys * n_queries));
  std::printf("q.k rms error, 4-bit keys with two large channels: rotated %.3f, plain %.3f\n",
              rms_rot, rms_plain);
  EXPECT_LT(rms_rot, 0.6 * rms_plain);
}

}  // namespace
}  // namespace edge
