// What bounds the plain-AVX2 int8 GEMM tile (x86_avx2/packed_avx2_gemm.h) on the core it
// runs on: the cycles of one 64-byte weight block at 4 tokens (512 multiply-adds), and of
// the same block with parts taken out, so each part's cost can be read off. Not part of
// the test suite; the figures are in bench/results/2026-12-02-tile-ports/.
//
//   g++ -O2 -mavx2 bench/int8_tile_ports.cpp -o int8_tile_ports && ./int8_tile_ports
//
// The block is the tile's inner loop written out in assembly (so the compiler's schedule
// does not enter): 2 weight loads, 6 unpack ops (and, shift, and: low and high nibbles of
// both 8-row halves), 8 activation broadcasts (4 tokens x 2 quads), 16 vpmaddubsw, 16 vpaddw
// into 8 s16 accumulators. Clock: a chain of dependent adds (one per cycle, cycle_clock.h,
// shared with int8_peak.cpp). All operands are in L1.
#include <cstdio>
#include <string>
#include <vector>

#include "cycle_clock.h"

namespace {

alignas(64) char g_w[4096];
alignas(64) char g_x[4 * 2304 + 64];

// One weight block and its 4-token tile step, operands: %rsi weights, %rdi activations
// (tokens 2048 bytes apart); ymm15 the nibble mask.
#define EDGE_UNPACK                                                     \
  "vmovdqu (%%rsi), %%ymm12\n vmovdqu 32(%%rsi), %%ymm13\n"             \
  "vpand %%ymm15, %%ymm12, %%ymm10\n vpand %%ymm15, %%ymm13, %%ymm11\n" \
  "vpsrlw $4, %%ymm12, %%ymm12\n vpsrlw $4, %%ymm13, %%ymm13\n"         \
  "vpand %%ymm15, %%ymm12, %%ymm12\n vpand %%ymm15, %%ymm13, %%ymm13\n"
#define EDGE_MAC(LO, HI, A0, A1)                                          \
  "vpmaddubsw %%ymm14, %%" LO ", %%ymm9\n vpaddw %%ymm9, %%" A0 ", %%" A0 \
  "\n"                                                                    \
  "vpmaddubsw %%ymm14, %%" HI ", %%ymm9\n vpaddw %%ymm9, %%" A1 ", %%" A1 "\n"
// Token rows S bytes apart (the tile's activation rows are K apart: 2048 for most
// projections of the 1.54B model).
#define EDGE_TOKENS_AT(BC, LO, HI, OFF, S)                                                      \
  BC(OFF)                                                                                       \
  EDGE_MAC(LO, HI, "ymm0", "ymm1") BC(S + OFF) EDGE_MAC(LO, HI, "ymm2", "ymm3") BC(2 * S + OFF) \
      EDGE_MAC(LO, HI, "ymm4", "ymm5") BC(3 * S + OFF) EDGE_MAC(LO, HI, "ymm6", "ymm7")
#define EDGE_TOKENS(BC, LO, HI, OFF) EDGE_TOKENS_AT(BC, LO, HI, OFF, 2048)
#define EDGE_BCAST(OFF) "vpbroadcastd " #OFF "(%%rdi), %%ymm14\n"
#define EDGE_LOAD(OFF) "vmovdqu " #OFF "(%%rdi), %%ymm14\n"
#define EDGE_NONE(OFF) ""
#define EDGE_CLOBBERS                                                                      \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory"
#define EDGE_LOOP(NAME, BODY)                                                             \
  __attribute__((noinline)) void NAME(long n) {                                           \
    for (long i = 0; i < n; ++i) asm volatile(BODY ::"S"(g_w), "D"(g_x) : EDGE_CLOBBERS); \
  }

// The whole block, as the tile runs it.
EDGE_LOOP(tile_block, EDGE_UNPACK EDGE_TOKENS(EDGE_BCAST, "ymm10", "ymm11", 0)
                          EDGE_TOKENS(EDGE_BCAST, "ymm12", "ymm13", 4))
// Token rows 2112 bytes apart (K + 64): not in one L1 bank.
EDGE_LOOP(tile_rows_2112, EDGE_UNPACK EDGE_TOKENS_AT(EDGE_BCAST, "ymm10", "ymm11", 0, 2112)
                              EDGE_TOKENS_AT(EDGE_BCAST, "ymm12", "ymm13", 4, 2112))
// Activations as plain 32-byte loads (as if spread ahead of time) instead of broadcasts.
EDGE_LOOP(tile_plain_loads, EDGE_UNPACK EDGE_TOKENS(EDGE_LOAD, "ymm10", "ymm11", 0)
                                EDGE_TOKENS(EDGE_LOAD, "ymm12", "ymm13", 4))
// No activation loads at all (one stale register): what the 8 loads cost.
EDGE_LOOP(tile_no_act_loads, EDGE_UNPACK EDGE_TOKENS(EDGE_NONE, "ymm10", "ymm11", 0)
                                 EDGE_TOKENS(EDGE_NONE, "ymm12", "ymm13", 4))
// Multiply-adds and their s16 accumulation only: the bound of this tile's arithmetic.
EDGE_LOOP(mac_only,
          EDGE_TOKENS(EDGE_NONE, "ymm10", "ymm11", 0) EDGE_TOKENS(EDGE_NONE, "ymm12", "ymm13", 4))
// 16 independent vpmaddubsw: the instruction's own throughput (int8_peak.cpp's peak).
EDGE_LOOP(maddubs_only,
          "vpmaddubsw %%ymm14, %%ymm10, %%ymm0\n vpmaddubsw %%ymm14, %%ymm11, %%ymm1\n"
          "vpmaddubsw %%ymm14, %%ymm10, %%ymm2\n vpmaddubsw %%ymm14, %%ymm11, %%ymm3\n"
          "vpmaddubsw %%ymm14, %%ymm10, %%ymm4\n vpmaddubsw %%ymm14, %%ymm11, %%ymm5\n"
          "vpmaddubsw %%ymm14, %%ymm10, %%ymm6\n vpmaddubsw %%ymm14, %%ymm11, %%ymm7\n"
          "vpmaddubsw %%ymm14, %%ymm12, %%ymm0\n vpmaddubsw %%ymm14, %%ymm13, %%ymm1\n"
          "vpmaddubsw %%ymm14, %%ymm12, %%ymm2\n vpmaddubsw %%ymm14, %%ymm13, %%ymm3\n"
          "vpmaddubsw %%ymm14, %%ymm12, %%ymm4\n vpmaddubsw %%ymm14, %%ymm13, %%ymm5\n"
          "vpmaddubsw %%ymm14, %%ymm12, %%ymm6\n vpmaddubsw %%ymm14, %%ymm13, %%ymm7\n")
// 10 vector loads (the block's 2 + 8).
EDGE_LOOP(loads_only,
          "vmovdqu (%%rsi), %%ymm12\n vmovdqu 32(%%rsi), %%ymm13\n"
          "vpbroadcastd (%%rdi), %%ymm0\n vpbroadcastd 2048(%%rdi), %%ymm1\n"
          "vpbroadcastd 4096(%%rdi), %%ymm2\n vpbroadcastd 6144(%%rdi), %%ymm3\n"
          "vpbroadcastd 4(%%rdi), %%ymm4\n vpbroadcastd 2052(%%rdi), %%ymm5\n"
          "vpbroadcastd 4100(%%rdi), %%ymm6\n vpbroadcastd 6148(%%rdi), %%ymm7\n")

}  // namespace

int main() {
  constexpr long kIters = 50'000'000;
  const double hz = bench::clock_hz(4 * kIters);
  struct Loop {
    const char* name;
    void (*fn)(long);
  };
  const std::vector<Loop> loops = {{"tile_block", tile_block},
                                   {"tile_rows_2112", tile_rows_2112},
                                   {"tile_plain_loads", tile_plain_loads},
                                   {"tile_no_act_loads", tile_no_act_loads},
                                   {"mac_only", mac_only},
                                   {"maddubs_only", maddubs_only},
                                   {"loads_only", loads_only}};
  std::string json = "{\"clock_ghz\": " + std::to_string(hz / 1e9) + ", \"cycles_per_block\": {";
  for (size_t i = 0; i < loops.size(); ++i) {
    const double c = bench::best_seconds([&] { loops[i].fn(kIters); }) * hz / kIters;
    json += (i ? ", \"" : "\"") + std::string(loops[i].name) + "\": " + std::to_string(c);
  }
  std::printf("%s}}\n", json.c_str());
  return 0;
}
