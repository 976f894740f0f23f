// The attention tile paths of kernels/attention_blocking.h for ISAs whose primitives P set
// kRowLanes (x86_avx2/, x86_avx512/): Flash<P>::run_tile hands its tiles here, prefill tiles
// (kMinRows rows or more) to run_lanes, smaller ones (decode) to run_keys. Both give every
// (query, head) row the same arithmetic, step for step, so a row's output does not depend on
// which tile, task split, batch or prompt chunk it came in (attention_batch must equal one
// sequence at a time, bit for bit).
//
// P's primitives beyond attention_blocking.h's list:
//
//   static constexpr bool kRowLanes;  // true
//   static constexpr int kTileRows;   // rows per tile (<= 3 * kW)
//   static constexpr int kLaneBlock;  // keys per block: a multiple of kW and of 4
//   V add(V, V); V max(V, V);
//   Lanes in_range(V lo, V hi, V x);  // lo <= x <= hi
//   V blend(Lanes m, V a, V b);       // m ? a : b
//   void transpose(V* v);             // kW x kW in place
//
// Same rules as attention_blocking.h: templates over the ISA file's P only.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/api.h"

namespace edge::attn {

template <class P, class F>
struct RowLanes {
  using V = typename P::V;
  using Tail = typename P::Tail;
  using Row = typename F::Row;
  static constexpr int kW = P::kW;
  static constexpr int kMaxRows = F::kMaxRows;
  static constexpr int kMaxHeadDim = F::kMaxHeadDim;
  static constexpr int kMinRows = 4;  // tiles this wide and wider go through run_lanes...
  // ...but tiles of kInPlaceRows rows (decode's tile for a GQA group of four: Llama-3-8B,
  // Qwen3) go through run_keys where it reads the keys or the values in place
  // (reads_in_place): in lanes four rows fill half of AVX2's, and run_lanes converts F16
  // keys and values to a float copy first. Decode attention, 32/8 heads of 128, two
  // threads, F16 KV: 0.59x the time per layer at 8K, 0.63x at 32K
  // (bench/results/2026-12-07-decode-attention-in-place/). With Q4 keys and values (both
  // unpacked either way) run_lanes is the faster.
  static constexpr int kInPlaceRows = 4;
  static bool reads_in_place(const AttentionArgs& a) {
    return a.k_type != KvType::kQ4 || v_in_place(a);
  }
  // F16 values of whole vectors are read in place by run_keys's p.V (pv_chunks).
  static bool v_in_place(const AttentionArgs& a) {
    return a.v_type == KvType::kF16 && a.head_dim % kW == 0;
  }

  // The tile's (query, head) rows are the lanes of NV vectors (row r: vector r / kW, lane
  // r % kW), so the online softmax is vertical: scores, running max and sum, rescale factors
  // and masks are vectors over rows, with no horizontal reduction per row and block (the
  // dot-product path of Flash spends a transpose-reduce per row and kW keys, and a horizontal
  // max and sum per row and block). Scores are outer products: for each dimension d, the
  // rows' q[d] (a vector of the transposed, pre-scaled Q tile) times each key's k[d]
  // (broadcast), J keys at a time in J x NV accumulators. p.V is the dot-product path's,
  // reading p from the transposed scores (stride NV * kW).
  //
  // Key blocks of kLB = P::kLaneBlock keys. K rows are converted to a pitch of kKPitch floats,
  // a compile-time constant, so the J keys' broadcasts address one base register plus
  // immediate offsets (J row pointers would not fit in the general registers); the extra 16
  // floats keep rows 2 KiB apart out of the same L1 sets.
  static constexpr int64_t kKPitch = kMaxHeadDim + 16;

  // s[j * NV + n] = scores of keys j in [0, J) (rows k + j * kKPitch) for the rows of vector
  // n. qt: [hd][NV * kW] (d-major), k: [J][kKPitch].
  template <int NV, int J>
  static void lane_scores(const float* qt, const float* k, int64_t hd, V* s) {
    V acc[J][NV];
#pragma GCC unroll 16
    for (int j = 0; j < J; ++j)
#pragma GCC unroll 4
      for (int n = 0; n < NV; ++n) acc[j][n] = P::zero();
    for (int64_t d = 0; d < hd; ++d) {
      V qv[NV];
#pragma GCC unroll 4
      for (int n = 0; n < NV; ++n) qv[n] = P::load(qt + d * NV * kW + n * kW);
#pragma GCC unroll 16
      for (int j = 0; j < J; ++j) {
        const V kv = P::set1(k[j * kKPitch + d]);
#pragma GCC unroll 4
        for (int n = 0; n < NV; ++n) acc[j][n] = P::fma(kv, qv[n], acc[j][n]);
      }
    }
#pragma GCC unroll 16
    for (int j = 0; j < J; ++j)
#pragma GCC unroll 4
      for (int n = 0; n < NV; ++n) s[j * NV + n] = acc[j][n];
  }

