// The Gated DeltaNet kernels (kernels/delta_net.h) written once over a struct of vector
// primitives P: each ISA file (x86_avx2/, x86_avx512/, arm_neon/) supplies P and installs
// delta::Kernels<P>'s functions; the reference (ref/delta_net_ref.cpp) instantiates the
// chunk-wise form over one-lane scalar primitives and keeps plain loops for the rest.
//
// Everything here is a member of a template over P, so an ISA file's instantiation has
// internal linkage (P lives in its anonymous namespace) and no code compiled with one
// level's flags can be picked by the linker for another.
//
// The primitives (V: a vector of kW floats):
//
//   struct P {
//     using V; static constexpr int kW;     // lanes
//     static constexpr int kDecodeVecs;     // vectors of d_v a decode block keeps in
//                                           // registers (x2: recall and read-out sums)
//     V zero(); V set1(float); V load(const float*); void store(float*, V);
//     V load_n(const float*, int64_t rem);  // lanes >= rem zero (reads only those < rem)
//     void store_n(float*, int64_t rem, V); // writes only lanes < rem; rem >= kW: all
//     V fma(V a, V b, V c);                 // a * b + c
//     V mul(V, V); V sub(V, V);
//     V silu(V);                            // x / (1 + exp(-x))
//     float hsum(V);
//   };
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/delta_net.h"

namespace edge::delta {

template <class P>
struct Kernels {
  using V = typename P::V;
  static constexpr int kW = P::kW;

  static float dot(const float* a, const float* b, int64_t n) {
    V acc[4] = {P::zero(), P::zero(), P::zero(), P::zero()};
    int64_t i = 0;
    for (; i + 4 * kW <= n; i += 4 * kW)
      for (int u = 0; u < 4; ++u)
        acc[u] = P::fma(P::load(a + i + u * kW), P::load(b + i + u * kW), acc[u]);
    for (; i < n; i += kW)
      acc[0] = P::fma(P::load_n(a + i, n - i), P::load_n(b + i, n - i), acc[0]);
    return P::hsum(acc[0]) + P::hsum(acc[1]) + (P::hsum(acc[2]) + P::hsum(acc[3]));
  }

  // y[n] *= s.
  static void scale(float* y, float s, int64_t n) {
    const V vs = P::set1(s);
    for (int64_t i = 0; i < n; i += kW)
      P::store_n(y + i, n - i, P::mul(P::load_n(y + i, n - i), vs));
  }

  // dst[n] = src * s / sqrt(|src|^2 + 1e-6): the per-head L2 norm of q and k.
  static void l2_normalize(const float* src, float* dst, int64_t n, float s) {
    const float inv = s / std::sqrt(dot(src, src, n) + 1e-6f);
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    scale(dst, inv, n);
  }

  // C[m, n] += A[m, kk] . B[kk, n] (row-major, leading dimensions lda, ldb, ldc): register
  // tiles of up to 4 rows x 2 vectors, each B load shared by the tile's rows.
  template <int R>
  static void gemm_tile(int64_t n, int64_t kk, const float* a, int64_t lda, const float* b,
                        int64_t ldb, float* c, int64_t ldc, int64_t j) {
    const int64_t rem0 = n - j, rem1 = n - j - kW;
    V acc[R][2];
    for (int r = 0; r < R; ++r) {
      acc[r][0] = P::load_n(c + r * ldc + j, rem0);
      acc[r][1] = rem1 > 0 ? P::load_n(c + r * ldc + j + kW, rem1) : P::zero();
    }
    for (int64_t p = 0; p < kk; ++p) {
      const V b0 = P::load_n(b + p * ldb + j, rem0);
      const V b1 = rem1 > 0 ? P::load_n(b + p * ldb + j + kW, rem1) : P::zero();
      for (int r = 0; r < R; ++r) {
        const V ar = P::set1(a[r * lda + p]);
        acc[r][0] = P::fma(ar, b0, acc[r][0]);
        acc[r][1] = P::fma(ar, b1, acc[r][1]);
      }
    }
    for (int r = 0; r < R; ++r) {
      P::store_n(c + r * ldc + j, rem0, acc[r][0]);
      if (rem1 > 0) P::store_n(c + r * ldc + j + kW, rem1, acc[r][1]);
    }
  }

