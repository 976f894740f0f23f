// The flash-style attention over the paged KV cache, written once for every ISA
// (x86_avx2/, x86_avx512/, arm_neon/); an ISA file supplies only a struct of vector
// primitives P and installs attn::Flash<P>::attention (an api.h AttentionTasksFn).
//
// The (query, head) tasks of [t0, t1) that share a kv head are grouped in tiles of up to
// kMaxRows rows (several heads of a GQA group x consecutive queries), kv head outermost so
// its K/V stay in L2 across query blocks. For each block of kBK = 2 x P::kW keys (absolute
// positions aligned to kBK) the block's K and V rows are loaded (converted to F32 when the
// cache is F16/BF16/Q8) ONCE and every row of the tile that sees part of the block uses
// them, stage by stage: the rows' scores (q.k in 8 independent FMA chains, two rows
// sharing each K load, then a transpose-reduce), each row's running max / sum (online
// softmax), then p.V into the outputs (on the stack), two rows sharing each V load. Keys
// outside a row's [lo, hi] (causal, sliding window) are masked; blocks outside every row's
// range are never visited, so ring blocks a window dropped (null pointers) are never read.
//
// Measured on the Zen 5 VM (512 queries, 16/8 heads, head dim 128, one thread,
// DenseSimd.PrintTimings) against one row at a time in blocks of kW keys with four chains:
// AVX2 28.9 -> 25.1 ms, AVX-512 16.9 -> 15.3 ms; pp2048 of the 1.54B model x1.17 / x1.13.
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
#include "kernels/attention_lanes.h"

namespace edge::ref {
void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch);
}

namespace edge::attn {

template <class P>
struct Flash {
  using V = typename P::V;
  using Tail = typename P::Tail;
  static constexpr int kW = P::kW;
  // Score vectors per key block: a larger block amortises the output's reload, rescale and
  // store (once per block and row) over more p.V products; the causal diagonal then masks
  // up to kBK - 1 keys of each row's last block.
  static constexpr int kBV = 2;
  static constexpr int kBK = kW * kBV;     // keys per block
  static constexpr int kMaxRows = P::kTileRows;  // (query, head) rows per tile
  static constexpr int kMaxHeadDim = 512;  // larger heads fall back to the reference
  static_assert(kW % 4 == 0, "scores take keys four at a time");

  struct Row {
    const float* q;
    float* out;
    int64_t lo, hi;  // keys [lo, hi]
    float m, l;      // running max of the scaled scores, running sum of exp
    float sink;      // the head's sink logit (AttentionArgs::sinks), -inf without
  };

  // 1 / the softmax denominator of a row: its sum of exp, plus the sink's exp(sink - m)
  // (the scores were taken relative to m; the exponent is capped so a sink far above
  // every score gives ~0 outputs instead of inf / NaN). Without a sink exactly 1 / l.
  static float inv_denominator(float l, float m, float sink) {
    if (!(sink > -__builtin_inff())) return 1.0f / l;
    const float d = sink - m;
    return 1.0f / (l + __builtin_expf(d < 80.0f ? d : 80.0f));
  }

  static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
  static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

  // Independent FMA chains in scores(): two FMA pipes x 4 cycles of latency want 8 in
  // flight. With 4 (one per key of a group of four, one row) the dot products ran at half
  // the FMA rate, and a row's softmax waited on them.
  static constexpr int kScoreChains = 8;

