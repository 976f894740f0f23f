// AVX2 + FMA + F16C dense kernels: F32/F16/BF16 matmul, flash-style attention, rmsnorm /
// softmax / silu / gelu. Same structure as x86_avx512/dense_avx512.cpp (see its header) with
// 8-wide vectors: matmul tiles of 4 weight rows x 2 tokens (16 ymm registers), attention key
// blocks of 8.
//
// This file is compiled with AVX2 flags: it must not instantiate inline functions or
// templates shared with portable code (the linker could keep this copy for everyone), so it
// uses only intrinsics and its own helpers in an anonymous namespace.
#include <immintrin.h>

#include <cstdint>

#include "kernels/dense_blocking.h"
#include "kernels/dense_isa.h"

namespace edge::ref {
void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch);
}

namespace edge {
namespace {

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// Lanes [0, rem) set (rem clamped to [0, 8]).
inline __m256i tail_mask(int64_t rem) {
  const int32_t r = static_cast<int32_t>(rem < 0 ? 0 : (rem > 8 ? 8 : rem));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// exp(x): x = n ln2 + r, degree-7 Taylor polynomial of exp(r), 2^n built in the exponent
// field (x clamped so that n stays in [-126, 127]).
inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// ---- matmul -------------------------------------------------------------------------

enum WKind { kF32, kF16, kBF16 };

template <int K>
inline __m256 load_w(const uint8_t* row, int64_t i) {
  if constexpr (K == kF32) return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i));
  if constexpr (K == kF16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// The last rem (< 8) elements, zero-padded.
template <int K>
inline __m256 load_w_tail(const uint8_t* row, int64_t i, int64_t rem) {
  if constexpr (K == kF32)
    return _mm256_maskload_ps(reinterpret_cast<const float*>(row) + i, tail_mask(rem));
  alignas(16) uint16_t buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const uint16_t* src = reinterpret_cast<const uint16_t*>(row) + i;
  for (int64_t j = 0; j < rem; ++j) buf[j] = src[j];
  const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
  if constexpr (K == kF16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// y[t, r] for R weight rows x T tokens (x rows `in` apart, y rows `out` apart).
template <int K, int R, int T>
void mm_tile(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out) {
  __m256 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= in; i += 8) {
    __m256 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load_w<K>(w[r], i);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_loadu_ps(x + t * in + i);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  if (i < in) {
    const __m256i m = tail_mask(in - i);
    __m256 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load_w_tail<K>(w[r], i, in - i);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_maskload_ps(x + t * in + i, m);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * out + r] = hsum8(acc[r][t]);
}

// The register tile the shared loop nest (kernels/dense_blocking.h) runs; 2 tokens x 4 rows:
// 8 ymm accumulators, the x rows of a token block (~256 KiB) stay in L2.
template <int K>
struct Tile {
  static constexpr int kTokens = 2;
  static constexpr int64_t kL2Bytes = 262144;
  template <int R, int T>
  static void run(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out) {
    mm_tile<K, R, T>(x, in, w, y, out);
  }
};

// ---- attention ----------------------------------------------------------------------

constexpr int kBK = 8;            // keys per block (one ymm of scores)
constexpr int kMaxRows = 16;      // (query, head) rows per tile
constexpr int kMaxHeadDim = 512;  // larger heads fall back to the reference

// Lane j of the result = horizontal sum of a[j].
inline __m256 transpose_sum8(const __m256* a) {
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

// scores[j] = q . k[j] for the 8 key rows kp[0..8), four keys at a time.
inline __m256 scores8(const float* q, const float* const* kp, int64_t hd) {
  __m256 acc[kBK];
  const int64_t full = hd / 8 * 8;
  const __m256i m = tail_mask(hd - full);
#pragma GCC unroll 2
  for (int g = 0; g < kBK; g += 4) {
    const float* k0 = kp[g];
    const float* k1 = kp[g + 1];
    const float* k2 = kp[g + 2];
    const float* k3 = kp[g + 3];
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t d = 0; d < full; d += 8) {
      const __m256 qv = _mm256_loadu_ps(q + d);
      a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + d), a0);
      a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k1 + d), a1);
      a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k2 + d), a2);
      a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k3 + d), a3);
    }
    if (full < hd) {
      const __m256 qv = _mm256_maskload_ps(q + full, m);
      a0 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k0 + full, m), a0);
      a1 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k1 + full, m), a1);
      a2 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k2 + full, m), a2);
      a3 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k3 + full, m), a3);
    }
    acc[g] = a0, acc[g + 1] = a1, acc[g + 2] = a2, acc[g + 3] = a3;
  }
  return transpose_sum8(acc);
}