  static void gemm_acc(int64_t m, int64_t n, int64_t kk, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float* c, int64_t ldc) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4)
      for (int64_t j = 0; j < n; j += 2 * kW)
        gemm_tile<4>(n, kk, a + i * lda, lda, b, ldb, c + i * ldc, ldc, j);
    for (; i < m; ++i)
      for (int64_t j = 0; j < n; j += 2 * kW)
        gemm_tile<1>(n, kk, a + i * lda, lda, b, ldb, c + i * ldc, ldc, j);
  }

  // One token of one head, q and k normalised (q scaled): S [d_k, d_v] in place, o [d_v].
  // Columns in blocks of kDecodeVecs vectors: the block's recall (S^T k) and read-out (S^T q)
  // sums stay in registers over the d_k rows, then the same rows (now in L1) are decayed
  // and written. S comes from memory once per token.
  static void decode_head(const float* q, const float* k, const float* v, float decay, float beta,
                          float* s, float* o, int64_t d_k, int64_t d_v) {
    constexpr int kB = P::kDecodeVecs;
    const float qk = dot(q, k, d_k);
    const V vdecay = P::set1(decay), vbeta = P::set1(beta), vqk = P::set1(qk);
    for (int64_t j0 = 0; j0 < d_v; j0 += kB * kW) {
      // Vectors in this block (the last block of a d_v that is not a multiple may have
      // fewer) and the lanes left from each.
      const int nb = static_cast<int>(std::min<int64_t>(kB, (d_v - j0 + kW - 1) / kW));
      int64_t rem[kB];
      V recall[kB], read[kB], delta[kB];
      for (int u = 0; u < kB; ++u) {
        rem[u] = d_v - j0 - u * kW;
        recall[u] = read[u] = delta[u] = P::zero();
      }
      for (int64_t i = 0; i < d_k; ++i) {
        const V ki = P::set1(k[i]), qi = P::set1(q[i]);
        const float* row = s + i * d_v + j0;
        for (int u = 0; u < nb; ++u) {
          const V sv = P::load_n(row + u * kW, rem[u]);
          recall[u] = P::fma(sv, ki, recall[u]);
          read[u] = P::fma(sv, qi, read[u]);
        }
      }
      for (int u = 0; u < nb; ++u) {
        // delta = beta (v - decay S^T k); o = decay S^T q + (q.k) delta
        const V vu = P::load_n(v + j0 + u * kW, rem[u]);
        delta[u] = P::mul(vbeta, P::sub(vu, P::mul(vdecay, recall[u])));
        P::store_n(o + j0 + u * kW, rem[u], P::fma(vqk, delta[u], P::mul(vdecay, read[u])));
      }
      for (int64_t i = 0; i < d_k; ++i) {
        const V ki = P::set1(k[i]);
        float* row = s + i * d_v + j0;
        for (int u = 0; u < nb; ++u) {
          const V sv = P::load_n(row + u * kW, rem[u]);
          P::store_n(row + u * kW, rem[u], P::fma(ki, delta[u], P::mul(vdecay, sv)));
        }
      }
    }
  }

  // The rows of token t, head h: q and k of its key head normalised into qn, kn [d_k].
  static void normalized_qk(const DeltaNetArgs& a, int64_t t, int32_t h, float* qn, float* kn) {
    const DeltaNetShape& sh = a.shape;
    const float* row = a.qkv + t * a.qkv_stride;
    const int64_t kh = sh.k_head_of(h);
    l2_normalize(row + kh * sh.d_k, qn, sh.d_k, 1.0f / std::sqrt(static_cast<float>(sh.d_k)));
    l2_normalize(row + sh.key_dim() + kh * sh.d_k, kn, sh.d_k, 1.0f);
  }

  // KernelTable::delta_net_recurrent: token by token. scratch: 2 d_k floats.
  static void recurrent(const DeltaNetArgs& a, int32_t h0, int32_t h1, float* scratch) {
    const DeltaNetShape& sh = a.shape;
    float* qn = scratch;
    float* kn = scratch + sh.d_k;
    for (int32_t h = h0; h < h1; ++h) {
      float* s = a.state + int64_t{h} * sh.d_k * sh.d_v;
      for (int64_t t = 0; t < a.n; ++t) {
        normalized_qk(a, t, h, qn, kn);
        const float* v = a.qkv + t * a.qkv_stride + 2 * sh.key_dim() + int64_t{h} * sh.d_v;
        const int64_t gi = t * sh.n_v_heads + h;
        decode_head(qn, kn, v, std::exp(a.g[gi]), a.beta[gi], s,
                    a.out + t * sh.value_dim() + int64_t{h} * sh.d_v, sh.d_k, sh.d_v);
      }
    }
  }

  // Scratch of one chunk (kDeltaNetChunk = C rows at most), in floats; its size is
  // delta_net_scratch_floats() (delta_net.cpp).
  struct ChunkScratch {
    float *q, *k, *kt, *pq, *pk, *d, *qk, *kk, *gc;
    ChunkScratch(float* p, int64_t d_k, int64_t d_v) {
      constexpr int64_t C = kDeltaNetChunk;
      q = p, k = q + C * d_k, kt = k + C * d_k;                // [C, d_k], [C, d_k], [d_k, C]
      pq = kt + d_k * C, pk = pq + C * d_v, d = pk + C * d_v;  // [C, d_v] each
      qk = d + C * d_v, kk = qk + C * C, gc = kk + C * C;      // [C, C], [C, C], [C]
    }
  };

  // One chunk of L tokens [t0, t0 + L) of head h (the chunk-wise form of delta_net.h).
  static void chunk(const DeltaNetArgs& a, int32_t h, int64_t t0, int64_t L, ChunkScratch& w) {
    constexpr int64_t C = kDeltaNetChunk;
    const DeltaNetShape& sh = a.shape;
    const int64_t dk = sh.d_k, dv = sh.d_v, nv = sh.n_v_heads;
    float* s = a.state + int64_t{h} * dk * dv;
    float run = 0.0f;
    for (int64_t t = 0; t < L; ++t) {
      normalized_qk(a, t0 + t, h, w.q + t * dk, w.k + t * dk);
      for (int64_t i = 0; i < dk; ++i) w.kt[i * C + t] = w.k[t * dk + i];
      run += a.g[(t0 + t) * nv + h];
      w.gc[t] = run;
    }
    // Q' K'^T, K' K'^T [L, L] and Q' S0, K' S0 [L, d_v].
    std::fill(w.qk, w.qk + 2 * C * C, 0.0f);
    std::fill(w.pq, w.pq + 2 * C * dv, 0.0f);
    gemm_acc(L, L, dk, w.q, dk, w.kt, C, w.qk, C);
    gemm_acc(L, L, dk, w.k, dk, w.kt, C, w.kk, C);
    gemm_acc(L, dv, dk, w.q, dk, s, dv, w.pq, dv);
    gemm_acc(L, dv, dk, w.k, dk, s, dv, w.pk, dv);
    // R_t = beta_t (v_t - G_t (K' S0)_t), then D_t = R_t - sum_{s<t} A[t, s] D_s: the
    // row of -A goes into kk's (no longer needed) row t, then one [1, t] x [t, d_v] product.
    for (int64_t t = 0; t < L; ++t) {
      const float beta = a.beta[(t0 + t) * nv + h], gt = std::exp(w.gc[t]);
      const float* v = a.qkv + (t0 + t) * a.qkv_stride + 2 * sh.key_dim() + int64_t{h} * dv;
      float* dt = w.d + t * dv;
      for (int64_t j = 0; j < dv; ++j) dt[j] = beta * (v[j] - gt * w.pk[t * dv + j]);
      float* arow = w.kk + t * C;
      for (int64_t u = 0; u < t; ++u) arow[u] = -beta * std::exp(w.gc[t] - w.gc[u]) * arow[u];
      gemm_acc(1, dv, t, arow, C, w.d, dv, dt, dv);
    }
    // O = diag(G) Q' S0 + (M o Q' K'^T) D, straight into the output rows.
    const int64_t ostride = sh.value_dim();
    float* out = a.out + t0 * ostride + int64_t{h} * dv;
    for (int64_t t = 0; t < L; ++t) {
      float* row = w.qk + t * C;
      for (int64_t u = 0; u <= t; ++u) row[u] *= std::exp(w.gc[t] - w.gc[u]);
      for (int64_t u = t + 1; u < L; ++u) row[u] = 0.0f;
      const float gt = std::exp(w.gc[t]);
      for (int64_t j = 0; j < dv; ++j) out[t * ostride + j] = gt * w.pq[t * dv + j];
    }
    gemm_acc(L, dv, L, w.qk, C, w.d, dv, out, ostride);
    // S_L = G_{L-1} S0 + (diag(exp(gc_{L-1} - gc)) K')^T D.
    const float last = w.gc[L - 1];
    for (int64_t t = 0; t < L; ++t) w.gc[t] = std::exp(last - w.gc[t]);  // gc is done with
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t t = 0; t < L; ++t) w.kt[i * C + t] *= w.gc[t];
    scale(s, std::exp(last), dk * dv);
    gemm_acc(dk, dv, L, w.kt, C, w.d, dv, s, dv);
  }

  // KernelTable::delta_net_chunked: chunks of kDeltaNetChunk tokens, the state carried.
  static void chunked(const DeltaNetArgs& a, int32_t h0, int32_t h1, float* scratch) {
    ChunkScratch w(scratch, a.shape.d_k, a.shape.d_v);
    for (int32_t h = h0; h < h1; ++h)
      for (int64_t t0 = 0; t0 < a.n; t0 += kDeltaNetChunk)
        chunk(a, h, t0, std::min<int64_t>(kDeltaNetChunk, a.n - t0), w);
  }

  // KernelTable::delta_conv: kW channels at a time, the K-1 previous inputs in registers,
  // so out may alias x (x[t] is read before out[t] is written, and never again).
  static void conv(const DeltaConvArgs& a, int64_t c0, int64_t c1) {
    constexpr int kMaxK = 8;
    const int K = a.kernel;
    const int64_t C = a.channels, xs = a.row_stride();
    for (int64_t c = c0; c < c1; c += kW) {
      const int64_t rem = c1 - c;
      float wt[kMaxK][kW] = {};  // the taps of kW channels, tap-major (w is channel-major)
      for (int64_t l = 0; l < std::min<int64_t>(rem, kW); ++l)
        for (int j = 0; j < K; ++j) wt[j][l] = a.w[(c + l) * K + j];
      V taps[kMaxK], hist[kMaxK];
      for (int j = 0; j < K; ++j) taps[j] = P::load(wt[j]);
      for (int j = 0; j + 1 < K; ++j) hist[j] = P::load_n(a.state + j * C + c, rem);
      for (int64_t t = 0; t < a.n; ++t) {
        const V xt = P::load_n(a.x + t * xs + c, rem);
        V acc = P::mul(taps[K - 1], xt);
        for (int j = 0; j + 1 < K; ++j) acc = P::fma(taps[j], hist[j], acc);
        for (int j = 0; j + 2 < K; ++j) hist[j] = hist[j + 1];
        hist[K - 2] = xt;
        P::store_n(a.out + t * xs + c, rem, P::silu(acc));
      }
      for (int j = 0; j + 1 < K; ++j) P::store_n(a.state + j * C + c, rem, hist[j]);
    }
  }

  // KernelTable::rmsnorm_gated.
  static void rmsnorm_gated(const float* x, const float* w, const float* z, float* y, int64_t rows,
                            int64_t dim, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * dim;
      const float* zr = z + r * dim;
      float* yr = y + r * dim;
      const V inv = P::set1(1.0f / std::sqrt(dot(xr, xr, dim) / static_cast<float>(dim) + eps));
      for (int64_t i = 0; i < dim; i += kW) {
        const int64_t rem = dim - i;
        const V xw = P::mul(P::mul(P::load_n(xr + i, rem), inv), P::load_n(w + i, rem));
        P::store_n(yr + i, rem, P::mul(xw, P::silu(P::load_n(zr + i, rem))));
      }
    }
  }

  static void install(KernelTable* t) {
    t->delta_conv = conv;
    t->delta_net_recurrent = recurrent;
    t->delta_net_chunked = chunked;
    t->rmsnorm_gated = rmsnorm_gated;
  }
};

}  // namespace edge::delta