  // The online-softmax step of the key block at kb for every row at once: s [kLB][NV] scores
  // in, masked (lanes whose row does not see the key: [lo, hi] per lane) and turned into
  // pt [kLB][NV * kW] = exp(s - m_new) (0 where masked); m, l [NV] updated; alpha [NV * kW]:
  // each row's rescale factor of its output so far.
  template <int NV>
  static void lane_softmax(V* s, const V* lo, const V* hi, int64_t kb, V* m, V* l, float* pt,
                           float* alpha) {
    constexpr int kLB = P::kLaneBlock;
    const V ninf = P::set1(-__builtin_inff());
    V bmax[NV], mu[NV], sum[NV], an[NV];
    for (int n = 0; n < NV; ++n) bmax[n] = ninf, sum[n] = P::zero();
    for (int j = 0; j < kLB; ++j) {
      const V key = P::set1(static_cast<float>(kb + j));
      for (int n = 0; n < NV; ++n) {
        V& x = s[j * NV + n];
        x = P::blend(P::in_range(lo[n], hi[n], key), x, ninf);
        bmax[n] = P::max(bmax[n], x);
      }
    }
    for (int n = 0; n < NV; ++n) {
      const V m_new = P::max(m[n], bmax[n]);
      // A row that has seen no key yet keeps m = -inf: subtract a finite stand-in so that
      // its masked scores give exp(-inf) = 0, not NaN (its output and sum are still 0).
      mu[n] = P::max(m_new, P::set1(-__FLT_MAX__));
      const V a = P::exp(P::sub(m[n], mu[n]));
      P::store(alpha + n * kW, a);
      an[n] = a;
      m[n] = m_new;
    }
    for (int j = 0; j < kLB; ++j) {
      for (int n = 0; n < NV; ++n) {
        const V x = s[j * NV + n];
        const V p = P::keep(P::in_range(lo[n], hi[n], P::set1(static_cast<float>(kb + j))),
                            P::exp(P::sub(x, mu[n])));
        sum[n] = P::add(sum[n], p);
        P::store(pt + (j * NV + n) * kW, p);
      }
    }
    // l * alpha + sum as one FMA in both paths: written as a multiply and an add, the
    // compiler may contract one path's and not the other's.
    for (int n = 0; n < NV; ++n) l[n] = P::fma(l[n], an[n], sum[n]);
  }

  // qt [hd][NV * kW] = Q^T of the tile's rows, pre-scaled (lanes past nrows zero), by kW x kW
  // register transposes (a gather per d and vector cost 8% of a prefill's attention).
  template <int NV>
  static void pack_qt(const Row* rows, int nrows, int64_t hd, float scale, float* qt) {
    constexpr int NW = NV * kW;
    const V vscale = P::set1(scale);
    for (int n = 0; n < NV; ++n)
      for (int64_t d0 = 0; d0 < hd; d0 += kW) {
        V t[kW];
        const Tail m = P::tail(hd - d0);
        for (int i = 0; i < kW; ++i)
          t[i] = n * kW + i < nrows ? P::load_tail(m, rows[n * kW + i].q + d0) : P::zero();
        P::transpose(t);
        for (int i = 0; i < kW && d0 + i < hd; ++i)
          P::store(qt + (d0 + i) * NW + n * kW, P::mul(vscale, t[i]));
      }
  }