  // s[r] lane j = q[r] . k[j] for the R rows q[0..R) and the kW key rows kp[0..kW), head_dim
  // hd: kScoreChains / R keys at a time (their row pointers fit in registers), each K load
  // shared by the R rows (R = 2: 6 loads per 8 FMAs instead of 9).
  template <int R>
  static void scores(const float* const* q, const float* const* kp, int64_t hd, V* s) {
    constexpr int G = kScoreChains / R < kW ? kScoreChains / R : kW;
    static_assert(kW % G == 0, "a key vector is whole groups");
    V acc[R][kW];
    const int64_t full = hd / kW * kW;
    const Tail m = P::tail(hd - full);
#pragma GCC unroll 4
    for (int g = 0; g < kW; g += G) {
      const float* k[G];
      V a[R][G];
#pragma GCC unroll 8
      for (int i = 0; i < G; ++i) {
        k[i] = kp[g + i];
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r) a[r][i] = P::zero();
      }
      for (int64_t d = 0; d < full; d += kW) {
        V qv[R];
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r) qv[r] = P::load(q[r] + d);
#pragma GCC unroll 8
        for (int i = 0; i < G; ++i) {
          const V kv = P::load(k[i] + d);
#pragma GCC unroll 2
          for (int r = 0; r < R; ++r) a[r][i] = P::fma(qv[r], kv, a[r][i]);
        }
      }
      if (full < hd) {
#pragma GCC unroll 8
        for (int i = 0; i < G; ++i) {
          const V kv = P::load_tail(m, k[i] + full);
#pragma GCC unroll 2
          for (int r = 0; r < R; ++r) a[r][i] = P::fma(P::load_tail(m, q[r] + full), kv, a[r][i]);
        }
      }
#pragma GCC unroll 8
      for (int i = 0; i < G; ++i)
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r) acc[r][g + i] = a[r][i];
    }
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) s[r] = P::transpose_sum(acc[r]);
  }

  // For each of R rows r: o[r][c0*kW .. (c0+NC)*kW) = alpha[r] * o[r] + sum_{j in [j0, j1)}
  // p[r][j] * v[j]. The R rows share each V load (prefill pairs rows; decode runs one).
  // o has room for whole chunks; with kTail (the head's partial last chunk) the last
  // chunk's V loads use `last` so they stay inside the head. Whole chunks use plain loads:
  // AVX2's vmaskmovps on every key stalled the loop (perf: 20% of the attention's samples
  // on the load and its FMA, pp512 on the Zen 5 VM).
  // VT = kF16: vp[j] point at F16 values (cast), whole chunks only (no kTail): decode reads
  // F16 values in place instead of through a converted copy (the copy took a fifth of a
  // decode tile's time); the values are load_f16's, as the copy's.
  template <int R, int NC, bool kTail, int PS, KvType VT = KvType::kF32>
  static void pv_chunks(float* const* o, const float* const* vp, const float* const* p, int j0,
                        int j1, int64_t c0, const float* alpha, Tail last) {
    V acc[R][NC];
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) {
      const V a = P::set1(alpha[r]);
#pragma GCC unroll 16
      for (int c = 0; c < NC; ++c) acc[r][c] = P::mul(a, P::load(o[r] + (c0 + c) * kW));
    }
    for (int j = j0; j < j1; ++j) {
      V pj[R];
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) pj[r] = P::set1(p[r][j * PS]);
      const float* v = vp[j] + c0 * kW;
