// The dense matmul's loop nest, written once for every ISA (x86_avx2/, x86_avx512/,
// arm_neon/): tokens in blocks whose activation rows stay in L2 while every weight-row tile
// passes over them; inside a block, weight rows four at a time through register tiles of
// Tile::kTokens tokens (one narrower tile for the rest), then the last rows one by one.
// The register tile is kernels/dense_tile.h's, over an ISA file's vector primitives; any
// Tile with this shape runs here:
//
//   struct Tile {
//     static constexpr int kTokens;         // widest token count of a register tile
//     template <int R, int T>               // y[t, r] for R weight rows x T tokens
//     static void run(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out);
//   };
//
// matmul_rows<Tile> is an api.h MatmulRowsFn (dense::install_matmuls installs one per weight
// type).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/packed_api.h"

namespace edge::dense {

// The last `rest` (< Tile::kTokens) tokens through one tile of exactly that width.
template <class Tile, int R, int T>
inline void rest_tile(int64_t rest, const float* x, int64_t in, const uint8_t* const* w, float* y,
                      int64_t out) {
  if constexpr (T > 0) {
    if (rest == T) return Tile::template run<R, T>(x, in, w, y, out);
    rest_tile<Tile, R, T - 1>(rest, x, in, w, y, out);
  }
}

// Tokens [t0, t1) through R weight rows (x rows `in` apart, y rows `out` apart).
template <class Tile, int R>
inline void token_tiles(const float* x, int64_t in, const uint8_t* const* w, float* y, int64_t out,
                        int64_t t0, int64_t t1) {
  constexpr int kT = Tile::kTokens;
  int64_t t = t0;
  for (; t + kT <= t1; t += kT) Tile::template run<R, kT>(x + t * in, in, w, y + t * out, out);
  rest_tile<Tile, R, kT - 1>(t1 - t, x + t * in, in, w, y + t * out, out);
}

// Rows [r0, r1) of y[n, out] = x[n, in] . W[out, in]^T (api.h MatmulRowsFn).
template <class Tile>
void matmul_rows(const float* x, int64_t n, int64_t in, const uint8_t* w, uint64_t w_row_bytes,
                 int64_t out, int64_t r0, int64_t r1, float* y, float* /*scratch*/) {
  constexpr int kT = Tile::kTokens;
  // A token block's activations [tb, in] f32 fill the same budget as a packed matmul's
  // cache block: half a core's L2, read from the CPU (kernels/packed_api.h PackedTiling).
  const int64_t tb = std::max<int64_t>(kT, packed_tiling().block_bytes / (in * 4) / kT * kT);
  for (int64_t b0 = 0; b0 < n; b0 += tb) {
    const int64_t b1 = std::min(n, b0 + tb);
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
      const uint8_t* rows[4] = {w + r * w_row_bytes, w + (r + 1) * w_row_bytes,
                                w + (r + 2) * w_row_bytes, w + (r + 3) * w_row_bytes};
      token_tiles<Tile, 4>(x, in, rows, y + r, out, b0, b1);
    }
    for (; r < r1; ++r) {
      const uint8_t* rows[1] = {w + r * w_row_bytes};
      token_tiles<Tile, 1>(x, in, rows, y + r, out, b0, b1);
    }
  }
}

}  // namespace edge::dense