  // The block's K rows as F32 into kbuf (pitch kKPitch), V rows into vbuf (pitch ostride),
  // both zero-filled to ostride; vp[j] -> vbuf's rows. kr, vr: the cache rows (block_rows).
  static void convert_block(const AttentionArgs& a, int32_t g, const uint8_t* const* kr,
                            const uint8_t* const* vr, const float** kp, const float** vp,
                            int64_t ostride, float* kbuf, float* vbuf) {
    constexpr int kLB = P::kLaneBlock;
    const int64_t hd = a.head_dim;
    const int64_t off = static_cast<int64_t>(g) * hd;
    if (a.k_type == KvType::kF32) {
      for (int j = 0; j < kLB; ++j) kp[j] = reinterpret_cast<const float*>(kr[j]) + off;
      F::pack_rows(kbuf, kp, kLB, hd, ostride, kKPitch);
    } else {
      F::pack_typed_rows(kbuf, kr, kLB, a, a.k_type, g, ostride, kKPitch);
    }
    if (a.v_type == KvType::kF32) {
      for (int j = 0; j < kLB; ++j) vp[j] = reinterpret_cast<const float*>(vr[j]) + off;
      F::pack_rows(vbuf, vp, kLB, hd, ostride, ostride);
    } else {
      F::pack_typed_rows(vbuf, vr, kLB, a, a.v_type, g, ostride, ostride);
    }
    for (int j = 0; j < kLB; ++j) vp[j] = vbuf + j * ostride;
  }

  // run_tile for kMinRows to NV * kW rows, rows in lanes (see above).
  template <int NV>
  __attribute__((noinline)) static void run_lanes(const AttentionArgs& a, Row* rows, int nrows,
                                                  int32_t g) {
    constexpr int kLB = P::kLaneBlock;
    constexpr int NW = NV * kW;
    constexpr int J = kLB / (2 * NV);  // keys per lane_scores pass: 2 * NV * J = kLB registers
    static_assert(kLB % J == 0 && NW <= kMaxRows);
    const int64_t hd = a.head_dim;
    const int64_t ostride = (hd + kW - 1) / kW * kW;
    alignas(64) float o[NW * kMaxHeadDim];
    alignas(64) float qt[kMaxHeadDim * NW];
    alignas(64) float kbuf[kLB * kKPitch];
    alignas(64) float vbuf[kLB * kMaxHeadDim];
    alignas(64) float pt[kLB * NW];
    alignas(64) float lo_f[NW], hi_f[NW], alpha[NW], lsum[NW], msum[NW];
    int64_t lo = rows[0].lo, hi = rows[0].hi;
    for (int r = 0; r < NW; ++r) {
      const bool live = r < nrows;
      if (live) lo = F::min64(lo, rows[r].lo), hi = F::max64(hi, rows[r].hi);
      // Lanes past the tile's rows see no key.
      lo_f[r] = live ? static_cast<float>(rows[r].lo) : __builtin_inff();
      hi_f[r] = live ? static_cast<float>(rows[r].hi) : -1.0f;
    }
    pack_qt<NV>(rows, nrows, hd, a.scale, qt);
    for (int64_t i = 0; i < nrows * ostride; ++i) o[i] = 0.0f;
    V lov[NV], hiv[NV], m[NV], l[NV];
    for (int n = 0; n < NV; ++n) {
      lov[n] = P::load(lo_f + n * kW), hiv[n] = P::load(hi_f + n * kW);
      m[n] = P::set1(-__builtin_inff()), l[n] = P::zero();
    }
    const float* kp[kLB];
    const float* vp[kLB];
    const uint8_t* kr[kLB];
    const uint8_t* vr[kLB];
    int act[kMaxRows];
    const float* ps[kMaxRows];
    float alpha_act[kMaxRows];
    for (int64_t kb = lo / kLB * kLB; kb <= hi; kb += kLB) {
      F::template block_rows<kLB>(a, g, kb, lo, hi, kr, vr);
      convert_block(a, g, kr, vr, kp, vp, ostride, kbuf, vbuf);
      V s[kLB * NV];
      for (int j = 0; j < kLB; j += J) lane_scores<NV, J>(qt, kbuf + j * kKPitch, hd, s + j * NV);
      lane_softmax<NV>(s, lov, hiv, kb, m, l, pt, alpha);
      int na = 0;
      for (int r = 0; r < nrows; ++r)
        if (rows[r].lo < kb + kLB && rows[r].hi >= kb)
          act[na] = r, ps[na] = pt + r, alpha_act[na++] = alpha[r];
      F::template pv_active<NW, kLB>(rows, act, na, o, ostride, vp, kb, hd, ps, alpha_act);
    }
    for (int n = 0; n < NV; ++n) P::store(lsum + n * kW, l[n]), P::store(msum + n * kW, m[n]);
    for (int r = 0; r < nrows; ++r)
      F::store_out(rows[r].out, o + r * ostride, hd, F::inv_denominator(lsum[r], msum[r], rows[r].sink));
  }

