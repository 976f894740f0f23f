// The AMX tile operations the packed AMX GEMM (packed_amx_gemm.h) is written over, in two
// implementations with the same interface and the same results:
//   AmxTileOps       the real instructions (ldtilecfg, tilezero, tileloadd, tilestored,
//                    tdpbssd, tilerelease), defined only where the file is compiled with
//                    -mamx-tile -mamx-int8 (x86_avx512/packed_amx.cpp).
//   EmulatedTileOps  a scalar model of the same instructions (Intel SDM pseudo-code: int32
//                    accumulation wrapping modulo 2^32, rows and bytes past the configured
//                    shape zeroed), so the kernel's logic runs and is tested on any x86 CPU
//                    (tests/kernels/amx_emulated_x86_test.cpp). Shapes the hardware would
//                    fault on (#UD: K of A != rows of B, ...) abort here instead.
//
// The interface (all static; tile ids are template arguments because the instructions
// encode the tile register in the opcode):
//   config(const TileConfig&)          ldtilecfg: palette 1, rows and bytes per row of each
//                                      tile (up to 16 rows x 64 bytes); zeroes every tile
//   zero<T>()                          tilezero
//   load<T>(const void* p, stride)     tileloadd: rows of T from p, p + stride, ...
//   store<T>(void* p, stride)          tilestored
//   dpbssd<C, A, B>()                  tdpbssd: C[m][n] += sum over k of the 4 s8 x s8
//                                      products A[m][4k..4k+3] . B[k][4n..4n+3]
//   release()                          tilerelease (back to the init state)
// Only the signed x signed product is needed: the packed codes (W4 0..15, W6 0..63, W8 and
// MXFP4 signed) are all valid s8, and the activations are s8, so no +128 correction (the
// vpdpbusd paths' W8 one) is needed. The kernel gives the tiles fixed roles (accumulators
// 0-3, activations 4-5, weights 6-7); AmxTileOps accepts only those dpbssd combinations,
// because GCC's intrinsics take the register numbers as literal tokens.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/check.h"

namespace edge {
namespace {

// The 64-byte operand of ldtilecfg (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile i (only 0..7 exist)
  uint8_t rows[16] = {};
  void set(int tile, int n_rows, int bytes_per_row) {
    rows[tile] = static_cast<uint8_t>(n_rows);
    colsb[tile] = static_cast<uint16_t>(bytes_per_row);
  }
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// ---- scalar emulation -----------------------------------------------------------------
struct EmulatedTileOps {
  struct State {
    TileConfig cfg;
    bool configured = false;
    alignas(64) uint8_t tile[8][16 * 64] = {};
  };
  static State& state() {
    thread_local State s;
    return s;
  }
  template <int T>
  static State& valid() {
    static_assert(T >= 0 && T < 8, "tiles 0..7");
    State& s = state();
    CHECK_MSG(s.configured && s.cfg.rows[T] > 0, "tile used while not configured");
    return s;
  }

  static void config(const TileConfig& c) {
    CHECK(c.palette == 1);
    for (int i = 0; i < 8; ++i)
      CHECK(c.rows[i] <= 16 && c.colsb[i] <= 64 && (c.rows[i] == 0) == (c.colsb[i] == 0));
    State& s = state();
    s.cfg = c;
    s.configured = true;
    std::memset(s.tile, 0, sizeof(s.tile));
  }
  static void release() { state().configured = false; }

