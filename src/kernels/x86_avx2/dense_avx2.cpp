// AVX2 + FMA + F16C dense kernels: F32/F16/BF16 matmul, flash-style attention, rmsnorm /
// softmax / silu / gelu. 8-wide vectors: the matmul is the shared register tile
// (kernels/dense_tile.h, 4 weight rows x 2 tokens) in the shared loop nest
// (kernels/dense_blocking.h); attention key blocks of 8 run by the shared tiling
// (kernels/attention_blocking.h). This file holds the primitives both run on.
//
// This file is compiled with AVX2 flags: it must not instantiate inline functions or
// templates shared with portable code (the linker could keep this copy for everyone), so it
// uses only intrinsics, its own helpers in an anonymous namespace and the shared templates
// instantiated over those helpers (internal linkage).
#include <immintrin.h>

#include <cstdint>

#include "kernels/attention_blocking.h"
#include "kernels/dense_isa.h"
#include "kernels/dense_tile.h"
#include "kernels/x86_avx2/avx2_math.h"

namespace edge {
namespace {

inline float hmax8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// ---- attention ----------------------------------------------------------------------

// The vector primitives the shared flash-attention tiling (kernels/attention_blocking.h)
// runs on: 8 keys per block (one ymm of scores), 8 ymm output accumulators in p.V.
struct AttnPrims {
  using V = __m256;
  using Tail = __m256i;
  using Lanes = __m256;
  static constexpr int kW = 8;
  static constexpr int kPvChunks = 8;
  // Rows in lanes for prefill tiles, 24 keys per block (passes of 12 score registers).
  static constexpr bool kRowLanes = true;
  // 24 rows (3 vectors): each tile converts the F16 K/V blocks it reads, so wider tiles
  // convert less per row; 16 -> 24 measured x1.03-1.07 on a 512-query prefill (Zen 4, one
  // thread, bench/results/2026-12-04-avx2-q4km-scales-attention/).
  static constexpr int kTileRows = 24;  // (query, head) rows per tile
  static constexpr int kLaneBlock = 24;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static Tail tail(int64_t rem) { return tail_mask(rem); }
  static V load_tail(Tail m, const float* p) { return _mm256_maskload_ps(p, m); }
  static void store_tail(Tail m, float* p, V v) { _mm256_maskstore_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V exp(V x) { return exp8(x); }
  static float exp1(float x) { return _mm256_cvtss_f32(exp8(_mm256_set1_ps(x))); }
  static float hsum(V v) { return hsum8(v); }
  static Lanes lanes(int j0, int j1) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(
        _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(j1), idx),
                         _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(j0 - 1))));
  }
  static float hmax(Lanes m, V v) {
    return hmax8(_mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), v, m));
  }
  static V keep(Lanes m, V v) { return _mm256_and_ps(m, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static Lanes in_range(V lo, V hi, V x) {  // lo <= x <= hi
    return _mm256_and_ps(_mm256_cmp_ps(lo, x, _CMP_LE_OQ), _mm256_cmp_ps(x, hi, _CMP_LE_OQ));
  }
  // In place: lane j of v[i] <-> lane i of v[j] (8 x 8).
  static void transpose(V* v) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; ++i) {  // per 128-bit lane L: rows 2i, 2i+1 x columns 4L..4L+3
      t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    for (int j = 0; j < 2; ++j) {  // u[4j + c], lane L: column 4L + c of rows 4j..4j+3
      const __m256d a = _mm256_castps_pd(t[4 * j]), b = _mm256_castps_pd(t[4 * j + 2]);
      const __m256d c = _mm256_castps_pd(t[4 * j + 1]), d = _mm256_castps_pd(t[4 * j + 3]);
      u[4 * j] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, b));
      u[4 * j + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, b));
      u[4 * j + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(c, d));
      u[4 * j + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(c, d));
    }
    for (int c = 0; c < 4; ++c) {  // column 4L + c = lane L of u[c], u[4 + c]
      v[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
      v[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
  }
  static V blend(Lanes m, V a, V b) { return _mm256_blendv_ps(b, a, m); }  // m ? a : b

  // Lane j of the result = horizontal sum of a[j].
  static V transpose_sum(const V* a) {
    __m256 t[4];
    for (int k = 0; k < 4; ++k)  // per 128-bit lane: [a02, b02, a13, b13]
      t[k] = _mm256_add_ps(_mm256_unpacklo_ps(a[2 * k], a[2 * k + 1]),
                           _mm256_unpackhi_ps(a[2 * k], a[2 * k + 1]));
    __m256 u[2];
    for (int g = 0; g < 2; ++g) {  // per 128-bit lane: keys 4g..4g+3
      const __m256d x = _mm256_castps_pd(t[2 * g]), y = _mm256_castps_pd(t[2 * g + 1]);
      u[g] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(x, y)),
                           _mm256_castpd_ps(_mm256_unpackhi_pd(x, y)));
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(u[0], u[1], 0x20),
                         _mm256_permute2f128_ps(u[0], u[1], 0x31));
  }

  // 8 16-bit (or 8-bit) elements, zero past rem: a full load, or a copy of the tail.
  static __m128i load16x8(const uint16_t* p, int64_t rem) {
    if (rem >= 8) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    alignas(16) uint16_t buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j = 0; j < rem; ++j) buf[j] = p[j];
    return _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
  }
  static V load_f16(const uint16_t* p, int64_t rem) { return _mm256_cvtph_ps(load16x8(p, rem)); }
  static V load_bf16(const uint16_t* p, int64_t rem) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load16x8(p, rem)), 16));
  }
  static V load_i8(const int8_t* p, int64_t rem) {
    int64_t w = 0;
    if (rem >= 8) {
      __builtin_memcpy(&w, p, 8);
    } else {
      for (int64_t j = 0; j < rem; ++j) reinterpret_cast<int8_t*>(&w)[j] = p[j];
    }
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(w)));
  }
};