  // ---- Keys in lanes (decode) -----------------------------------------------------------
  //
  // Tiles of R < kMinRows rows (and of kInPlaceRows where the keys are read in place): the block's
  // keys are the lanes (K^T by kW x kW register transposes), each row's q[d] a broadcast, so a
  // row's scores are the same sequential FMA chains over d as in run_lanes; its softmax step is
  // run_lanes's in the same order (max, exp, the block's p summed key by key), and p.V is the
  // shared one.

  // Elements [d, d + kW) of kv head g's slice of a cache row of type T as F32 (zero past
  // rem = hd - d): the same values convert_block writes.
  // F32 rows start their head's slice at f32_off elements (g * head_dim in the cache, 0 in
  // an unpacked buffer).
  template <KvType T>
  static V load_k(const AttentionArgs& a, const uint8_t* row, int32_t g, int64_t f32_off, int64_t d,
                  int64_t rem) {
    const int64_t off = static_cast<int64_t>(g) * a.head_dim + d;
    if constexpr (T == KvType::kF32) {
      const float* src = reinterpret_cast<const float*>(row) + f32_off + d;
      return rem >= kW ? P::load(src) : P::load_tail(P::tail(rem), src);
    } else if constexpr (T == KvType::kF16) {
      return P::load_f16(reinterpret_cast<const uint16_t*>(row) + off, rem);
    } else if constexpr (T == KvType::kBF16) {
      return P::load_bf16(reinterpret_cast<const uint16_t*>(row) + off, rem);
    } else {
      float scale;
      std::memcpy(&scale, row + static_cast<int64_t>(a.n_head_kv) * a.head_dim + 4 * g, 4);
      return P::mul(P::set1(scale), P::load_i8(reinterpret_cast<const int8_t*>(row) + off, rem));
    }
  }

