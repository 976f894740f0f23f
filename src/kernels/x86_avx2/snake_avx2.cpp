// SnakeBeta (kernels/snake_blocking.h) over the AVX2 + FMA float primitives (F32x8: 8 lanes,
// masked loads and stores for the tail). Compiled with AVX2 flags: the primitives are in an
// anonymous namespace (kernels/x86_avx2/avx2_math.h) and the template is instantiated over
// them (internal linkage).
#include <immintrin.h>

#include <cstdint>

#include "kernels/dense_isa.h"
#include "kernels/snake_blocking.h"
#include "kernels/x86_avx2/avx2_math.h"

namespace edge {

void install_snake_avx2(KernelTable* t) {
  snake::Kernels<F32x8>::install(t);
}

}  // namespace edge
