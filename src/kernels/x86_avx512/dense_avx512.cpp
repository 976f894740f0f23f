// AVX-512 dense kernels: F32/F16/BF16 matmul, flash-style attention, rmsnorm / softmax /
// silu / gelu. Contracts are those of kernels/api.h.
//
// Matmul: a tile of R (<= 4) weight rows x T (<= 6) tokens keeps R*T zmm accumulators; each
// 16-wide weight chunk is loaded (F16 via vcvtph2ps, BF16 by a 16-bit shift) once and used by
// the T tokens. Tokens are taken in blocks whose x rows fit in L2, so a prefill streams the
// weights n / block times instead of re-reading x from L3 for every row tile. The scratch
// buffer is not needed.
//
// Attention: the (query, head) tasks of [t0, t1) that share a kv head are grouped in tiles of
// up to kMaxRows rows (several heads of a GQA group x consecutive queries). For each block of
// 16 keys (absolute positions aligned to 16) every row of the tile that sees part of the block
// computes its 16 scores (q.k accumulated in 16 zmm, then a transpose-reduce), updates its
// running max / sum (online softmax) and accumulates p.V into its output, which lives on the
// stack. Blocks outside a row's [lo, hi] window (causal, sliding window) are skipped, and the
// block's K/V rows stay in L1 while all rows of the tile use them.
//
// This file is compiled with AVX-512 flags: it must not instantiate inline functions or
// templates shared with portable code (the linker could keep this copy for everyone), so it
// uses only intrinsics and its own helpers in an anonymous namespace.
#include <immintrin.h>

#include <cstring>

#include <cstdint>

#include "kernels/dense_blocking.h"
#include "kernels/dense_isa.h"

namespace edge {
namespace {

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
inline __mmask16 tail_mask(int64_t rem) {
  return rem >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << rem) - 1);
}

// exp(x) to ~1 ulp: x = n ln2 + r, |r| <= ln2/2, exp(r) by its degree-7 Taylor polynomial
// (truncation < 1e-8 relative), 2^n applied by vscalefps (underflows cleanly to 0).
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  x = _mm512_min_ps(x, _mm512_set1_ps(88.7f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);  // ln2 high part
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);     // ln2 low part
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// ---- matmul -------------------------------------------------------------------------

enum WKind { kF32, kF16, kBF16 };

template <int K>
inline __m512 load_w(const uint8_t* row, int64_t i) {
  if constexpr (K == kF32) return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i));
  if constexpr (K == kF16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <int K>
inline __m512 load_w_mask(const uint8_t* row, int64_t i, __mmask16 m) {
  if constexpr (K == kF32) return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  const __m256i h = _mm256_maskz_loadu_epi16(m, row + 2 * i);
  if constexpr (K == kF16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// y[t, r] for R weight rows w[0..R) x T tokens (x rows `in` apart, y rows `out` apart).
template <int K, int R, int T>
void mm_tile(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out) {
  __m512 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= in; i += 16) {
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load_w<K>(w[r], i);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_loadu_ps(x + t * in + i);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  if (i < in) {
    const __mmask16 m = tail_mask(in - i);
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load_w_mask<K>(w[r], i, m);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + t * in + i);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * out + r] = _mm512_reduce_add_ps(acc[r][t]);
}

// The register tile the shared loop nest (kernels/dense_blocking.h) runs; 6 tokens x 4 rows:
// 24 zmm accumulators, the x rows of a token block (~384 KiB) stay in L2.
template <int K>
struct Tile {
  static constexpr int kTokens = 6;
  static constexpr int64_t kL2Bytes = 393216;
  template <int R, int T>
  static void run(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out) {
    mm_tile<K, R, T>(x, in, w, y, out);
  }
};

// ---- attention ----------------------------------------------------------------------

constexpr int kBK = 16;           // keys per block (one zmm of scores)
constexpr int kMaxRows = 16;      // (query, head) rows per tile
constexpr int kMaxHeadDim = 512;  // larger heads fall back to the reference

// Lane j of the result = horizontal sum of a[j] (16 accumulators -> 16 dot products).
inline __m512 transpose_sum16(const __m512* a) {
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

// scores[j] = q . k[j] for the 16 key rows kp[0..16), head_dim hd. Keys go four at a time
// (four row pointers fit in registers; q's chunk is reloaded from L1 per group).
inline __m512 scores16(const float* q, const float* const* kp, int64_t hd) {
  __m512 acc[kBK];
  const int64_t full = hd / 16 * 16;
  const __mmask16 m = tail_mask(hd - full);
#pragma GCC unroll 4
  for (int g = 0; g < kBK; g += 4) {
    const float* k0 = kp[g];
    const float* k1 = kp[g + 1];
    const float* k2 = kp[g + 2];
    const float* k3 = kp[g + 3];
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t d = 0; d < full; d += 16) {
      const __m512 qv = _mm512_loadu_ps(q + d);
      a0 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k0 + d), a0);
      a1 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k1 + d), a1);
      a2 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k2 + d), a2);
      a3 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k3 + d), a3);
    }
    if (full < hd) {
      const __m512 qv = _mm512_maskz_loadu_ps(m, q + full);
      a0 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k0 + full), a0);
      a1 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k1 + full), a1);
      a2 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k2 + full), a2);
      a3 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k3 + full), a3);
    }
    acc[g] = a0, acc[g + 1] = a1, acc[g + 2] = a2, acc[g + 3] = a3;
  }
  return transpose_sum16(acc);
}