  // s[r][c] lane i = score of row r and key c * kW + i of the block (kr: its K cache rows).
  // q: [R][hd] pre-scaled. K^T is built kW x kW in registers from the cache rows and used at
  // once (no converted copy of K is written).
  template <int R, KvType T>
  static void key_scores(const AttentionArgs& a, int32_t g, const uint8_t* const* kr,
                         int64_t f32_off, const float* q, V (*s)[P::kLaneBlock / kW]) {
    constexpr int C = P::kLaneBlock / kW;
    const int64_t hd = a.head_dim;
    V acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = P::zero();
    for (int64_t d0 = 0; d0 < hd; d0 += kW) {
      const int n = hd - d0 < kW ? static_cast<int>(hd - d0) : kW;
      for (int c = 0; c < C; ++c) {
        V t[kW];
        for (int i = 0; i < kW; ++i) t[i] = load_k<T>(a, kr[c * kW + i], g, f32_off, d0, hd - d0);
        P::transpose(t);
        for (int i = 0; i < n; ++i)
          for (int r = 0; r < R; ++r)
            acc[r][c] = P::fma(P::set1(q[r * hd + d0 + i]), t[i], acc[r][c]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) s[r][c] = acc[r][c];
  }

  // One row's online-softmax step over the block (keys: the block's positions as floats):
  // p [kLB] = exp(s - mu), 0 where masked; updates row.m, row.l; returns alpha.
  static float key_softmax(Row& row, const V* s, const float* keys, float* p) {
    constexpr int C = P::kLaneBlock / kW;
    const V lo = P::set1(static_cast<float>(row.lo)), hi = P::set1(static_cast<float>(row.hi));
    const V ninf = P::set1(-__builtin_inff());
    V x[C];
    V bm = ninf;
    for (int c = 0; c < C; ++c) {
      x[c] = P::blend(P::in_range(lo, hi, P::load(keys + c * kW)), s[c], ninf);
      bm = P::max(bm, x[c]);
    }
    const float bmax = P::hmax(P::lanes(0, kW), bm);
    const float m_new = bmax > row.m ? bmax : row.m;
    const float mu = m_new > -__FLT_MAX__ ? m_new : -__FLT_MAX__;
    const float alpha = P::exp1(row.m - mu);
    const V vmu = P::set1(mu);
    for (int c = 0; c < C; ++c)
      P::store(p + c * kW,
               P::keep(P::in_range(lo, hi, P::load(keys + c * kW)), P::exp(P::sub(x[c], vmu))));
    float sum = 0.0f;
    for (int j = 0; j < P::kLaneBlock; ++j) sum += p[j];
    row.l = __builtin_fmaf(row.l, alpha, sum);  // as run_lanes (see lane_softmax)
    row.m = m_new;
    return alpha;
  }

  // run_tile for R (< kMinRows, or kInPlaceRows) rows.
  template <int R>
  static void run_keys(const AttentionArgs& a, Row* rows, int32_t g) {
    switch (a.k_type) {
      case KvType::kQ4:  // unpacked block by block into F32 rows first (run_keys_t)
      case KvType::kF32:
        return run_keys_t<R, KvType::kF32>(a, rows, g);
      case KvType::kF16:
        return run_keys_t<R, KvType::kF16>(a, rows, g);
      case KvType::kBF16:
        return run_keys_t<R, KvType::kBF16>(a, rows, g);
      case KvType::kQ8:
        return run_keys_t<R, KvType::kQ8>(a, rows, g);
    }
  }

  template <int R, KvType T>
  __attribute__((noinline)) static void run_keys_t(const AttentionArgs& a, Row* rows, int32_t g) {
    constexpr int kLB = P::kLaneBlock;
    constexpr int C = kLB / kW;
    static_assert(kLB % kW == 0);
    const int64_t hd = a.head_dim;
    const int64_t ostride = (hd + kW - 1) / kW * kW;
    const bool in_place_v = v_in_place(a);
    alignas(64) float o[R * kMaxHeadDim];
    alignas(64) float q[R * kMaxHeadDim];
    alignas(64) float vbuf[kLB * kMaxHeadDim];
    alignas(64) float kbuf[kLB * kMaxHeadDim];
    alignas(64) float p[R][kLB];
    alignas(64) float keys[kLB];
    int64_t lo = rows[0].lo, hi = rows[0].hi;
    for (int r = 0; r < R; ++r) {
      lo = F::min64(lo, rows[r].lo), hi = F::max64(hi, rows[r].hi);
      rows[r].m = -__builtin_inff(), rows[r].l = 0.0f;
      for (int64_t d = 0; d < hd; ++d) q[r * hd + d] = rows[r].q[d] * a.scale;  // as pack_qt
    }
    for (int64_t i = 0; i < R * ostride; ++i) o[i] = 0.0f;
    const float* vp[kLB];
    const uint8_t* kr[kLB];
    const uint8_t* vr[kLB];
    int act[R];
    const float* ps[R];
    float alpha[R];
    for (int64_t kb = lo / kLB * kLB; kb <= hi; kb += kLB) {
      F::template block_rows<kLB>(a, g, kb, lo, hi, kr, vr);
      if (in_place_v) {
        for (int j = 0; j < kLB; ++j)
          vp[j] = reinterpret_cast<const float*>(reinterpret_cast<const uint16_t*>(vr[j]) + g * hd);
      } else {
        F::pack_typed_rows(vbuf, vr, kLB, a, a.v_type, g, ostride, ostride);
        for (int j = 0; j < kLB; ++j) vp[j] = vbuf + j * ostride;
      }
      for (int j = 0; j < kLB; ++j) keys[j] = static_cast<float>(kb + j);
      int64_t k_off = static_cast<int64_t>(g) * hd;  // kv head g's slice within a K row
      if (a.k_type == KvType::kQ4) {
        // Q4 keys: unpacked to F32 rows of kbuf, then read as an F32 cache of one head.
        F::pack_typed_rows(kbuf, kr, kLB, a, a.k_type, g, ostride, ostride);
        for (int j = 0; j < kLB; ++j) kr[j] = reinterpret_cast<const uint8_t*>(kbuf + j * ostride);
        k_off = 0;
      }
      V s[R][C];
      key_scores<R, T>(a, g, kr, k_off, q, s);
      int na = 0;
      for (int r = 0; r < R; ++r)
        if (rows[r].lo < kb + kLB && rows[r].hi >= kb)
          act[na] = r, ps[na] = p[r], alpha[na++] = key_softmax(rows[r], s[r], keys, p[r]);
      if (in_place_v)
        F::template pv_active<1, kLB, KvType::kF16>(rows, act, na, o, ostride, vp, kb, hd, ps,
                                                    alpha);
      else
        F::template pv_active<1, kLB>(rows, act, na, o, ostride, vp, kb, hd, ps, alpha);
    }
    for (int r = 0; r < R; ++r)
      F::store_out(rows[r].out, o + r * ostride, hd, F::inv_denominator(rows[r].l, rows[r].m, rows[r].sink));
  }
};

}  // namespace edge::attn
