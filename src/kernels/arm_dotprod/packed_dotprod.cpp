// aarch64 dot-product (Armv8.2 SDOT, hwcap asimddp) packed kernels: W4A8, W6A8, W8A8, Q4K
// A8, Q5K A8 and Q6K A8. The rest of the table is the NEON variant's (arm_neon/packed_neon.cpp),
// which every CPU with SDOT also runs.
//
// The layout of quant/packed.h is already SDOT's operand layout: a 16-byte quarter of a
// code block holds rows 4q..4q+3, lane (4 bytes) = one row over 4 consecutive k. SDOT
// multiplies it lane by lane with the 4 activation codes of those k broadcast to every
// lane, so one instruction adds 4 k of 4 rows. W4 codes (0..15, low nibbles k0..k0+3,
// high nibbles k0+4..k0+7) are used unsigned-as-signed; the -8 offset / asymmetric min
// comes back per group through the activation block's code sum, as in the reference. MXFP4
// codes are the W4 nibbles looked up (tbl) as signed E2M1 values doubled, no offset. W6
// codes (0..63) are the W4 nibbles with bits 4-5 from the high plane, offset 32. The loop
// nest is kernels/packed_blocking.h, the tiles arm_neon/packed_neon_tile.h's row-lane A8
// tile and arm_neon/packed_kquant_tile.h's k-quant one (Q4K codes are W4 nibbles with no
// offset: the SDOT dot of each sub-block of 32 is scaled by its 6-bit sc_j in int32, d and
// dmin apply once per 256 with the mins through the activations' sums of 32; Q5K the same
// with codes 0..31, bit 4 merged from each sub-block's high block; Q6K codes are
// W6 codes in chunks of 16 k: the dot of each sub-block of 16 is scaled by its int8 sc_j,
// d applies once per 256 with the -32 offset through the sums of 16); this file holds
// their SDOT primitive.
#include <arm_neon.h>

#include "core/check.h"
#include "kernels/arm_neon/packed_kquant_tile.h"
#include "kernels/arm_neon/packed_neon_tile.h"
#include "kernels/packed_api.h"
#include "kernels/packed_blocking.h"

namespace edge {
namespace {

// The row-lane A8 tile's primitive (arm_neon/packed_neon_tile.h): one SDOT adds 4 k of 4
// rows; 4 tokens x 4 quarters of accumulators, each weight quarter unpacked once per tile.
struct Sdot {
  static constexpr int kTokens = 4;
  struct Acc {
    int32x4_t v;
  };
  static Acc zero() { return Acc{vdupq_n_s32(0)}; }
  static void add(Acc& acc, int8x16_t codes, int8x16_t act) {
    acc.v = vdotq_s32(acc.v, codes, act);
  }
  static int32x4_t sum(const Acc& acc) { return acc.v; }
};

// W4 (sym/asym), W6 and W8 alike: the tile reads the kind once per call.
void matmul_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  CHECK(a.k == w.k && a.group == w.fmt.group && w.k % w.fmt.group == 0);
  const int64_t ahead = a.n <= Sdot::kTokens ? packed_tiling().prefetch_bytes : 0;
  packed::over_panels(arm_packed::RowA8Tile<Sdot>{w, a, y, ahead}, w, a.n, p0, p1);
}

}  // namespace

void install_packed_dotprod(PackedKernels* t) {
  install_packed_neon(t);
  t->name = "neon_dotprod";
  t->matmul_w4_a8 = matmul_a8;
  t->matmul_w8_a8 = matmul_a8;
  t->matmul_w6_a8 = matmul_a8;
  t->matmul_mxfp4_a8 = matmul_a8;
  t->matmul_q4k_a8 = arm_packed::kquant_matmul_a8<Sdot, arm_packed::Q4KCells>;
  t->matmul_q5k_a8 = arm_packed::kquant_matmul_a8<Sdot, arm_packed::Q5KCells>;
  t->matmul_q6k_a8 = arm_packed::kquant_matmul_a8<Sdot, arm_packed::Q6KCells>;
}

}  // namespace edge
