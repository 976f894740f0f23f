// The AMX int8 prefill GEMM over the packed layout of quant/packed.h, written once over a set
// of tile operations (amx_tile_ops.h): x86_avx512/packed_amx.cpp runs it on the real tiles,
// tests/kernels/amx_emulated_x86_test.cpp on their scalar emulation. Everything here is
// plain C++ (no vector intrinsics), so it compiles under either file's flags; as in
// packed_blocking.h, it all has internal linkage and uses no std:: template, since the AMX
// file is compiled with AVX-512 flags.
//
// Shapes. One tdpbssd multiplies an A tile [M tokens x K bytes] of s8 activation codes (rows
// read straight from QuantizedActivations, stride a.k) by a B tile [K/4 rows x 64 bytes] of
// s8 weight codes in the VNNI layout (row k: the 16 rows of a panel x 4 consecutive k, the
// layout of one packed W8 block) into a C tile [M x 16] of int32 dots. Tiles have fixed
// roles: C[m][p] = tile 2m + p, A[m] = tile 4 + m, B[p] = tile 6 + p, so one pass is up to
// 32 tokens (two A tiles of 16) x 32 rows (a panel pair) with four tdpbssd per K step.
//
// Per cache block of panels (about PackedTiling::block_bytes of unpacked weights), every
// (panel, group) cell is unpacked once into a record: its codes as s8 in the B layout (W4
// nibble planes split, W6 / Q5K / Q6K high bits merged, MXFP4 looked up to the doubled
// E2M1 values, W8 copied), then its scales as f32 (and K-quant sub-scales as int32). The
// token tiles then run over the block, reusing the records from L2.
//
// The int32 dots must be scaled per group (W4 / W6 / W8: G = 32, 64 or 128) or per integer
// sub-block (Q4K / Q5K: 32, Q6K: 16), so after each one the C tiles are stored and the same
// epilogue as the reference applies: sym W4 / W6 subtract 8 / 32 x sum(q), asym adds
// min x sa x sum(q); W8 and MXFP4 take the dot as it is (both operands signed); Q4K / Q5K /
// Q6K fold the sub-scales into an int32 super-block sum, then one float step per 256. A
// K step is min(sub-block, 64) bytes: G = 32 and the K-quants use part of a tile's K.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/check.h"
#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"
#include "kernels/x86_avx512/amx_tile_ops.h"

