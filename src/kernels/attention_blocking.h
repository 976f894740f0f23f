// The flash-style attention over the paged KV cache, written once for every ISA
// (x86_avx2/, x86_avx512/, arm_neon/); an ISA file supplies only a struct of vector
// primitives P and installs attn::Flash<P>::attention (an api.h AttentionTasksFn).
//
// The (query, head) tasks of [t0, t1) that share a kv head are grouped in tiles of up to
// kMaxRows rows (several heads of a GQA group x consecutive queries), kv head outermost so
// its K/V stay in L2 across query blocks. For each block of P::kW keys (absolute positions
// aligned to kW) the block's K and V rows are loaded (converted to F32 when the cache is
// F16/BF16/Q8) ONCE and every row of the tile that sees part of the block uses them: it
// computes its kW scores (q.k accumulated in kW vectors, then a transpose-reduce), updates
// its running max / sum (online softmax) and accumulates p.V into its output, which lives
// on the stack. Keys outside a row's [lo, hi] (causal, sliding window) are masked; blocks
// outside every row's range are never visited, so ring blocks a window dropped (null
// pointers) are never read.
//
// The primitives (V: a vector of kW floats):
//
//   struct P {
//     using V; using Tail; using Lanes;  // vector, prefix-lane mask, lane-range mask
//     static constexpr int kW;           // lanes; also the key block
//     static constexpr int kPvChunks;    // output vectors p.V accumulates in registers at once
//     V zero(); V set1(float); V load(const float*); void store(float*, V);
//     Tail tail(int64_t rem);            // lanes [0, min(rem, kW)); rem >= 0
//     V load_tail(Tail, const float*);   // zero outside the tail; reads only its lanes
//     void store_tail(Tail, float*, V);
//     V fma(V a, V b, V c);              // a * b + c
//     V mul(V, V); V sub(V, V); V exp(V); float exp1(float);
//     float hsum(V);
//     Lanes lanes(int j0, int j1);       // lanes [j0, j1)
//     float hmax(Lanes, V);              // max over those lanes
//     V keep(Lanes, V);                  // zero outside them
//     V transpose_sum(const V* a);       // a[kW]: lane j = sum of a[j]'s lanes
//     V load_f16(const uint16_t*, int64_t rem);  // as F32, lanes >= rem zero, reads < rem
//     V load_bf16(const uint16_t*, int64_t rem);
//     V load_i8(const int8_t*, int64_t rem);
//   };
//
// ISA files are compiled with their own flags, so nothing here may be an inline function
// or template shared with portable code (the linker could keep one ISA's copy for
// everyone): every function is a member of Flash<P>, and P lives in the ISA file's
// anonymous namespace, which gives each instantiation internal linkage.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/api.h"

namespace edge::ref {
void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch);
}

namespace edge::attn {

template <class P>
struct Flash {
  using V = typename P::V;
  using Tail = typename P::Tail;
  static constexpr int kW = P::kW;
  static constexpr int kBK = P::kW;        // keys per block (one vector of scores)
  static constexpr int kMaxRows = 16;      // (query, head) rows per tile
  static constexpr int kMaxHeadDim = 512;  // larger heads fall back to the reference
  static_assert(kBK % 4 == 0, "scores take keys four at a time");

  struct Row {
    const float* q;
    float* out;
    int64_t lo, hi;  // keys [lo, hi]
    float m, l;      // running max of the scaled scores, running sum of exp
  };

  static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
  static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

  // scores[j] = q . k[j] for the kBK key rows kp[0..kBK), head_dim hd, four keys at a time
  // (four row pointers fit in registers; q's chunk is reloaded from L1 per group).
  static V scores(const float* q, const float* const* kp, int64_t hd) {
    V acc[kBK];
    const int64_t full = hd / kW * kW;
    const Tail m = P::tail(hd - full);
#pragma GCC unroll 4
    for (int g = 0; g < kBK; g += 4) {
      const float* k0 = kp[g];
      const float* k1 = kp[g + 1];
      const float* k2 = kp[g + 2];
      const float* k3 = kp[g + 3];
      V a0 = P::zero(), a1 = a0, a2 = a0, a3 = a0;
      for (int64_t d = 0; d < full; d += kW) {
        const V qv = P::load(q + d);
        a0 = P::fma(qv, P::load(k0 + d), a0);
        a1 = P::fma(qv, P::load(k1 + d), a1);
        a2 = P::fma(qv, P::load(k2 + d), a2);
        a3 = P::fma(qv, P::load(k3 + d), a3);
      }
      if (full < hd) {
        const V qv = P::load_tail(m, q + full);
        a0 = P::fma(qv, P::load_tail(m, k0 + full), a0);
        a1 = P::fma(qv, P::load_tail(m, k1 + full), a1);
        a2 = P::fma(qv, P::load_tail(m, k2 + full), a2);
        a3 = P::fma(qv, P::load_tail(m, k3 + full), a3);
      }
      acc[g] = a0, acc[g + 1] = a1, acc[g + 2] = a2, acc[g + 3] = a3;
    }
    return P::transpose_sum(acc);
  }

