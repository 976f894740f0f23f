// AVX2 + FMA primitives of the Gated DeltaNet kernels (kernels/delta_net_blocking.h): 8
// lanes; the decode step keeps 4 vectors (32 columns of d_v) of recall and read-out sums in
// registers, 8 independent FMA chains, so a [d_k = 128, 32] block of the state (16 KiB) is
// still in L1 when it is written back. Compiled with AVX2 flags: the helpers are in an
// anonymous namespace (kernels/x86_avx2/avx2_math.h) and the template is instantiated over
// them (internal linkage).
#include <immintrin.h>

#include <cstdint>

#include "kernels/delta_net_blocking.h"
#include "kernels/dense_isa.h"
#include "kernels/x86_avx2/avx2_math.h"

namespace edge {
namespace {

struct DeltaPrims : F32x8 {
  static constexpr int kDecodeVecs = 4;
  static V silu(V x) {
    const V e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  }
};

}  // namespace

void install_delta_net_avx2(KernelTable* t) {
  delta::Kernels<DeltaPrims>::install(t);
}

}  // namespace edge