// ---- matmul -------------------------------------------------------------------------

// The register tile's primitives (kernels/dense_tile.h): the attention's, 2 tokens x 4 rows
// (8 ymm accumulators; the x rows of a token block, half the L2, stay there), masked tails.
struct MatmulPrims : AttnPrims {
  static constexpr int kTokens = 2;
  static constexpr bool kMaskedTail = true;
  [[gnu::always_inline]] static V load_f16_full(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  [[gnu::always_inline]] static V load_bf16_full(const uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
};

// ---- elementwise --------------------------------------------------------------------

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    __m256 ss = _mm256_setzero_ps();
    for (int64_t i = 0; i < dim; i += 8) {
      const __m256 v = load8(xr + i, dim - i);
      ss = _mm256_fmadd_ps(v, v, ss);
    }
    const float mean = hsum8(ss) / static_cast<float>(dim);
    const __m256 inv = _mm256_set1_ps(1.0f / __builtin_sqrtf(mean + eps));
    for (int64_t i = 0; i < dim; i += 8) {
      const __m256 v = _mm256_mul_ps(load8(xr + i, dim - i), inv);
      store8(yr + i, dim - i, _mm256_mul_ps(v, load8(w + i, dim - i)));
    }
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  __m256 mx = _mm256_set1_ps(-__builtin_inff());
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    mx = _mm256_blendv_ps(mx, _mm256_max_ps(mx, load8(x + i, n - i)), _mm256_castsi256_ps(k));
  }
  const __m256 m = _mm256_set1_ps(hmax8(mx));
  __m256 sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    const __m256 e =
        _mm256_and_ps(_mm256_castsi256_ps(k), exp8(_mm256_sub_ps(load8(x + i, n - i), m)));
    store8(x + i, n - i, e);
    sum = _mm256_add_ps(sum, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / hsum8(sum));
  for (int64_t i = 0; i < n; i += 8) store8(x + i, n - i, _mm256_mul_ps(inv, load8(x + i, n - i)));
}

// a *= b, a += b: exact per element, so the same bits as the reference.
void mul(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; i += 8)
    store8(a + i, n - i, _mm256_mul_ps(load8(a + i, n - i), load8(b + i, n - i)));
}

void add(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; i += 8)
    store8(a + i, n - i, _mm256_add_ps(load8(a + i, n - i), load8(b + i, n - i)));
}

void silu(float* x, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = load8(x + i, n - i);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), v));
    store8(x + i, n - i, _mm256_div_ps(v, _mm256_add_ps(one, e)));
  }
}

// 0.5 v (1 + tanh(u)) = v e / (e + 1), e = exp(2u), u = sqrt(2/pi) (v + 0.044715 v^3)
// (no cancellation for negative v; e is clamped finite, so large v gives v).
void gelu(float* x, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 c0 = _mm256_set1_ps(2.0f * 0.7978845608028654f);
  const __m256 c1 = _mm256_set1_ps(0.044715f);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = load8(x + i, n - i);
    const __m256 inner =
        _mm256_mul_ps(c0, _mm256_fmadd_ps(_mm256_mul_ps(c1, v), _mm256_mul_ps(v, v), v));
    const __m256 e = exp8(inner);
    const __m256 g = _mm256_div_ps(e, _mm256_add_ps(e, one));
    store8(x + i, n - i, _mm256_mul_ps(v, g));
  }
}

// F16 through F16C (round to nearest even, as the reference), BF16 by the reference's
// integer rounding 8 lanes at a time (NaN lanes set to a quiet NaN); F32 and Q8 go to the
// reference.
void store_kv_row(KvType t, const float* src, int32_t n_head_kv, int32_t head_dim, uint8_t* dst) {
  const int64_t n = static_cast<int64_t>(n_head_kv) * head_dim;
  if (t != KvType::kF16 && t != KvType::kBF16)
    return edge::kv_store_row(t, src, n_head_kv, head_dim, dst);
  auto* d = reinterpret_cast<uint16_t*>(dst);
  int64_t i = 0;
  if (t == KvType::kF16) {
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  } else {
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    for (; i + 8 <= n; i += 8) {
      const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(src + i));
      const __m256i r = _mm256_add_epi32(
          u, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
      const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
      const __m256i h = _mm256_blendv_epi8(
          _mm256_srli_epi32(r, 16),
          _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
      // 8 x u32 (values < 2^16) -> 8 x u16: pack within lanes, then order the two halves.
      const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(h, h), 0x08);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_castsi256_si128(packed));
    }
  }
  for (; i < n; ++i)  // the tail, through the reference (head_dim is a multiple of 8 so far)
    edge::kv_store_row(t, src + i, 1, 1, reinterpret_cast<uint8_t*>(d + i));
}

}  // namespace

void install_dense_avx2(KernelTable* t) {
  dense::install_matmuls<MatmulPrims>(t);
  t->attention = attn::Flash<AttnPrims>::attention;
  t->rmsnorm = rmsnorm;
  t->softmax = softmax;
  t->silu = silu;
  t->mul = mul;
  t->add = add;
  t->gelu = gelu;
  t->kv_store_row = store_kv_row;
  install_delta_net_avx2(t);
  install_snake_avx2(t);
}

}  // namespace edge