// o[c0*8 .. (c0+NC)*8) = alpha * o + sum_{j in [j0, j1)} p[j] * v[j]; the last chunk's V
// loads use `last` so they stay inside the head.
template <int NC>
inline void pv_chunks(float* o, const float* const* vp, const float* p, int j0, int j1, int64_t c0,
                      float alpha, __m256i last) {
  __m256 acc[NC];
  const __m256 a = _mm256_set1_ps(alpha);
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_mul_ps(a, _mm256_loadu_ps(o + (c0 + c) * 8));
  for (int j = j0; j < j1; ++j) {
    const __m256 pj = _mm256_set1_ps(p[j]);
    const float* v = vp[j] + c0 * 8;
#pragma GCC unroll 8
    for (int c = 0; c < NC - 1; ++c)
      acc[c] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + c * 8), acc[c]);
    acc[NC - 1] = _mm256_fmadd_ps(pj, _mm256_maskload_ps(v + (NC - 1) * 8, last), acc[NC - 1]);
  }
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) _mm256_storeu_ps(o + (c0 + c) * 8, acc[c]);
}

void pv_row(float* o, const float* const* vp, const float* p, int j0, int j1, int64_t hd,
            float alpha) {
  const int64_t chunks = (hd + 7) / 8;
  for (int64_t c0 = 0; c0 < chunks; c0 += 8) {
    const int64_t nc = min64(8, chunks - c0);
    const __m256i last = tail_mask(c0 + nc == chunks ? hd - (chunks - 1) * 8 : 8);
    switch (nc) {
      case 1:
        pv_chunks<1>(o, vp, p, j0, j1, c0, alpha, last);
        break;
      case 2:
        pv_chunks<2>(o, vp, p, j0, j1, c0, alpha, last);
        break;
      case 3:
        pv_chunks<3>(o, vp, p, j0, j1, c0, alpha, last);
        break;
      case 4:
        pv_chunks<4>(o, vp, p, j0, j1, c0, alpha, last);
        break;
      case 5:
        pv_chunks<5>(o, vp, p, j0, j1, c0, alpha, last);
        break;
      case 6:
        pv_chunks<6>(o, vp, p, j0, j1, c0, alpha, last);
        break;
      case 7:
        pv_chunks<7>(o, vp, p, j0, j1, c0, alpha, last);
        break;
      default:
        pv_chunks<8>(o, vp, p, j0, j1, c0, alpha, last);
        break;
    }
  }
}

struct TileRow {
  const float* q;
  float* out;
  int64_t lo, hi;  // keys [lo, hi]
  float m, l;      // running max of the scaled scores, running sum of exp
};

// One row x one key block starting at kb: online-softmax update of (m, l, o).
void row_block(TileRow& row, float* o, const float* const* kp, const float* const* vp, int64_t kb,
               int64_t hd, float scale) {
  const int j0 = static_cast<int>(max64(row.lo - kb, 0));
  const int j1 = static_cast<int>(min64(row.hi - kb + 1, kBK));
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 valid =
      _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(j1), idx),
                                           _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(j0 - 1))));
  const __m256 s = _mm256_mul_ps(scores8(row.q, kp, hd), _mm256_set1_ps(scale));
  const float bmax = hmax8(_mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), s, valid));
  const float m_new = bmax > row.m ? bmax : row.m;
  const float alpha = row.l == 0.0f ? 0.0f : _mm256_cvtss_f32(exp8(_mm256_set1_ps(row.m - m_new)));
  const __m256 p = _mm256_and_ps(valid, exp8(_mm256_sub_ps(s, _mm256_set1_ps(m_new))));
  row.l = row.l * alpha + hsum8(p);
  row.m = m_new;
  alignas(32) float pa[kBK];
  _mm256_store_ps(pa, p);
  pv_row(o, vp, pa, j0, j1, hd, alpha);
}

// Copies n rows of hd floats to dst (rows `stride` apart, tail zero-filled): cache rows are
// often a multiple of 4 KiB apart, so a block's K (or V) rows would share L1 sets.
void pack_rows(float* dst, const float* const* src, int n, int64_t hd, int64_t stride) {
  for (int j = 0; j < n; ++j)
    for (int64_t d = 0; d < stride; d += 8)
      _mm256_store_ps(dst + j * stride + d, _mm256_maskload_ps(src[j] + d, tail_mask(hd - d)));
}

