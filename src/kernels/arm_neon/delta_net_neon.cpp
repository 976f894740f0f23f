// NEON primitives of the Gated DeltaNet kernels (kernels/delta_net_blocking.h): 4 lanes,
// tails through a zero-padded buffer; the decode step keeps 8 vectors (32 columns of d_v)
// of recall and read-out sums in registers (16 of the 32 q registers), so a [d_k = 128, 32]
// block of the state (16 KiB) is still in L1 when it is written back.
#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm_neon/neon_math.h"
#include "kernels/delta_net_blocking.h"
#include "kernels/dense_isa.h"

namespace edge {
namespace {

struct DeltaPrims : neon::F32x4 {
  static constexpr int kDecodeVecs = 8;
  static V silu(V x) {
    return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), neon::exp4(vnegq_f32(x))));
  }
};

}  // namespace

void install_delta_net_neon(KernelTable* t) {
  delta::Kernels<DeltaPrims>::install(t);
}

}  // namespace edge
