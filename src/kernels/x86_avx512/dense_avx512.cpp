// AVX-512 dense kernels: F32/F16/BF16 matmul, flash-style attention, rmsnorm / softmax /
// silu / gelu. Contracts are those of kernels/api.h.
//
// Matmul: the shared register tile (kernels/dense_tile.h) of R (<= 4) weight rows x T (<= 6)
// tokens, R*T zmm accumulators, each 16-wide weight chunk loaded (F16 via vcvtph2ps, BF16 by
// a 16-bit shift) once for the T tokens, masked loads for the tail; the shared loop nest
// (kernels/dense_blocking.h) takes tokens in blocks whose x rows fit in L2, so a prefill
// streams the weights n / block times instead of re-reading x from L3 for every row tile.
// The scratch buffer is not needed.
//
// Attention: the shared flash tiling (kernels/attention_blocking.h) over 16-key blocks (one
// zmm of scores); this file supplies its vector primitives (AttnPrims), which the matmul
// tile's (MatmulPrims) extend.
//
// This file is compiled with AVX-512 flags: it must not instantiate inline functions or
// templates shared with portable code (the linker could keep this copy for everyone), so it
// uses only intrinsics, its own helpers in an anonymous namespace and the shared templates
// instantiated over those helpers (internal linkage).
#include <immintrin.h>

#include <cstdint>

#include "kernels/attention_blocking.h"
#include "kernels/dense_isa.h"
#include "kernels/dense_tile.h"
#include "kernels/x86_avx512/avx512_math.h"

namespace edge {
namespace {

// ---- attention ----------------------------------------------------------------------

// The vector primitives the shared flash-attention tiling (kernels/attention_blocking.h)
// runs on: 16 keys per block (one zmm of scores), 8 zmm output accumulators in p.V.
struct AttnPrims {
  using V = __m512;
  using Tail = __mmask16;
  using Lanes = __mmask16;
  static constexpr int kW = 16;
  static constexpr int kPvChunks = 8;
  // Rows in lanes for prefill tiles: 32 rows (two vectors), 32 keys per block.
  static constexpr bool kRowLanes = true;
  static constexpr int kTileRows = 32;  // (query, head) rows per tile
  static constexpr int kLaneBlock = 32;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static Tail tail(int64_t rem) { return tail_mask(rem); }
  static V load_tail(Tail m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static void store_tail(Tail m, float* p, V v) { _mm512_mask_storeu_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V exp(V x) { return exp16(x); }
  static float exp1(float x) { return _mm512_cvtss_f32(exp16(_mm512_set1_ps(x))); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  static Lanes lanes(int j0, int j1) {
    return static_cast<__mmask16>(tail_mask(j1) & ~tail_mask(j0));
  }
  static float hmax(Lanes m, V v) { return _mm512_mask_reduce_max_ps(m, v); }
  static V keep(Lanes m, V v) { return _mm512_maskz_mov_ps(m, v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static Lanes in_range(V lo, V hi, V x) {  // lo <= x <= hi
    return _mm512_cmp_ps_mask(lo, x, _CMP_LE_OQ) & _mm512_cmp_ps_mask(x, hi, _CMP_LE_OQ);
  }
  // In place: lane j of v[i] <-> lane i of v[j] (16 x 16).
  static void transpose(V* v) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; ++i) {  // per 128-bit lane L: rows 2i, 2i+1 x columns 4L..4L+3
      t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    for (int j = 0; j < 4; ++j) {  // u[4j + c], lane L: column 4L + c of rows 4j..4j+3
      const __m512d a = _mm512_castps_pd(t[4 * j]), b = _mm512_castps_pd(t[4 * j + 2]);
      const __m512d c = _mm512_castps_pd(t[4 * j + 1]), d = _mm512_castps_pd(t[4 * j + 3]);
      u[4 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      u[4 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
      u[4 * j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
      u[4 * j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    for (int c = 0; c < 4; ++c) {  // column 4L + c = lane L of u[c], u[4 + c], u[8 + c], u[12 + c]
      const __m512 a0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
      const __m512 a1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
      const __m512 b0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
      const __m512 b1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
      v[c] = _mm512_shuffle_f32x4(a0, b0, 0x88);
      v[8 + c] = _mm512_shuffle_f32x4(a0, b0, 0xDD);
      v[4 + c] = _mm512_shuffle_f32x4(a1, b1, 0x88);
      v[12 + c] = _mm512_shuffle_f32x4(a1, b1, 0xDD);
    }
  }
  static V blend(Lanes m, V a, V b) { return _mm512_mask_blend_ps(m, b, a); }  // m ? a : b

  // Lane j of the result = horizontal sum of a[j] (16 accumulators -> 16 dot products).
  static V transpose_sum(const V* a) {
    __m512 t[8], u[4];
    for (int k = 0; k < 8; ++k)  // per 128-bit lane: [a02, b02, a13, b13]
      t[k] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * k], a[2 * k + 1]),
                           _mm512_unpackhi_ps(a[2 * k], a[2 * k + 1]));
    for (int g = 0; g < 4; ++g) {  // per 128-bit lane: keys 4g..4g+3, that lane's partial sums
      const __m512d x = _mm512_castps_pd(t[2 * g]), y = _mm512_castps_pd(t[2 * g + 1]);
      u[g] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                           _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    const __m512 v01 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512 v23 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(v01, v23, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(v01, v23, _MM_SHUFFLE(3, 1, 3, 1)));
  }

  // Typed KV elements as F32; masked loads read only lanes < rem.
  static V load_f16(const uint16_t* p, int64_t rem) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(tail_mask(rem), p));
  }
  static V load_bf16(const uint16_t* p, int64_t rem) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(tail_mask(rem), p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static V load_i8(const int8_t* p, int64_t rem) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(tail_mask(rem), p)));
  }
};

// ---- matmul -------------------------------------------------------------------------

// The register tile's primitives (kernels/dense_tile.h): the attention's, 6 tokens x 4 rows
// (24 zmm accumulators; the x rows of a token block, half the L2, stay there), masked tails.
struct MatmulPrims : AttnPrims {
  static constexpr int kTokens = 6;
  static constexpr bool kMaskedTail = true;
  [[gnu::always_inline]] static V load_f16_full(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  [[gnu::always_inline]] static V load_bf16_full(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

// ---- elementwise --------------------------------------------------------------------

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    __m512 ss = _mm512_setzero_ps();
    for (int64_t i = 0; i < dim; i += 16) {
      const __m512 v = _mm512_maskz_loadu_ps(tail_mask(dim - i), xr + i);
      ss = _mm512_fmadd_ps(v, v, ss);
    }
    const float mean = _mm512_reduce_add_ps(ss) / static_cast<float>(dim);
    const __m512 inv = _mm512_set1_ps(1.0f / __builtin_sqrtf(mean + eps));
    for (int64_t i = 0; i < dim; i += 16) {
      const __mmask16 m = tail_mask(dim - i);
      const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + i), inv);
      _mm512_mask_storeu_ps(yr + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i)));
    }
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  __m512 mx = _mm512_set1_ps(-__builtin_inff());
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    mx = _mm512_mask_max_ps(mx, k, mx, _mm512_maskz_loadu_ps(k, x + i));
  }
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 e =
        _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m)));
    _mm512_mask_storeu_ps(x + i, k, e);
    sum = _mm512_add_ps(sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(inv, _mm512_maskz_loadu_ps(k, x + i)));
  }
}