  // o[c0*kW .. (c0+NC)*kW) = alpha * o + sum_{j in [j0, j1)} p[j] * v[j]. o has room for
  // whole chunks; the last chunk's V loads use `last` so they stay inside the head.
  template <int NC>
  static void pv_chunks(float* o, const float* const* vp, const float* p, int j0, int j1,
                        int64_t c0, float alpha, Tail last) {
    V acc[NC];
    const V a = P::set1(alpha);
#pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) acc[c] = P::mul(a, P::load(o + (c0 + c) * kW));
    for (int j = j0; j < j1; ++j) {
      const V pj = P::set1(p[j]);
      const float* v = vp[j] + c0 * kW;
#pragma GCC unroll 16
      for (int c = 0; c < NC - 1; ++c) acc[c] = P::fma(pj, P::load(v + c * kW), acc[c]);
      acc[NC - 1] = P::fma(pj, P::load_tail(last, v + (NC - 1) * kW), acc[NC - 1]);
    }
#pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) P::store(o + (c0 + c) * kW, acc[c]);
  }

  // pv_chunks<nc> for a run-time nc in [1, N].
  template <int N>
  static void pv_dispatch(int64_t nc, float* o, const float* const* vp, const float* p, int j0,
                          int j1, int64_t c0, float alpha, Tail last) {
    if constexpr (N > 1) {
      if (nc < N) return pv_dispatch<N - 1>(nc, o, vp, p, j0, j1, c0, alpha, last);
    }
    pv_chunks<N>(o, vp, p, j0, j1, c0, alpha, last);
  }

  static void pv_row(float* o, const float* const* vp, const float* p, int j0, int j1, int64_t hd,
                     float alpha) {
    const int64_t chunks = (hd + kW - 1) / kW;
    for (int64_t c0 = 0; c0 < chunks; c0 += P::kPvChunks) {
      const int64_t nc = min64(P::kPvChunks, chunks - c0);
      const Tail last = P::tail(c0 + nc == chunks ? hd - (chunks - 1) * kW : kW);
      pv_dispatch<P::kPvChunks>(nc, o, vp, p, j0, j1, c0, alpha, last);
    }
  }

  // One row x one key block starting at kb: online-softmax update of (m, l, o).
  static void row_block(Row& row, float* o, const float* const* kp, const float* const* vp,
                        int64_t kb, int64_t hd, float scale) {
    const int j0 = static_cast<int>(max64(row.lo - kb, 0));
    const int j1 = static_cast<int>(min64(row.hi - kb + 1, kBK));
    const auto valid = P::lanes(j0, j1);
    const V s = P::mul(scores(row.q, kp, hd), P::set1(scale));
    const float bmax = P::hmax(valid, s);
    const float m_new = bmax > row.m ? bmax : row.m;
    // First block: o and l are 0, so any finite alpha works.
    const float alpha = row.l == 0.0f ? 0.0f : P::exp1(row.m - m_new);
    const V p = P::keep(valid, P::exp(P::sub(s, P::set1(m_new))));
    row.l = row.l * alpha + P::hsum(p);
    row.m = m_new;
    alignas(64) float pa[kBK];
    P::store(pa, p);
    pv_row(o, vp, pa, j0, j1, hd, alpha);
  }

  // Copies n rows of hd floats to dst (rows `stride` apart, tail zero-filled): cache rows
  // are n_head_kv * head_dim apart, often a multiple of 4 KiB, so a block's K (or V) rows
  // would fall into the same L1 sets and evict each other between the rows of a tile.
  static void pack_rows(float* dst, const float* const* src, int n, int64_t hd, int64_t stride) {
    for (int j = 0; j < n; ++j)
      for (int64_t d = 0; d < stride; d += kW)
        P::store(dst + j * stride + d, P::load_tail(P::tail(hd - d), src[j] + d));
  }

  // out[0, stride) = load(d, rem) chunk by chunk: whole chunks first (rem == kW, so an
  // inlined load drops its tail branch), then the head's tail and the zero padding.
  template <class Load>
  static void pack_row(float* out, int64_t hd, int64_t stride, Load load) {
    int64_t d = 0;
    for (; d + kW <= hd; d += kW) P::store(out + d, load(d, int64_t{kW}));
    for (; d < stride; d += kW) P::store(out + d, load(d, hd - d));
  }