// Converts kv head g's slice of n cache rows of a non-F32 type to F32 rows of dst
// (`stride` apart, tail zero-filled). F16 uses F16C; BF16 and Q8 the scalar codec.
void pack_typed_rows(float* dst, const uint8_t* const* rows, int n, const AttentionArgs& a,
                     int32_t g, int64_t stride) {
  const int64_t hd = a.head_dim;
  for (int j = 0; j < n; ++j) {
    float* out = dst + j * stride;
    for (int64_t d = hd; d < stride; ++d) out[d] = 0.0f;
    if (a.kv_type == KvType::kF16 && hd % 8 == 0) {
      const auto* src = reinterpret_cast<const uint16_t*>(rows[j]) + static_cast<int64_t>(g) * hd;
      for (int64_t d = 0; d < hd; d += 8)
        _mm256_store_ps(out + d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + d))));
    } else {
      kv_load_head(a.kv_type, rows[j], a.n_head_kv, a.head_dim, g, out);
    }
  }
}

// Rows share kv head g. F32 caches are read in place (decode) or packed (prefill); other
// element types are always converted block by block.
void run_tile(const AttentionArgs& a, TileRow* rows, int nrows, int32_t g) {
  const int64_t hd = a.head_dim;
  const int64_t kv_off = static_cast<int64_t>(g) * hd;
  const bool f32 = a.kv_type == KvType::kF32;
  const int64_t ostride = (hd + 7) / 8 * 8;
  alignas(32) float o[kMaxRows * kMaxHeadDim];
  alignas(32) float qbuf[kMaxRows * kMaxHeadDim];
  alignas(32) float kbuf[kBK * kMaxHeadDim];
  alignas(32) float vbuf[kBK * kMaxHeadDim];
  const bool pack = nrows >= 4;  // several rows reuse each block (prefill)
  int64_t lo = rows[0].lo, hi = rows[0].hi;
  for (int i = 0; i < nrows; ++i) {
    lo = min64(lo, rows[i].lo), hi = max64(hi, rows[i].hi);
    rows[i].m = -__builtin_inff(), rows[i].l = 0.0f;
    for (int64_t d = 0; d < ostride; ++d) o[i * ostride + d] = 0.0f;
    if (pack) {
      pack_rows(qbuf + i * ostride, &rows[i].q, 1, hd, ostride);
      rows[i].q = qbuf + i * ostride;
    }
  }
  const float* kp[kBK];
  const float* vp[kBK];
  const uint8_t* kr[kBK];
  const uint8_t* vr[kBK];
  const int64_t elem = f32 ? 4 : a.kv_type == KvType::kQ8 ? 1 : 2;
  for (int64_t kb = lo / kBK * kBK; kb <= hi; kb += kBK) {
    // Keys outside [lo, hi] are clamped into it (a ring may have reused the blocks before
    // lo) and masked out.
    for (int j = 0; j < kBK; ++j) {
      const int64_t key = min64(max64(kb + j, lo), hi);
      kr[j] = a.k_row(key), vr[j] = a.v_row(key);
      kp[j] = reinterpret_cast<const float*>(kr[j]) + kv_off;
      vp[j] = reinterpret_cast<const float*>(vr[j]) + kv_off;
    }
    // The next block's rows: they are scattered (one head's slice of each cache row), so the
    // hardware prefetcher does not fetch them ahead (decode reads K/V once, from L3/DRAM).
    for (int64_t key = kb + kBK; key < min64(kb + 2 * kBK, hi + 1); ++key)
      for (int64_t d = 0; d < hd * elem; d += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(a.k_row(key) + kv_off * elem + d), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(a.v_row(key) + kv_off * elem + d), _MM_HINT_T0);
      }
    if (!f32) {
      pack_typed_rows(kbuf, kr, kBK, a, g, ostride);
      pack_typed_rows(vbuf, vr, kBK, a, g, ostride);
      for (int j = 0; j < kBK; ++j) kp[j] = kbuf + j * ostride, vp[j] = vbuf + j * ostride;
    } else if (pack) {
      pack_rows(kbuf, kp, kBK, hd, ostride);
      pack_rows(vbuf, vp, kBK, hd, ostride);
      for (int j = 0; j < kBK; ++j) kp[j] = kbuf + j * ostride, vp[j] = vbuf + j * ostride;
    }
    for (int i = 0; i < nrows; ++i)
      if (rows[i].lo < kb + kBK && rows[i].hi >= kb)
        row_block(rows[i], o + i * ostride, kp, vp, kb, hd, a.scale);
  }
  for (int i = 0; i < nrows; ++i) {
    const __m256 inv = _mm256_set1_ps(1.0f / rows[i].l);
    for (int64_t d = 0; d < hd; d += 8)
      _mm256_maskstore_ps(rows[i].out + d, tail_mask(hd - d),
                          _mm256_mul_ps(inv, _mm256_loadu_ps(o + i * ostride + d)));
  }
}