// a *= b, a += b: exact per element, so the same bits as the reference.
void mul(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(
        a + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i)));
  }
}

void add(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(
        a + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i)));
  }
}

void silu(float* x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), v));
    _mm512_mask_storeu_ps(x + i, k, _mm512_div_ps(v, _mm512_add_ps(one, e)));
  }
}

// 0.5 v (1 + tanh(u)) = v e / (e + 1), e = exp(2u), u = sqrt(2/pi) (v + 0.044715 v^3)
// (no cancellation for negative v; e is clamped finite, so large v gives v).
void gelu(float* x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 c0 = _mm512_set1_ps(2.0f * 0.7978845608028654f);
  const __m512 c1 = _mm512_set1_ps(0.044715f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    const __m512 inner =
        _mm512_mul_ps(c0, _mm512_fmadd_ps(_mm512_mul_ps(c1, v), _mm512_mul_ps(v, v), v));
    const __m512 e = exp16(inner);
    const __m512 g = _mm512_div_ps(e, _mm512_add_ps(e, one));
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(v, g));
  }
}

// F16 through vcvtps2ph (round to nearest even, as the reference), BF16 by the reference's
// integer rounding 16 lanes at a time (NaN lanes set to a quiet NaN; not vcvtneps2bf16,
// which flushes subnormal inputs); masked tails. F32 and Q8 go to the reference.
void store_kv_row(KvType t, const float* src, int32_t n_head_kv, int32_t head_dim, uint8_t* dst) {
  const int64_t n = static_cast<int64_t>(n_head_kv) * head_dim;
  if (t != KvType::kF16 && t != KvType::kBF16)
    return edge::kv_store_row(t, src, n_head_kv, head_dim, dst);
  auto* d = reinterpret_cast<uint16_t*>(dst);
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(m, src + i);
    __m256i h;
    if (t == KvType::kF16) {
      h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
    } else {
      const __m512i u = _mm512_castps_si512(x);
      const __m512i r = _mm512_add_epi32(
          u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
      const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs_mask), inf);
      const __m512i w = _mm512_mask_or_epi32(_mm512_srli_epi32(r, 16), nan,
                                             _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
      h = _mm512_cvtepi32_epi16(w);
    }
    _mm256_mask_storeu_epi16(d + i, m, h);
  }
}

}  // namespace

void install_dense_avx512(KernelTable* t) {
  dense::install_matmuls<MatmulPrims>(t);
  t->attention = attn::Flash<AttnPrims>::attention;
  t->rmsnorm = rmsnorm;
  t->softmax = softmax;
  t->silu = silu;
  t->mul = mul;
  t->add = add;
  t->gelu = gelu;
  t->kv_store_row = store_kv_row;
  install_delta_net_avx512(t);
  install_snake_avx512(t);
}

}  // namespace edge