#pragma GCC unroll 16
      for (int c = 0; c < NC; ++c) {
        V x;
        if constexpr (VT == KvType::kF16)
          x = P::load_f16(reinterpret_cast<const uint16_t*>(vp[j]) + (c0 + c) * kW, kW);
        else
          x = kTail && c + 1 == NC ? P::load_tail(last, v + c * kW) : P::load(v + c * kW);
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r) acc[r][c] = P::fma(pj[r], x, acc[r][c]);
      }
    }
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int c = 0; c < NC; ++c) P::store(o[r] + (c0 + c) * kW, acc[r][c]);
  }

  // pv_chunks<R, nc, kTail, PS> for a run-time nc in [1, N].
  template <int R, int N, bool kTail, int PS, KvType VT = KvType::kF32>
  static void pv_dispatch(int64_t nc, float* const* o, const float* const* vp,
                          const float* const* p, int j0, int j1, int64_t c0, const float* alpha,
                          Tail last) {
    if constexpr (N > 1) {
      if (nc < N)
        return pv_dispatch<R, N - 1, kTail, PS, VT>(nc, o, vp, p, j0, j1, c0, alpha, last);
    }
    pv_chunks<R, N, kTail, PS, VT>(o, vp, p, j0, j1, c0, alpha, last);
  }

  // R rows' outputs += p.V over keys [j0, j1) of the block, after rescaling by alpha; row r's
  // p of key j is p[r][j * PS].
  template <int R, int PS = 1, KvType VT = KvType::kF32>
  static void pv_rows(float* const* o, const float* const* vp, const float* const* p, int j0,
                      int j1, int64_t hd, const float* alpha) {
    constexpr int kChunks = P::kPvChunks / R;
    const int64_t chunks = (hd + kW - 1) / kW;
    for (int64_t c0 = 0; c0 < chunks; c0 += kChunks) {
      const int64_t nc = min64(kChunks, chunks - c0);
      if (VT == KvType::kF32 && c0 + nc == chunks && hd % kW != 0)
        pv_dispatch<R, kChunks, true, PS, VT>(nc, o, vp, p, j0, j1, c0, alpha, P::tail(hd % kW));
      else
        pv_dispatch<R, kChunks, false, PS, VT>(nc, o, vp, p, j0, j1, c0, alpha, P::tail(kW));
    }
  }

  // Keys [j0, j1) of the block at kb that a row sees.
  static int first_key(const Row& row, int64_t kb) {
    return static_cast<int>(max64(row.lo - kb, 0));
  }
  static int end_key(const Row& row, int64_t kb) {
    return static_cast<int>(min64(row.hi - kb + 1, kBK));
  }

  // One row x the key block at kb: the online-softmax update of the row's (m, l) from its
  // scaled scores s[kBV]. p[kBK] = exp(score - m) on the row's keys, 0 elsewhere; returns
  // alpha, the factor the row's output so far must be rescaled by.
  static float row_softmax(Row& row, const V* s, int64_t kb, float* p) {
    const int j0 = first_key(row, kb), j1 = end_key(row, kb);
    float bmax = -__builtin_inff();
    for (int v = 0; v < kBV; ++v) {
      const int a = max64(j0 - v * kW, 0), b = min64(j1 - v * kW, kW);
      if (a < b) {
        const float m = P::hmax(P::lanes(a, b), s[v]);
        bmax = m > bmax ? m : bmax;
      }
    }
    const float m_new = bmax > row.m ? bmax : row.m;
    // First block: o and l are 0, so any finite alpha works.
    const float alpha = row.l == 0.0f ? 0.0f : P::exp1(row.m - m_new);
    float sum = 0.0f;
    for (int v = 0; v < kBV; ++v) {
      const int a = max64(j0 - v * kW, 0), b = min64(j1 - v * kW, kW);
      const V pv =
          a < b ? P::keep(P::lanes(a, b), P::exp(P::sub(s[v], P::set1(m_new)))) : P::zero();
      sum += P::hsum(pv);
      P::store(p + v * kW, pv);
    }
    row.l = row.l * alpha + sum;
    row.m = m_new;
    return alpha;
  }

  // Scaled scores s[R][kBV] of R rows against the key block.
  template <int R>
  static void block_scores(Row* const* rows, const float* const* kp, int64_t hd, float scale,
                           V (*s)[kBV]) {
    const float* q[R];
    for (int r = 0; r < R; ++r) q[r] = rows[r]->q;
    for (int v = 0; v < kBV; ++v) {
      V sv[R];
      scores<R>(q, kp + v * kW, hd, sv);
      for (int r = 0; r < R; ++r) s[r][v] = P::mul(sv[r], P::set1(scale));
    }
  }

  // The rows [0, nrows) that see part of the key block at kb, through the online softmax
  // and p.V. Stage by stage (every row's scores, then the p.V updates two rows at a time):
  // the rows are independent, so a stage's rows overlap in the core where one row's chain
  // of scores -> max -> exp -> p.V would stall it, and a row pair shares each V load.
  static void tile_block(Row* rows, int nrows, float* o, int64_t ostride, const float* const* kp,
                         const float* const* vp, int64_t kb, int64_t hd, float scale) {
    alignas(64) float p[kMaxRows][kBK];
    float alpha[kMaxRows];
    int act[kMaxRows];
    Row* ar[kMaxRows];
    int na = 0;
    for (int i = 0; i < nrows; ++i)
      if (rows[i].lo < kb + kBK && rows[i].hi >= kb) ar[na] = &rows[i], act[na++] = i;
    V s[kMaxRows][kBV];
    int r = 0;
    for (; r + 1 < na; r += 2) block_scores<2>(ar + r, kp, hd, scale, s + r);
    if (r < na) block_scores<1>(ar + r, kp, hd, scale, s + r);
    const float* ps[kMaxRows];
    for (r = 0; r < na; ++r) alpha[r] = row_softmax(*ar[r], s[r], kb, p[r]), ps[r] = p[r];
    pv_active<1, kBK>(rows, act, na, o, ostride, vp, kb, hd, ps, alpha);
  }

  // p.V of the na active rows act[0..na) (indices into rows) over the key block at kb (kB
  // keys), two rows at a time: active row k's p of key j is ps[k][j * PS], its rescale
  // factor alpha[k].
  template <int PS, int kB, KvType VT = KvType::kF32>
  static void pv_active(const Row* rows, const int* act, int na, float* o, int64_t ostride,
                        const float* const* vp, int64_t kb, int64_t hd, const float* const* ps,
                        const float* alpha) {
    const auto first = [&](int k) { return static_cast<int>(max64(rows[act[k]].lo - kb, 0)); };
    const auto end = [&](int k) { return static_cast<int>(min64(rows[act[k]].hi - kb + 1, kB)); };
    int k = 0;
    for (; k + 1 < na; k += 2) {
      float* os[2] = {o + act[k] * ostride, o + act[k + 1] * ostride};
      const int j0 = first(k) < first(k + 1) ? first(k) : first(k + 1);
      const int j1 = end(k) > end(k + 1) ? end(k) : end(k + 1);
      pv_rows<2, PS, VT>(os, vp, ps + k, j0, j1, hd, alpha + k);
    }
    if (k < na) {
      float* os[1] = {o + act[k] * ostride};
      pv_rows<1, PS, VT>(os, vp, ps + k, first(k), end(k), hd, alpha + k);
    }
  }

  // out[0, hd) = inv * o: whole chunks by plain stores, only the head's tail masked (AVX2's
  // masked store, vmaskmovps, is microcoded on AMD: with one per chunk, perf put 6% of the
  // samples of a 512-query prefill's attention on it on Zen 4).
  static void store_out(float* out, const float* o, int64_t hd, float inv) {
    const V vinv = P::set1(inv);
    int64_t d = 0;
    for (; d + kW <= hd; d += kW) P::store(out + d, P::mul(vinv, P::load(o + d)));
    if (d < hd) P::store_tail(P::tail(hd - d), out + d, P::mul(vinv, P::load(o + d)));
  }

  // Copies n rows of hd floats to dst (rows `pitch` apart, zero-filled to `stride`): cache rows
  // are n_head_kv * head_dim apart, often a multiple of 4 KiB, so a block's K (or V) rows
  // would fall into the same L1 sets and evict each other between the rows of a tile.
  // Whole chunks by plain loads (see pv_chunks), the tail masked.
  static void pack_rows(float* dst, const float* const* src, int n, int64_t hd, int64_t stride,
                        int64_t pitch) {
    for (int j = 0; j < n; ++j)
      pack_row(dst + j * pitch, hd, stride, [&](int64_t d, int64_t rem) {
        return rem >= kW ? P::load(src[j] + d) : P::load_tail(P::tail(rem), src[j] + d);
      });
  }

  // out[0, stride) = load(d, rem) chunk by chunk: whole chunks first (rem == kW, so an
  // inlined load drops its tail branch), then the head's tail and the zero padding.
  template <class Load>
  static void pack_row(float* out, int64_t hd, int64_t stride, Load load) {
    int64_t d = 0;
    for (; d + kW <= hd; d += kW) P::store(out + d, load(d, int64_t{kW}));
    for (; d < stride; d += kW) P::store(out + d, load(d, hd - d));
  }

  // Converts kv head g's slice of n cache rows of type t to F32 rows of dst (`pitch` apart,
  // zero-filled to `stride`). Q8 rows: codes, then one f32 scale per kv head; Q4 rows:
  // unpack_q4 (values stay in the rotated space).
  static void pack_typed_rows(float* dst, const uint8_t* const* rows, int n, const AttentionArgs& a,
                              KvType t, int32_t g, int64_t stride, int64_t pitch) {
    const int64_t hd = a.head_dim;
    const int64_t off = static_cast<int64_t>(g) * hd;
    for (int j = 0; j < n; ++j) {
      float* out = dst + j * pitch;
      if (t == KvType::kQ4) {
        unpack_q4(a, rows[j], g, out, stride);
      } else if (t == KvType::kF32) {
        const float* src = reinterpret_cast<const float*>(rows[j]) + off;
        pack_rows(out, &src, 1, hd, stride, pitch);
      } else if (t == KvType::kQ8) {
        const auto* src = reinterpret_cast<const int8_t*>(rows[j]) + off;
        float scale;
        std::memcpy(&scale, rows[j] + static_cast<int64_t>(a.n_head_kv) * hd + 4 * g, 4);
        const V vs = P::set1(scale);
        pack_row(out, hd, stride,
                 [&](int64_t d, int64_t rem) { return P::mul(vs, P::load_i8(src + d, rem)); });
      } else if (t == KvType::kF16) {
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

  // ---- Q4 rows (api.h): rotated head slices, 4-bit codes in groups with f16 scales ------

  static int64_t q4_group(int64_t hd) {
    return hd % 32 == 0 ? 32 : hd;
  }

  // Byte offset of kv head g's scales in a Q4 row (after every head's codes).
  static int64_t q4_scales_at(const AttentionArgs& a, int32_t g) {
    const int64_t hd = a.head_dim;
    return static_cast<int64_t>(a.n_head_kv) * hd / 2 +
           2 * static_cast<int64_t>(g) * (hd / q4_group(hd));
  }

  // Kv head g's slice of a Q4 row as F32 into out [stride] (zero past hd), in the rotated
  // space: the nibbles expanded to int8 codes - 8 first (a byte loop the compiler vectorises
  // with the file's ISA), then converted kW at a time as Q8 rows are, times their group's
  // scale (groups are whole vectors where head_dim is a multiple of 32).
  static void unpack_q4(const AttentionArgs& a, const uint8_t* row, int32_t g, float* out,
                        int64_t stride) {
    const int64_t hd = a.head_dim, grp = q4_group(hd), half = grp / 2, ng = hd / grp;
    const uint8_t* codes = row + static_cast<int64_t>(g) * hd / 2;
    const auto* scales = reinterpret_cast<const uint16_t*>(row + q4_scales_at(a, g));
    // The group scales as F32 (kMaxHeadDim / 32 at most), one by one: a head has fewer
    // scales than a vector has lanes (4 for 128-wide heads), and load_f16's partial load
    // (a copy through the stack, then a wide load of it) stalled on store forwarding: an
    // eighth of a decode tile's time.
    alignas(64) float sc[kMaxHeadDim / 32 + kW];
    for (int64_t j = 0; j < ng; ++j) sc[j] = f16_value(scales + j);
    alignas(64) int8_t q[kMaxHeadDim];
    if (grp == 32) {
      // The usual case, with the group size a constant: the byte loop is a few vector ops
      // and a chunk's scale an index by shift (a division per chunk cost as much as the rest).
      for (int64_t j = 0; j < ng; ++j) expand_nibbles<16>(codes + j * 16, q + j * 32);
      pack_row(out, hd, stride, [&](int64_t d, int64_t rem) {
        return d < hd ? P::mul(P::set1(sc[d >> 5]), P::load_i8(q + d, rem)) : P::zero();
      });
      return;
    }
    for (int64_t b = 0; b < half; ++b) {  // one group: the whole head
      q[b] = static_cast<int8_t>((codes[b] & 15) - 8);
      q[b + half] = static_cast<int8_t>((codes[b] >> 4) - 8);
    }
    if (hd % kW == 0) {
      const V vs = P::set1(sc[0]);
      pack_row(out, hd, stride, [&](int64_t d, int64_t rem) {
        return d < hd ? P::mul(vs, P::load_i8(q + d, rem)) : P::zero();
      });
      return;
    }
    for (int64_t d = 0; d < hd; ++d) out[d] = static_cast<float>(q[d]) * sc[0];
    for (int64_t d = hd; d < stride; ++d) out[d] = 0.0f;
  }

  // The F16 at p (any alignment) as F32, exactly as the F16C conversion gives it.
  static float f16_value(const uint16_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    const uint32_t sign = static_cast<uint32_t>(h >> 15) << 31, exp = (h >> 10) & 31u,
                   mant = h & 1023u;
    if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in F32
      const float v = static_cast<float>(mant) * 0x1p-24f;
      return sign ? -v : v;
    }
    const uint32_t bits =
        sign | (exp == 31 ? 0x7F800000u | (mant << 13) : ((exp + 112u) << 23) | (mant << 13));
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }

  // q[0, 2H) = the 4-bit codes of c[0, H) minus 8: byte b's low nibble is element b, its
  // high nibble element b + H.
  template <int H>
  static void expand_nibbles(const uint8_t* __restrict c, int8_t* __restrict q) {
    for (int b = 0; b < H; ++b) {
      q[b] = static_cast<int8_t>((c[b] & 15) - 8);
      q[b + H] = static_cast<int8_t>((c[b] >> 4) - 8);
    }
  }

  // kv_rotate (api.h) on one row x [hd] of queries or outputs, written here again so that it
  // compiles with the ISA file's flags: blocks of the largest power of two dividing hd,
  // forward x <- H.D.x (the keys' and values' rotation), inverse x <- D.H.x.
  static float rotation_sign(int64_t i) {
    return ((static_cast<uint32_t>(i) * 0x9E3779B1u) >> 31) != 0 ? -1.0f : 1.0f;
  }
  static void rotate(float* x, int64_t hd, bool inverse) {
    const int64_t n = hd & -hd;
    const float norm = 1.0f / __builtin_sqrtf(static_cast<float>(n));
    for (int64_t b0 = 0; b0 < hd; b0 += n) {
      float* v = x + b0;
      if (!inverse)
        for (int64_t i = 0; i < n; ++i) v[i] *= rotation_sign(i);
      for (int64_t len = 1; len < n; len *= 2)
        for (int64_t i = 0; i < n; i += 2 * len)
          for (int64_t j = i; j < i + len; ++j) {
            const float p = v[j], q = v[j + len];
            v[j] = p + q;
            v[j + len] = p - q;
          }
      for (int64_t i = 0; i < n; ++i) v[i] *= inverse ? norm * rotation_sign(i) : norm;
    }
  }
  static bool rotated(KvType t) {
    return t == KvType::kQ4;
  }

  // Bytes of one kv head's slice of a row of type t (the prefetched span; Q4's scales sit
  // apart from the codes and are left to the cache).
  static int64_t slice_bytes(KvType t, int64_t hd) {
    switch (t) {
      case KvType::kF32:
        return hd * 4;
      case KvType::kF16:
      case KvType::kBF16:
        return hd * 2;
      case KvType::kQ8:
        return hd;
      case KvType::kQ4:
        return hd / 2;
    }
    return hd;
  }

  // The cache rows of the kB keys of the block at kb (kr, vr: row starts), and a prefetch of
  // the next block's slices of kv head g. Keys outside [lo, hi] are clamped into it (valid
  // memory: a ring may have reused the blocks before lo); they are masked out of p.
  template <int kB>
  static void block_rows(const AttentionArgs& a, int32_t g, int64_t kb, int64_t lo, int64_t hi,
                         const uint8_t** kr, const uint8_t** vr) {
    for (int j = 0; j < kB; ++j) {
      const int64_t key = min64(max64(kb + j, lo), hi);
      kr[j] = a.k_row(key), vr[j] = a.v_row(key);
    }
    // The next block's rows are scattered (one head's slice of each cache row), so the
    // hardware prefetcher does not fetch them ahead (decode reads K/V once, from L3/DRAM).
    const int64_t kb_slice = slice_bytes(a.k_type, a.head_dim);
    const int64_t vb_slice = slice_bytes(a.v_type, a.head_dim);
    // Q4 rows keep their scales after every head's codes, in a line of their own: fetched
    // too (unpack_q4 waited on them).
    const int64_t k_scales = a.k_type == KvType::kQ4 ? q4_scales_at(a, g) : -1;
    const int64_t v_scales = a.v_type == KvType::kQ4 ? q4_scales_at(a, g) : -1;
    for (int64_t key = kb + kB; key < min64(kb + 2 * kB, hi + 1); ++key) {
      const uint8_t* kp = a.k_row(key);
      const uint8_t* vp = a.v_row(key);
      for (int64_t d = 0; d < kb_slice; d += 64) __builtin_prefetch(kp + g * kb_slice + d, 0, 3);
      for (int64_t d = 0; d < vb_slice; d += 64) __builtin_prefetch(vp + g * vb_slice + d, 0, 3);
      if (k_scales >= 0) __builtin_prefetch(kp + k_scales, 0, 3);
      if (v_scales >= 0) __builtin_prefetch(vp + v_scales, 0, 3);
    }
  }

  // Rows share kv head g; runs every key block any of them sees. F32 caches are read in
  // place (decode) or packed (prefill); other element types are always converted to F32
  // block by block, once for all rows of the tile (the GQA sharing). Prefill tiles (4 rows
  // or more) go through the rows-in-lanes path where the ISA has one.
  // (The two paths are not inlined here: their stack buffers, some hundred KiB each, would
  // share one frame.)
  static void run_tile(const AttentionArgs& a, Row* rows, int nrows, int32_t g) {
    if constexpr (P::kRowLanes) {
      using L = RowLanes<P, Flash>;
      static_assert(kMaxRows <= 3 * kW, "rows in lanes: at most three vectors");
      if (nrows == L::kInPlaceRows && L::reads_in_place(a))
        return L::template run_keys<L::kInPlaceRows>(a, rows, g);
      if (nrows >= L::kMinRows) {
        if (nrows <= kW) return L::template run_lanes<1>(a, rows, nrows, g);
        if constexpr (kMaxRows > 2 * kW) {
          if (nrows > 2 * kW) return L::template run_lanes<3>(a, rows, nrows, g);
        }
        if constexpr (kMaxRows > kW) return L::template run_lanes<2>(a, rows, nrows, g);
      }
      if (nrows == 1) return L::template run_keys<1>(a, rows, g);
      if (nrows == 2) return L::template run_keys<2>(a, rows, g);
      if constexpr (L::kMinRows > 3) return L::template run_keys<3>(a, rows, g);
    }
    run_dots(a, rows, nrows, g);
  }

  // run_tile's rows through the dot-product path (decode tiles; every tile where the ISA has
  // no rows-in-lanes path).
  __attribute__((noinline)) static void run_dots(const AttentionArgs& a, Row* rows, int nrows,
                                                 int32_t g) {
    const int64_t hd = a.head_dim;
    const int64_t kv_off = static_cast<int64_t>(g) * hd;
    const int64_t ostride = (hd + kW - 1) / kW * kW;
    alignas(64) float o[kMaxRows * kMaxHeadDim];
    alignas(64) float qbuf[kMaxRows * kMaxHeadDim];
    alignas(64) float kbuf[kBK * kMaxHeadDim];
    alignas(64) float vbuf[kBK * kMaxHeadDim];
    const bool f32 = a.k_type == KvType::kF32 && a.v_type == KvType::kF32;
    // Packing pays off once several rows reuse a block (prefill); decode tiles read in place.
    const bool pack = nrows >= 4;
    int64_t lo = rows[0].lo, hi = rows[0].hi;
    for (int i = 0; i < nrows; ++i) {
      lo = min64(lo, rows[i].lo), hi = max64(hi, rows[i].hi);
      rows[i].m = -__builtin_inff(), rows[i].l = 0.0f;
      for (int64_t d = 0; d < ostride; ++d) o[i * ostride + d] = 0.0f;
      if (pack) {
        pack_rows(qbuf + i * ostride, &rows[i].q, 1, hd, ostride, ostride);
        rows[i].q = qbuf + i * ostride;
      }
    }
    const float* kp[kBK];
    const float* vp[kBK];
    const uint8_t* kr[kBK];
    const uint8_t* vr[kBK];
    for (int64_t kb = lo / kBK * kBK; kb <= hi; kb += kBK) {
      block_rows<kBK>(a, g, kb, lo, hi, kr, vr);
      for (int j = 0; j < kBK; ++j) {
        kp[j] = reinterpret_cast<const float*>(kr[j]) + kv_off;
        vp[j] = reinterpret_cast<const float*>(vr[j]) + kv_off;
      }
      if (!f32) {
        pack_typed_rows(kbuf, kr, kBK, a, a.k_type, g, ostride, ostride);
        pack_typed_rows(vbuf, vr, kBK, a, a.v_type, g, ostride, ostride);
        for (int j = 0; j < kBK; ++j) kp[j] = kbuf + j * ostride, vp[j] = vbuf + j * ostride;
      } else if (pack) {
        pack_rows(kbuf, kp, kBK, hd, ostride, ostride);
        pack_rows(vbuf, vp, kBK, hd, ostride, ostride);
        for (int j = 0; j < kBK; ++j) kp[j] = kbuf + j * ostride, vp[j] = vbuf + j * ostride;
      }
      tile_block(rows, nrows, o, ostride, kp, vp, kb, hd, a.scale);
    }
    for (int i = 0; i < nrows; ++i)
      store_out(rows[i].out, o + i * ostride, hd, inv_denominator(rows[i].l, rows[i].m, rows[i].sink));
  }

  // run_tile in the rotated space of Q4 caches: rotated keys are dotted with rotated
  // queries (copies: a.q is the caller's), rotated values give rotated outputs, each turned
  // back once the row is done.
  static void run_rotated_tile(const AttentionArgs& a, Row* rows, int nrows, int32_t g) {
    const int64_t hd = a.head_dim;
    alignas(64) float qrot[kMaxRows * kMaxHeadDim];
    if (rotated(a.k_type))
      for (int r = 0; r < nrows; ++r) {
        float* q = qrot + r * hd;
        std::memcpy(q, rows[r].q, static_cast<size_t>(hd) * sizeof(float));
        rotate(q, hd, /*inverse=*/false);
        rows[r].q = q;
      }
    run_tile(a, rows, nrows, g);
    if (rotated(a.v_type))
      for (int r = 0; r < nrows; ++r) rotate(rows[r].out, hd, /*inverse=*/true);
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
              r.sink = a.sinks ? a.sinks[h] : -__builtin_inff();
            }
          }
          if (nrows > 0) run_rotated_tile(a, rows, nrows, g);
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