void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch) {
  if (t0 >= t1) return;
  if (a.head_dim > kMaxHeadDim) {
    ref::attention(a, t0, t1, scratch);
    return;
  }
  const int32_t group = a.n_head / a.n_head_kv;
  const int32_t hpt = group < kMaxRows ? group : kMaxRows;
  const int64_t bq = kMaxRows / hpt;
  const int64_t q_first = t0 / a.n_head, q_last = (t1 - 1) / a.n_head;
  const int64_t q_stride = static_cast<int64_t>(a.n_head) * a.head_dim;
  TileRow rows[kMaxRows];
  for (int32_t g = 0; g < a.n_head_kv; ++g) {
    for (int64_t qb = q_first; qb <= q_last; qb += bq) {
      for (int32_t hs = g * group; hs < (g + 1) * group; hs += hpt) {
        int nrows = 0;
        for (int64_t qi = qb; qi < min64(qb + bq, q_last + 1); ++qi) {
          const int64_t pos = a.pos0 + qi;
          for (int32_t h = hs; h < hs + hpt && h < (g + 1) * group; ++h) {
            const int64_t t = qi * a.n_head + h;
            if (t < t0 || t >= t1) continue;
            TileRow& r = rows[nrows++];
            r.q = a.q + qi * q_stride + static_cast<int64_t>(h) * a.head_dim;
            r.out = a.out + qi * q_stride + static_cast<int64_t>(h) * a.head_dim;
            r.hi = pos;
            r.lo = a.window > 0 ? max64(0, pos - a.window + 1) : 0;
          }
        }
        if (nrows > 0) run_tile(a, rows, nrows, g);
      }
    }
  }
}

// ---- elementwise --------------------------------------------------------------------

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    __m256 ss = _mm256_setzero_ps();
    for (int64_t i = 0; i < dim; i += 8) {
      const __m256 v = _mm256_maskload_ps(xr + i, tail_mask(dim - i));
      ss = _mm256_fmadd_ps(v, v, ss);
    }
    const float mean = hsum8(ss) / static_cast<float>(dim);
    const __m256 inv = _mm256_set1_ps(1.0f / __builtin_sqrtf(mean + eps));
    for (int64_t i = 0; i < dim; i += 8) {
      const __m256i m = tail_mask(dim - i);
      const __m256 v = _mm256_mul_ps(_mm256_maskload_ps(xr + i, m), inv);
      _mm256_maskstore_ps(yr + i, m, _mm256_mul_ps(v, _mm256_maskload_ps(w + i, m)));
    }
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  __m256 mx = _mm256_set1_ps(-__builtin_inff());
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    mx = _mm256_blendv_ps(mx, _mm256_max_ps(mx, _mm256_maskload_ps(x + i, k)),
                          _mm256_castsi256_ps(k));
  }
  const __m256 m = _mm256_set1_ps(hmax8(mx));
  __m256 sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    const __m256 e =
        _mm256_and_ps(_mm256_castsi256_ps(k), exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, k), m)));
    _mm256_maskstore_ps(x + i, k, e);
    sum = _mm256_add_ps(sum, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / hsum8(sum));
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    _mm256_maskstore_ps(x + i, k, _mm256_mul_ps(inv, _mm256_maskload_ps(x + i, k)));
  }
}

void silu(float* x, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, k);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), v));
    _mm256_maskstore_ps(x + i, k, _mm256_div_ps(v, _mm256_add_ps(one, e)));
  }
}

// 0.5 v (1 + tanh(u)) = v e / (e + 1), e = exp(2u), u = sqrt(2/pi) (v + 0.044715 v^3)
// (no cancellation for negative v; e is clamped finite, so large v gives v).
void gelu(float* x, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 c0 = _mm256_set1_ps(2.0f * 0.7978845608028654f);
  const __m256 c1 = _mm256_set1_ps(0.044715f);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, k);
    const __m256 inner =
        _mm256_mul_ps(c0, _mm256_fmadd_ps(_mm256_mul_ps(c1, v), _mm256_mul_ps(v, v), v));
    const __m256 e = exp8(inner);
    const __m256 g = _mm256_div_ps(e, _mm256_add_ps(e, one));
    _mm256_maskstore_ps(x + i, k, _mm256_mul_ps(v, g));
  }
}

}  // namespace

void install_dense_avx2(KernelTable* t) {
  t->matmul_f32 = dense::matmul_rows<Tile<kF32>>;
  t->matmul_f16 = dense::matmul_rows<Tile<kF16>>;
  t->matmul_bf16 = dense::matmul_rows<Tile<kBF16>>;
  t->attention = attention;
  t->rmsnorm = rmsnorm;
  t->softmax = softmax;
  t->silu = silu;
  t->gelu = gelu;
}

}  // namespace edge