  // Converts kv head g's slice of n cache rows of a non-F32 type to F32 rows of dst
  // (`stride` apart, tail zero-filled). Q8 rows: codes, then one f32 scale per kv head.
  static void pack_typed_rows(float* dst, const uint8_t* const* rows, int n, const AttentionArgs& a,
                              int32_t g, int64_t stride) {
    const int64_t hd = a.head_dim;
    const int64_t off = static_cast<int64_t>(g) * hd;
    for (int j = 0; j < n; ++j) {
      float* out = dst + j * stride;
      if (a.kv_type == KvType::kQ8) {
        const auto* src = reinterpret_cast<const int8_t*>(rows[j]) + off;
        float scale;
        std::memcpy(&scale, rows[j] + static_cast<int64_t>(a.n_head_kv) * hd + 4 * g, 4);
        const V vs = P::set1(scale);
        pack_row(out, hd, stride,
                 [&](int64_t d, int64_t rem) { return P::mul(vs, P::load_i8(src + d, rem)); });
      } else if (a.kv_type == KvType::kF16) {
        const auto* src = reinterpret_cast<const uint16_t*>(rows[j]) + off;
        pack_row(out, hd, stride,
                 [&](int64_t d, int64_t rem) { return P::load_f16(src + d, rem); });
      } else {
        const auto* src = reinterpret_cast<const uint16_t*>(rows[j]) + off;
        pack_row(out, hd, stride,
                 [&](int64_t d, int64_t rem) { return P::load_bf16(src + d, rem); });
      }
    }
  }

  // Rows share kv head g; runs every key block any of them sees. F32 caches are read in
  // place (decode) or packed (prefill); other element types are always converted to F32
  // block by block, once for all rows of the tile (the GQA sharing).
  static void run_tile(const AttentionArgs& a, Row* rows, int nrows, int32_t g) {
    const int64_t hd = a.head_dim;
    const int64_t kv_off = static_cast<int64_t>(g) * hd;
    const int64_t ostride = (hd + kW - 1) / kW * kW;
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
    const int64_t elem = f32 ? 4 : a.kv_type == KvType::kQ8 ? 1 : 2;
    for (int64_t kb = lo / kBK * kBK; kb <= hi; kb += kBK) {
      // Keys outside [lo, hi] are clamped into it (valid memory: a ring may have reused the
      // blocks before lo); they are masked out of p.
      for (int j = 0; j < kBK; ++j) {
        const int64_t key = min64(max64(kb + j, lo), hi);
        kr[j] = a.k_row(key), vr[j] = a.v_row(key);
        kp[j] = reinterpret_cast<const float*>(kr[j]) + kv_off;
        vp[j] = reinterpret_cast<const float*>(vr[j]) + kv_off;
      }
      // The next block's rows: they are scattered (one head's slice of each cache row), so
      // the hardware prefetcher does not fetch them ahead (decode reads K/V once, from L3/DRAM).
      for (int64_t key = kb + kBK; key < min64(kb + 2 * kBK, hi + 1); ++key)
        for (int64_t d = 0; d < hd * elem; d += 64) {
          __builtin_prefetch(a.k_row(key) + kv_off * elem + d, 0, 3);
          __builtin_prefetch(a.v_row(key) + kv_off * elem + d, 0, 3);
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
      const V inv = P::set1(1.0f / rows[i].l);
      for (int64_t d = 0; d < hd; d += kW)
        P::store_tail(P::tail(hd - d), rows[i].out + d, P::mul(inv, P::load(o + i * ostride + d)));
    }
  }

  // Tiles: kv head outer (its K/V stay in L2 across query blocks), then blocks of `bq`
  // consecutive queries x `hpt` heads of the kv head's group; only tasks in [t0, t1).
  // Query i sees keys [lo, pos0 + i], lo = pos0 + i - window + 1 under a window (api.h).
  static void tiles(const AttentionArgs& a, int64_t t0, int64_t t1) {
    const int32_t group = a.n_head / a.n_head_kv;
    const int32_t hpt = group < kMaxRows ? group : kMaxRows;
    const int64_t bq = kMaxRows / hpt;
    const int64_t q_first = t0 / a.n_head, q_last = (t1 - 1) / a.n_head;
    const int64_t q_stride = static_cast<int64_t>(a.n_head) * a.head_dim;
    Row rows[kMaxRows];
    for (int32_t g = 0; g < a.n_head_kv; ++g) {
      for (int64_t qb = q_first; qb <= q_last; qb += bq) {
        for (int32_t hs = g * group; hs < (g + 1) * group; hs += hpt) {
          int nrows = 0;
          for (int64_t qi = qb; qi < min64(qb + bq, q_last + 1); ++qi) {
            const int64_t pos = a.pos0 + qi;
            for (int32_t h = hs; h < hs + hpt && h < (g + 1) * group; ++h) {
              const int64_t t = qi * a.n_head + h;
              if (t < t0 || t >= t1) continue;
              Row& r = rows[nrows++];
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

  // The api.h AttentionTasksFn.
  static void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch) {
    if (t0 >= t1) return;
    if (a.head_dim > kMaxHeadDim) return ref::attention(a, t0, t1, scratch);
    tiles(a, t0, t1);
  }
};

}  // namespace edge::attn