namespace edge {
namespace {
namespace amx {

constexpr int kTokensPerTile = 16;

// Per-kind constants of a cell and its unpacked record: codes [G/4][64] s8, f32 scale[16],
// f32 aux[16] (W4 asym: min; Q4K / Q5K: dmin), int32 sc[kSubs][16], int32 m[8][16].
template <PackedKind K, int G>
struct Kind {
  static constexpr bool kQ45 = K == PackedKind::kQ4K || K == PackedKind::kQ5K;
  static constexpr bool kQ6 = K == PackedKind::kQ6K;
  static constexpr int kSub = kQ45 ? 32 : kQ6 ? 16 : G;  // k per integer dot
  static constexpr int kStep = kSub < 64 ? kSub : 64;    // k per tdpbssd
  static constexpr int kSubs = G / kSub;
  static constexpr int64_t kCodes = int64_t{G} * 16;
  static constexpr int64_t kScale = kCodes, kAux = kCodes + 64, kSc = kCodes + 128;
  static constexpr int64_t kM = kSc + 64 * kSubs;
  static constexpr int64_t kRec = kQ45 || kQ6 ? kM + (kQ45 ? 512 : 0) : kSc;
};

// IEEE half -> float, exactly (portable: this header is built with and without F16C).
inline float half_at(const uint8_t* p, int i) {
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  const uint32_t sign = uint32_t{h & 0x8000u} << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  if (exp == 0) {  // zero or subnormal: man x 2^-24
    const float f = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign != 0 ? -f : f;
  }
  const uint32_t bits =
      exp == 31 ? sign | 0x7F800000u | man << 13 : sign | (exp + 112) << 23 | man << 13;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// An E8M0 byte as 2^(e - 128) (quant/mxfp4.h): (e - 1) << 23 for e >= 2, else the subnormals
// 2^-128 and 2^-127, bit patterns 0x200000 << e.
inline float e8m0(uint8_t e) {
  const uint32_t bits = e >= 2 ? uint32_t{e - 1u} << 23 : 0x200000u << e;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// W4 block b of a cell (64 bytes, k 8b..8b+7) -> B rows 2b (low nibbles, k 8b..8b+3) and
// 2b + 1 (high nibbles).
inline void split_nibbles(const uint8_t* blk, int8_t* rows) {
  for (int j = 0; j < 64; ++j) {
    rows[j] = static_cast<int8_t>(blk[j] & 15);
    rows[64 + j] = static_cast<int8_t>(blk[j] >> 4);
  }
}

// Codes 0..63 of a W6-layout group of g k (W4 blocks, then g / 16 high blocks at g * 8):
// W4 block b's plane e takes bits 4-5 from high block b / 2, bit pair 2 (b % 2) + e.
inline void unpack_w6(const uint8_t* c, int g, int8_t* rows) {
  for (int b = 0; b < g / 8; ++b) {
    split_nibbles(c + b * 64, rows + b * 128);
    const uint8_t* h = c + g * 8 + (b / 2) * 64;
    for (int e = 0; e < 2; ++e) {
      const int sh = 2 * (2 * (b % 2) + e);
      for (int j = 0; j < 64; ++j)
        rows[b * 128 + e * 64 + j] |= static_cast<int8_t>(((h[j] >> sh) & 3) << 4);
    }
  }
}

// Q5K codes 0..31: 8 chunks of 320 bytes (4 W4 blocks, then a block whose byte j holds bit 4
// of W4 block b's plane e in bit 2b + e).
inline void unpack_q5k(const uint8_t* c, int8_t* rows) {
  for (int ch = 0; ch < 8; ++ch) {
    const uint8_t* chunk = c + 320 * ch;
    for (int b = 0; b < 4; ++b) {
      int8_t* out = rows + (ch * 4 + b) * 128;
      split_nibbles(chunk + b * 64, out);
      for (int e = 0; e < 2; ++e)
        for (int j = 0; j < 64; ++j)
          out[e * 64 + j] |= static_cast<int8_t>(((chunk[256 + j] >> (2 * b + e)) & 1) << 4);
    }
  }
}

// One cell -> its record (see Kind).
template <PackedKind K, int G>
inline void unpack_cell(const uint8_t* c, uint8_t* rec) {
  using KT = Kind<K, G>;
  int8_t* codes = reinterpret_cast<int8_t*>(rec);
  float* scale = reinterpret_cast<float*>(rec + KT::kScale);
  float* aux = reinterpret_cast<float*>(rec + KT::kAux);
  int32_t* sc = reinterpret_cast<int32_t*>(rec + KT::kSc);
  int32_t* mins = reinterpret_cast<int32_t*>(rec + KT::kM);
  if constexpr (K == PackedKind::kW8) {
    std::memcpy(codes, c, KT::kCodes);
    for (int r = 0; r < 16; ++r) scale[r] = half_at(c + G * 16, r);
  } else if constexpr (K == PackedKind::kW6) {
    unpack_w6(c, G, codes);
    for (int r = 0; r < 16; ++r) scale[r] = half_at(c + G * 12, r);
  } else if constexpr (KT::kQ45) {
    if constexpr (K == PackedKind::kQ4K)
      for (int b = 0; b < 32; ++b) split_nibbles(c + 320 + b * 64, codes + b * 128);
    else
      unpack_q5k(c + 320, codes);
    for (int r = 0; r < 16; ++r) {
      scale[r] = half_at(c + 256, r);
      aux[r] = half_at(c + 288, r);
      for (int j = 0; j < 8; ++j) {
        sc[j * 16 + r] = c[16 * j + r];
        mins[j * 16 + r] = c[128 + 32 * (j / 2) + 2 * r + j % 2];
      }
    }
  } else if constexpr (KT::kQ6) {
    for (int m = 0; m < 16; ++m) unpack_w6(c + 288 + 192 * m, 16, codes + m * 256);
    for (int r = 0; r < 16; ++r) {
      scale[r] = half_at(c + 256, r);
      for (int j = 0; j < 16; ++j)
        sc[j * 16 + r] = static_cast<int8_t>(c[32 * (j / 2) + 2 * r + j % 2]);
    }
  } else {  // W4 sym / asym, MXFP4
    for (int b = 0; b < G / 8; ++b) split_nibbles(c + b * 64, codes + b * 128);
    if constexpr (K == PackedKind::kMxfp4) {
      constexpr int8_t kDoubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
      for (int i = 0; i < G * 16; ++i) codes[i] = kDoubled[codes[i]];
      for (int r = 0; r < 16; ++r) scale[r] = e8m0(c[G * 8 + r]);
    } else {
      for (int r = 0; r < 16; ++r) scale[r] = half_at(c + G * 8, r);
      if constexpr (K == PackedKind::kW4Asym)
        for (int r = 0; r < 16; ++r) aux[r] = half_at(c + G * 8 + 32, r);
    }
  }
}

// One pass's sums: [token][row of the panel pair].
struct PassSums {
  alignas(64) int32_t dot[32][32];   // the C tiles of one sub-block
  alignas(64) int32_t isum[32][32];  // K-quants: the super-block's sum of sub-scale x dot
  alignas(64) float acc[32][32];
};

// What a pass reads: the call's operands, the records of its panels, its tokens.
struct Pass {
  const PackedMatrixView& w;
  const QuantizedActivations& a;
  int64_t ng, t0;
  int tokens;
};

// The loops over a panel's 16 rows stay loops, which the vectorizer turns into single
// vector ops: GCC otherwise unrolls them first and then vectorizes across tokens instead
// (stride-32 gathers and permutes, 34 KB per epilogue).
#define EDGE_AMX_ROWS _Pragma("GCC unroll 1")

// After sub-block j of group g: the dots of panel pi (record rec) into the f32 sums, by the
// reference's arithmetic (kernels/ref/packed_ref.cpp). Out of line: once per kind and group
// rather than inlined into each of the four pass shapes (which made each pass ~40 KB).
template <PackedKind K, int G>
[[gnu::noinline]] void epilogue(const Pass& ps, const uint8_t* rec, int pi, int64_t g, int j,
                                PassSums& s) {
  using KT = Kind<K, G>;
  const float* __restrict scale = reinterpret_cast<const float*>(rec + KT::kScale);
  const float* __restrict aux = reinterpret_cast<const float*>(rec + KT::kAux);
  const int32_t* __restrict sc = reinterpret_cast<const int32_t*>(rec + KT::kSc) + j * 16;
  const int32_t* __restrict mins = reinterpret_cast<const int32_t*>(rec + KT::kM);
  const QuantizedActivations& a = ps.a;
  for (int t = 0; t < ps.tokens; ++t) {
    const int64_t ai = (ps.t0 + t) * ps.ng + g;
    const float sa = a.scales[ai];
    const int32_t* __restrict d = &s.dot[t][16 * pi];
    int32_t* __restrict is = &s.isum[t][16 * pi];
    float* __restrict acc = &s.acc[t][16 * pi];
    if constexpr (KT::kQ45) {
      EDGE_AMX_ROWS
      for (int r = 0; r < 16; ++r) is[r] += sc[r] * d[r];
      if (j + 1 < KT::kSubs) continue;
      const int16_t* s32 = a.sums32 + (ps.t0 + t) * (a.k / 32) + g * 8;
      EDGE_AMX_ROWS
      for (int r = 0; r < 16; ++r) {
        int32_t msum = 0;
        for (int jj = 0; jj < 8; ++jj) msum += mins[jj * 16 + r] * s32[jj];
        acc[r] +=
            static_cast<float>(is[r]) * (scale[r] * sa) - static_cast<float>(msum) * (aux[r] * sa);
        is[r] = 0;
      }
    } else if constexpr (KT::kQ6) {
      const int32_t q16 = 32 * a.sums16[(ps.t0 + t) * (a.k / 16) + g * 16 + j];
      EDGE_AMX_ROWS
      for (int r = 0; r < 16; ++r) is[r] += sc[r] * (d[r] - q16);
      if (j + 1 < KT::kSubs) continue;
      EDGE_AMX_ROWS
      for (int r = 0; r < 16; ++r) {
        acc[r] += static_cast<float>(is[r]) * (scale[r] * sa);
        is[r] = 0;
      }
    } else if constexpr (K == PackedKind::kW4Asym) {
      const float ms = sa * static_cast<float>(a.sums[ai]);
      EDGE_AMX_ROWS
      for (int r = 0; r < 16; ++r)
        acc[r] += static_cast<float>(d[r]) * (scale[r] * sa) + aux[r] * ms;
    } else {
      constexpr int32_t kOff = K == PackedKind::kW4Sym ? 8 : K == PackedKind::kW6 ? 32 : 0;
      const int32_t off = kOff * a.sums[ai];
      EDGE_AMX_ROWS
      for (int r = 0; r < 16; ++r) acc[r] += static_cast<float>(d[r] - off) * (scale[r] * sa);
    }
  }
}

#undef EDGE_AMX_ROWS

// The tile ops of one K step: MT token tiles x NP panel tiles.
template <class Ops, int MT, int NP>
inline void zero_c() {
  Ops::template zero<0>();
  if constexpr (NP == 2) Ops::template zero<1>();
  if constexpr (MT == 2) Ops::template zero<2>();
  if constexpr (MT == 2 && NP == 2) Ops::template zero<3>();
}

template <class Ops, int MT, int NP>
inline void step(const int8_t* q, int64_t lda, const uint8_t* b0, const uint8_t* b1) {
  Ops::template load<4>(q, lda);
  if constexpr (MT == 2) Ops::template load<5>(q + kTokensPerTile * lda, lda);
  Ops::template load<6>(b0, 64);
  if constexpr (NP == 2) Ops::template load<7>(b1, 64);
  Ops::template dpbssd<0, 4, 6>();
  if constexpr (NP == 2) Ops::template dpbssd<1, 4, 7>();
  if constexpr (MT == 2) Ops::template dpbssd<2, 5, 6>();
  if constexpr (MT == 2 && NP == 2) Ops::template dpbssd<3, 5, 7>();
}

template <class Ops, int MT, int NP>
inline void store_c(PassSums& s) {
  Ops::template store<0>(&s.dot[0][0], sizeof(s.dot[0]));
  if constexpr (NP == 2) Ops::template store<1>(&s.dot[0][16], sizeof(s.dot[0]));
  if constexpr (MT == 2) Ops::template store<2>(&s.dot[16][0], sizeof(s.dot[0]));
  if constexpr (MT == 2 && NP == 2) Ops::template store<3>(&s.dot[16][16], sizeof(s.dot[0]));
}

// Panels p, p + NP - 1 (records from recs, [panel][group]) x the pass's tokens: y rows of
// those panels that exist.
template <class Ops, PackedKind K, int G, int MT, int NP>
void pass(const Pass& ps, int64_t p, const uint8_t* recs, float* y) {
  using KT = Kind<K, G>;
  PassSums s;
  std::memset(s.acc, 0, sizeof(s.acc));
  std::memset(s.isum, 0, sizeof(s.isum));
  const int8_t* q = ps.a.q + ps.t0 * ps.a.k;
  for (int64_t g = 0; g < ps.ng; ++g) {
    const uint8_t* r0 = recs + g * KT::kRec;
    const uint8_t* r1 = recs + (ps.ng + g) * KT::kRec;  // unused when NP == 1
    for (int j = 0; j < KT::kSubs; ++j) {
      zero_c<Ops, MT, NP>();
      for (int k = j * KT::kSub; k < (j + 1) * KT::kSub; k += KT::kStep)
        step<Ops, MT, NP>(q + g * G + k, ps.a.k, r0 + k * 16, r1 + k * 16);
      store_c<Ops, MT, NP>(s);
      epilogue<K, G>(ps, r0, 0, g, j, s);
      if constexpr (NP == 2) epilogue<K, G>(ps, r1, 1, g, j, s);
    }
  }
  const int64_t rows = ps.w.n - p * 16 < 16 * NP ? ps.w.n - p * 16 : 16 * NP;
  for (int t = 0; t < ps.tokens; ++t)
    std::memcpy(y + (ps.t0 + t) * ps.w.n + p * 16, s.acc[t], rows * sizeof(float));
}

// The tiles of a pass of `tokens` (1..32) with K steps of `kstep` bytes.
inline TileConfig config_for(int tokens, int kstep) {
  TileConfig c;
  const int m0 = tokens < kTokensPerTile ? tokens : kTokensPerTile, m1 = tokens - m0;
  for (int m = 0; m < 2; ++m) {
    const int rows = m == 0 ? m0 : m1;
    if (rows == 0) continue;
    c.set(4 + m, rows, kstep);  // A: tokens x k
    c.set(2 * m, rows, 64);     // C: tokens x 16 int32
    c.set(2 * m + 1, rows, 64);
  }
  c.set(6, kstep / 4, 64);  // B: k/4 x (16 rows x 4 k)
  c.set(7, kstep / 4, 64);
  return c;
}

// A per-thread buffer for the unpacked records (grows only; freed when the thread ends).
struct Scratch {
  uint8_t* p = nullptr;
  size_t cap = 0;
  ~Scratch() { std::free(p); }
  uint8_t* get(size_t n) {
    if (n > cap) {
      std::free(p);
      cap = (n + 4095) / 4096 * 4096;
      p = static_cast<uint8_t*>(std::aligned_alloc(64, cap));
      CHECK(p != nullptr);
    }
    return p;
  }
};

inline uint8_t* scratch(size_t n) {
  thread_local Scratch s;
  return s.get(n);
}

// y[a.n, w.n] (panels [p0, p1)) = activations . W^T through the tiles of Ops. block_bytes:
// the unpacked weights per cache block (PackedTiling::block_bytes; the tests pass less).
template <class Ops, PackedKind K, int G>
void gemm(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
          float* y, int64_t block_bytes) {
  using KT = Kind<K, G>;
  CHECK(w.fmt.group == G && a.group == G && a.k == w.k && w.k % G == 0);
  const int64_t ng = w.k / G, cb = packed::cell_bytes(K, G), panel_rec = ng * KT::kRec;
  int64_t fit = block_bytes / panel_rec / 2 * 2;  // panel pairs, as packed_blocking.h
  fit = fit < 2 ? 2 : fit;
  uint8_t* buf = scratch(static_cast<size_t>((fit < p1 - p0 ? fit : p1 - p0) * panel_rec));
  for (int64_t pb = p0; pb < p1; pb += fit) {
    const int64_t pe = pb + fit < p1 ? pb + fit : p1;
    for (int64_t i = 0; i < (pe - pb) * ng; ++i)
      unpack_cell<K, G>(w.data + (pb * ng + i) * cb, buf + i * KT::kRec);
    for (int64_t t0 = 0; t0 < a.n; t0 += 2 * kTokensPerTile) {
      const int tokens = static_cast<int>(a.n - t0 < 32 ? a.n - t0 : 32);
      Ops::config(config_for(tokens, KT::kStep));
      const Pass ps{w, a, ng, t0, tokens};
      for (int64_t p = pb; p < pe; p += 2) {
        const uint8_t* recs = buf + (p - pb) * panel_rec;
        const bool two = p + 1 < pe;
        if (tokens > kTokensPerTile)
          two ? pass<Ops, K, G, 2, 2>(ps, p, recs, y) : pass<Ops, K, G, 2, 1>(ps, p, recs, y);
        else
          two ? pass<Ops, K, G, 1, 2>(ps, p, recs, y) : pass<Ops, K, G, 1, 1>(ps, p, recs, y);
      }
    }
  }
  Ops::release();
}

using GemmFn = void (*)(const PackedMatrixView&, const QuantizedActivations&, int64_t, int64_t,
                        float*, int64_t);

// The GEMM for w's kind and group, or null where it has none (a group the layout lacks).
template <class Ops>
GemmFn gemm_for(const PackedMatrixView& w) {
  const int32_t g = w.fmt.group;
  switch (w.fmt.kind) {
    case PackedKind::kW4Sym:
      return g == 32    ? gemm<Ops, PackedKind::kW4Sym, 32>
             : g == 64  ? gemm<Ops, PackedKind::kW4Sym, 64>
             : g == 128 ? gemm<Ops, PackedKind::kW4Sym, 128>
                        : nullptr;
    case PackedKind::kW4Asym:
      return g == 32    ? gemm<Ops, PackedKind::kW4Asym, 32>
             : g == 64  ? gemm<Ops, PackedKind::kW4Asym, 64>
             : g == 128 ? gemm<Ops, PackedKind::kW4Asym, 128>
                        : nullptr;
    case PackedKind::kW8:
      return g == 32    ? gemm<Ops, PackedKind::kW8, 32>
             : g == 64  ? gemm<Ops, PackedKind::kW8, 64>
             : g == 128 ? gemm<Ops, PackedKind::kW8, 128>
                        : nullptr;
    case PackedKind::kW6:
      return g == 32    ? gemm<Ops, PackedKind::kW6, 32>
             : g == 64  ? gemm<Ops, PackedKind::kW6, 64>
             : g == 128 ? gemm<Ops, PackedKind::kW6, 128>
                        : nullptr;
    case PackedKind::kMxfp4:
      return g == 32 ? gemm<Ops, PackedKind::kMxfp4, 32> : nullptr;
    case PackedKind::kQ4K:
      return g == 256 ? gemm<Ops, PackedKind::kQ4K, 256> : nullptr;
    case PackedKind::kQ5K:
      return g == 256 ? gemm<Ops, PackedKind::kQ5K, 256> : nullptr;
    case PackedKind::kQ6K:
      return g == 256 ? gemm<Ops, PackedKind::kQ6K, 256> : nullptr;
  }
  return nullptr;
}

}  // namespace amx
}  // namespace
}  // namespace edge
