// The packed matmul's loop nest, written once for every ISA (x86_avx2/, x86_avx512/,
// arm_neon/, arm_dotprod/, arm_i8mm/): an ISA file supplies only its register tile.
//
// y[n, W.n] = x[n, K] . W^T over the panels [p0, p1) a thread was given (16 rows each, as
// (panel, group) cells of quant/packed.h). Panels are taken in cache blocks of about
// PackedTiling::block_bytes of weights (half a core's L2, from the CPU's cache sizes):
// within a block the token tiles run outer and the panels inner, so the block stays in L2
// while each tile's activations (up to Tile::kTokens rows of K) pass over it once per
// block, rather than once per panel. Decode (n <= kTokens) is a single pass over the
// weights in storage order, which is what the hardware prefetcher follows best; the tile
// also prefetches PackedTiling::prefetch_bytes ahead of its reads where that was measured
// to help (DRAM latency is not hidden by two cores' prefetchers alone).
//
//   struct Tile {
//     static constexpr int kTokens;              // widest register tile, in tokens
//     template <int T>                           // tokens [t0, t0 + T), panels [pb, pe)
//     void run(int64_t pb, int64_t pe, int64_t t0) const;
//   };
//
// The tile carries its own operands (weights, activations, output); PanelTiles below is the
// common one, a kernel that computes one panel at a time. A token count below
// kTokens at the end goes to a tile of exactly that width (run<T> for T in 1..kTokens-1).
//
// ISA files are compiled with their own flags, so nothing here is shared with portable
// code: every function is a template over the ISA file's Tile, which lives in that file's
// anonymous namespace, giving each instantiation internal linkage (and no std:: template
// is used: its instantiations would be shared).
#pragma once

#include <cstdint>

#include "kernels/packed_api.h"

namespace edge::packed {

// The last `rest` (< kTokens) tokens through a tile of exactly that width.
template <class Tile, int T>
inline void rest_tile(const Tile& tile, int64_t rest, int64_t pb, int64_t pe, int64_t t0) {
  if constexpr (T > 0) {
    if (rest == T) return tile.template run<T>(pb, pe, t0);
    rest_tile<Tile, T - 1>(tile, rest, pb, pe, t0);
  }
}

namespace {

// Bytes of a (panel, group) cell: packed_api.h's packed_cell_bytes() spelled out with
// internal linkage, for every ISA file: a constexpr function called at run time (a run-time
// group) can be emitted out of line, and one ISA's copy of a shared one kept for all.
constexpr int64_t cell_bytes(PackedKind kind, int64_t g) {
  return kind == PackedKind::kW8       ? g * 16 + 64
         : kind == PackedKind::kW4Asym ? g * 8 + 64
         : kind == PackedKind::kW6     ? g * 12 + 32
         : kind == PackedKind::kQ4K    ? g * 8 + 320
         : kind == PackedKind::kQ6K    ? g * 12 + 288
         : kind == PackedKind::kQ5K    ? g * 10 + 320
         : kind == PackedKind::kMxfp4  ? g * 8 + 16
                                       : g * 8 + 32;
}

}  // namespace

// A register tile's run() over panels [pb, pe) for T tokens, two panels per block (each
// activation broadcast serves both) and a lone last panel alone; with one token (the GEMV)
// one panel at a time, so each thread reads one weight stream. `block` is a template
// lambda: block.template operator()<kPanels>(p) computes panels [p, p + kPanels).
template <int T, class Block>
inline void over_panel_pairs(int64_t pb, int64_t pe, const Block& block) {
  int64_t p = pb;
  if constexpr (T == 1) {
    for (; p < pe; ++p) block.template operator()<1>(p);
    return;
  }
  for (; p + 2 <= pe; p += 2) block.template operator()<2>(p);
  if (p < pe) block.template operator()<1>(p);
}

// Panels [p0, p1) of w x tokens [0, n).
template <class Tile>
void over_panels(const Tile& tile, const PackedMatrixView& w, int64_t n, int64_t p0, int64_t p1) {
  constexpr int kT = Tile::kTokens;
  const int64_t cell = cell_bytes(w.fmt.kind, w.fmt.group);
  const int64_t panel_bytes = (w.k / w.fmt.group) * cell;
  // An even number of panels per cache block: the AVX-512 tiles take panel pairs, and an odd
  // block ends in a one-panel pass (K = 2048 at W4 g128: 31 panels fit; the one-panel passes
  // took 4.7% of a pp512 on Zen 4).
  const int64_t fit = packed_tiling().block_bytes / panel_bytes / 2 * 2;
  const int64_t block = n <= kT ? p1 - p0 : fit > 1 ? fit : 1;
  for (int64_t pb = p0; pb < p1; pb += block) {
    const int64_t pe = pb + block < p1 ? pb + block : p1;
    int64_t t0 = 0;
    for (; t0 + kT <= n; t0 += kT) tile.template run<kT>(pb, pe, t0);
    rest_tile<Tile, kT - 1>(tile, n - t0, pb, pe, t0);
  }
}

// The usual tile: one panel at a time through K::tile<T>(w, x, p, t0, y, pf) (rows of panel
// p x tokens [t0, t0 + T); pf: the prefetch distance), x the activations (const float* for
// the A16 kernels, QuantizedActivations for A8).
template <class K, class X>
struct PanelTiles {
  static constexpr int kTokens = K::kTokens;
  const PackedMatrixView& w;
  const X& x;
  float* y;
  int64_t pf;
  template <int T>
  void run(int64_t pb, int64_t pe, int64_t t0) const {
    for (int64_t p = pb; p < pe; ++p) K::template tile<T>(w, x, p, t0, y, pf);
  }
};

// y[n, w.n] (panels [p0, p1)) through kernel K's panel tiles.
template <class K, class X>
void over_panel_tiles(const PackedMatrixView& w, const X& x, int64_t n, int64_t p0, int64_t p1,
                      float* y) {
  over_panels(PanelTiles<K, X>{w, x, y, packed_tiling().prefetch_bytes}, w, n, p0, p1);
}

}  // namespace edge::packed
