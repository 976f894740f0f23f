// AVX-512 primitives of the Gated DeltaNet kernels (kernels/delta_net_blocking.h): 16 lanes,
// masked loads and stores for tails; the decode step keeps 2 vectors (32 columns of d_v) of
// recall and read-out sums in registers, so a [d_k = 128, 32] block of the state (16 KiB)
// is still in L1 when it is written back. Compiled with AVX-512 flags: the helpers are in
// an anonymous namespace (kernels/x86_avx512/avx512_math.h) and the template is
// instantiated over them (internal linkage).
#include <immintrin.h>

#include <cstdint>

#include "kernels/delta_net_blocking.h"
#include "kernels/dense_isa.h"
#include "kernels/x86_avx512/avx512_math.h"

namespace edge {
namespace {

struct DeltaPrims : F32x16 {
  static constexpr int kDecodeVecs = 2;
  static V silu(V x) {
    const V e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
  }
};

}  // namespace

void install_delta_net_avx512(KernelTable* t) {
  delta::Kernels<DeltaPrims>::install(t);
}

}  // namespace edge