  template <int T>
  static void zero() {
    std::memset(valid<T>().tile[T], 0, 16 * 64);
  }
  template <int T>
  static void load(const void* p, int64_t stride) {
    State& s = valid<T>();
    std::memset(s.tile[T], 0, 16 * 64);
    for (int r = 0; r < s.cfg.rows[T]; ++r)
      std::memcpy(s.tile[T] + r * 64, static_cast<const uint8_t*>(p) + r * stride, s.cfg.colsb[T]);
  }
  template <int T>
  static void store(void* p, int64_t stride) {
    State& s = valid<T>();
    for (int r = 0; r < s.cfg.rows[T]; ++r)
      std::memcpy(static_cast<uint8_t*>(p) + r * stride, s.tile[T] + r * 64, s.cfg.colsb[T]);
  }
  template <int C, int A, int B>
  static void dpbssd() {
    static_assert(C != A && C != B && A != B, "tdpbssd needs three distinct tiles");
    State& s = valid<C>();
    valid<A>();
    valid<B>();
    const TileConfig& c = s.cfg;
    const int kq = c.colsb[A] / 4, n = c.colsb[C] / 4;
    CHECK_MSG(kq == c.rows[B] && c.rows[C] == c.rows[A] && c.colsb[C] == c.colsb[B],
              "tdpbssd shapes disagree (#UD on the hardware)");
    for (int m = 0; m < c.rows[C]; ++m) {
      uint8_t* crow = s.tile[C] + m * 64;
      const int8_t* arow = reinterpret_cast<const int8_t*>(s.tile[A] + m * 64);
      for (int j = 0; j < n; ++j) {
        int32_t v;
        std::memcpy(&v, crow + 4 * j, 4);
        uint32_t acc = static_cast<uint32_t>(v);  // wraps as the hardware's dword adds do
        for (int k = 0; k < kq; ++k) {
          const int8_t* b = reinterpret_cast<const int8_t*>(s.tile[B] + k * 64 + 4 * j);
          for (int i = 0; i < 4; ++i)
            acc += static_cast<uint32_t>(int32_t{arow[4 * k + i]} * int32_t{b[i]});
        }
        v = static_cast<int32_t>(acc);
        std::memcpy(crow + 4 * j, &v, 4);
      }
    }
  }
};

// ---- the real instructions --------------------------------------------------------------
// (GCC names the flags' macros __AMX_TILE__ / __AMX_INT8__, clang __AMXTILE__ / __AMXINT8__.)
#if (defined(__AMX_TILE__) || defined(__AMXTILE__)) && \
    (defined(__AMX_INT8__) || defined(__AMXINT8__))
// GCC's tile intrinsics are macros that paste the register number into the instruction
// text, so a template argument has to be turned into a literal: one branch per tile.
#define EDGE_AMX_PER_TILE(OP)            \
  if constexpr (T == 0) {                \
    OP(0);                               \
  } else if constexpr (T == 1) {         \
    OP(1);                               \
  } else if constexpr (T == 2) {         \
    OP(2);                               \
  } else if constexpr (T == 3) {         \
    OP(3);                               \
  } else if constexpr (T == 4) {         \
    OP(4);                               \
  } else if constexpr (T == 5) {         \
    OP(5);                               \
  } else if constexpr (T == 6) {         \
    OP(6);                               \
  } else {                               \
    static_assert(T == 7, "tiles 0..7"); \
    OP(7);                               \
  }
#define EDGE_AMX_ZERO(t) _tile_zero(t)
#define EDGE_AMX_LOAD(t) _tile_loadd(t, p, stride)
#define EDGE_AMX_STORE(t) _tile_stored(t, p, stride)

// GCC 12's ldtilecfg and tileloadd asm statements do not tell the compiler which memory they
// read (ldtilecfg names 8 of the config's 64 bytes, tileloadd none): the barrier before each
// keeps the stores that fill the config and the unpacked weights ahead of them.
struct AmxTileOps {
  static void config(const TileConfig& c) {
    asm volatile("" : : "r"(&c) : "memory");
    _tile_loadconfig(&c);
  }
  static void release() { _tile_release(); }
  template <int T>
  static void zero() {
    EDGE_AMX_PER_TILE(EDGE_AMX_ZERO)
  }
  template <int T>
  static void load(const void* p, int64_t stride) {
    asm volatile("" : : "r"(p) : "memory");
    EDGE_AMX_PER_TILE(EDGE_AMX_LOAD)
  }
  template <int T>
  static void store(void* p, int64_t stride) {  // (tilestored's asm clobbers memory)
    EDGE_AMX_PER_TILE(EDGE_AMX_STORE)
  }
  // The kernel's roles: accumulator 2m + p += activations 4 + m . weights 6 + p.
  template <int C, int A, int B>
  static void dpbssd() {
    if constexpr (C == 0 && A == 4 && B == 6) {
      _tile_dpbssd(0, 4, 6);
    } else if constexpr (C == 1 && A == 4 && B == 7) {
      _tile_dpbssd(1, 4, 7);
    } else if constexpr (C == 2 && A == 5 && B == 6) {
      _tile_dpbssd(2, 5, 6);
    } else {
      static_assert(C == 3 && A == 5 && B == 7, "only the kernel's tile roles");
      _tile_dpbssd(3, 5, 7);
    }
  }
};

#undef EDGE_AMX_PER_TILE
#undef EDGE_AMX_ZERO
#undef EDGE_AMX_LOAD
#undef EDGE_AMX_STORE
#endif  // -mamx-tile -mamx-int8

}  // namespace
}  // namespace edge