// o[c0*16 .. (c0+NC)*16) = alpha * o + sum_{j in [j0, j1)} p[j] * v[j]. o has room for whole
// chunks; the last chunk's V loads use `last` so they stay inside the head.
template <int NC>
inline void pv_chunks(float* o, const float* const* vp, const float* p, int j0, int j1, int64_t c0,
                      float alpha, __mmask16 last) {
  __m512 acc[NC];
  const __m512 a = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_mul_ps(a, _mm512_loadu_ps(o + (c0 + c) * 16));
  for (int j = j0; j < j1; ++j) {
    const __m512 pj = _mm512_set1_ps(p[j]);
    const float* v = vp[j] + c0 * 16;
#pragma GCC unroll 8
    for (int c = 0; c < NC - 1; ++c)
      acc[c] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(v + c * 16), acc[c]);
    acc[NC - 1] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(last, v + (NC - 1) * 16), acc[NC - 1]);
  }
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) _mm512_storeu_ps(o + (c0 + c) * 16, acc[c]);
}

void pv_row(float* o, const float* const* vp, const float* p, int j0, int j1, int64_t hd,
            float alpha) {
  const int64_t chunks = (hd + 15) / 16;
  for (int64_t c0 = 0; c0 < chunks; c0 += 8) {
    const int64_t nc = min64(8, chunks - c0);
    const __mmask16 last = c0 + nc == chunks ? tail_mask(hd - (chunks - 1) * 16) : 0xFFFF;
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
  const __mmask16 valid = static_cast<__mmask16>(tail_mask(j1) & ~tail_mask(j0));
  const __m512 s = _mm512_mul_ps(scores16(row.q, kp, hd), _mm512_set1_ps(scale));
  const float bmax = _mm512_mask_reduce_max_ps(valid, s);
  const float m_new = bmax > row.m ? bmax : row.m;
  // First block: o and l are 0, so any finite alpha works.
  const float alpha = row.l == 0.0f ? 0.0f : _mm512_cvtss_f32(exp16(_mm512_set1_ps(row.m - m_new)));
  const __m512 p = _mm512_maskz_mov_ps(valid, exp16(_mm512_sub_ps(s, _mm512_set1_ps(m_new))));
  row.l = row.l * alpha + _mm512_reduce_add_ps(p);
  row.m = m_new;
  alignas(64) float pa[kBK];
  _mm512_store_ps(pa, p);
  pv_row(o, vp, pa, j0, j1, hd, alpha);
}

// Copies n rows of hd floats to dst (rows `stride` apart, tail zero-filled): cache rows
// are n_head_kv * head_dim apart, often a multiple of 4 KiB, so a block's 16 K (or V) rows
// would fall into the same L1 sets and evict each other between the rows of a tile.
void pack_rows(float* dst, const float* const* src, int n, int64_t hd, int64_t stride) {
  for (int j = 0; j < n; ++j)
    for (int64_t d = 0; d < stride; d += 16)
      _mm512_store_ps(dst + j * stride + d, _mm512_maskz_loadu_ps(tail_mask(hd - d), src[j] + d));
}

// Converts kv head g's slice of n cache rows of type t to F32 rows of dst (`stride` apart,
// tail zero-filled).
void pack_typed_rows(float* dst, const uint8_t* const* rows, int n, const AttentionArgs& a,
                     int32_t g, int64_t stride) {
  const int64_t hd = a.head_dim;
  const int64_t off = static_cast<int64_t>(g) * hd;
  for (int j = 0; j < n; ++j) {
    float* out = dst + j * stride;
    if (a.kv_type == KvType::kF16) {
      const auto* src = reinterpret_cast<const uint16_t*>(rows[j]) + off;
      for (int64_t d = 0; d < stride; d += 16)
        _mm512_store_ps(out + d, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(tail_mask(hd - d), src + d)));
    } else if (a.kv_type == KvType::kBF16) {
      const auto* src = reinterpret_cast<const uint16_t*>(rows[j]) + off;
      for (int64_t d = 0; d < stride; d += 16) {
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(tail_mask(hd - d), src + d));
        _mm512_store_ps(out + d, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
      }
    } else {  // kQ8: codes, then one f32 scale per kv head after the row's codes
      const auto* src = reinterpret_cast<const int8_t*>(rows[j]) + off;
      float scale;
      std::memcpy(&scale, rows[j] + static_cast<int64_t>(a.n_head_kv) * hd + 4 * g, 4);
      const __m512 vs = _mm512_set1_ps(scale);
      for (int64_t d = 0; d < stride; d += 16) {
        const __m512i w = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(tail_mask(hd - d), src + d));
        _mm512_store_ps(out + d, _mm512_mul_ps(vs, _mm512_cvtepi32_ps(w)));
      }
    }
  }
}

// Rows share kv head g; runs every key block any of them sees. F32 caches are read in
// place (decode) or packed (prefill); other element types are always converted to F32
// block by block.
void run_tile(const AttentionArgs& a, TileRow* rows, int nrows, int32_t g) {
  const int64_t hd = a.head_dim;
  const int64_t kv_off = static_cast<int64_t>(g) * hd;
  const int64_t ostride = (hd + 15) / 16 * 16;
  alignas(64) float o[kMaxRows * kMaxHeadDim];
  alignas(64) float qbuf[kMaxRows * kMaxHeadDim];
  alignas(64) float kbuf[kBK * kMaxHeadDim];
  alignas(64) float vbuf[kBK * kMaxHeadDim];
  const bool f32 = a.kv_type == KvType::kF32;
  // Packing pays off once several rows reuse a block (prefill); decode tiles read in place.
  const bool pack = nrows >= 4;
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
  for (int64_t kb = lo / kBK * kBK; kb <= hi; kb += kBK) {
    // Keys outside [lo, hi] are clamped into it (valid memory: a ring may have reused the
    // blocks before lo); they are masked out of p.
    for (int j = 0; j < kBK; ++j) {
      const int64_t key = min64(max64(kb + j, lo), hi);
      kr[j] = a.k_row(key), vr[j] = a.v_row(key);
      kp[j] = reinterpret_cast<const float*>(kr[j]) + kv_off;
      vp[j] = reinterpret_cast<const float*>(vr[j]) + kv_off;
    }
    // The next block's rows: they are scattered (one head's slice of each cache row), so the
    // hardware prefetcher does not fetch them ahead (decode reads K/V once, from L3/DRAM).
    const int64_t elem = f32 ? 4 : a.kv_type == KvType::kQ8 ? 1 : 2;
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
    const __m512 inv = _mm512_set1_ps(1.0f / rows[i].l);
    for (int64_t d = 0; d < hd; d += 16) {
      const __mmask16 m = tail_mask(hd - d);
      _mm512_mask_storeu_ps(rows[i].out + d, m,
                            _mm512_mul_ps(inv, _mm512_loadu_ps(o + i * ostride + d)));
    }
  }
}

// Tiles: kv head outer (its K/V stay in L2 across query blocks), then blocks of `bq`
// consecutive queries x `hpt` heads of the kv head's group; only tasks in [t0, t1).
void attention_tiles(const AttentionArgs& a, int64_t t0, int64_t t1) {
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

}  // namespace
}  // namespace edge

namespace edge::ref {
void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch);
}

namespace edge {
namespace {

void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch) {
  if (t0 >= t1) return;
  if (a.head_dim > kMaxHeadDim) {
    ref::attention(a, t0, t1, scratch);
    return;
  }
  attention_tiles(a, t0, t1);
}

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

}  // namespace

void install_dense_avx512(KernelTable* t) {
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
