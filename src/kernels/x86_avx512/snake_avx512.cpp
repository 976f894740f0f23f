// SnakeBeta (kernels/snake_blocking.h) over the AVX-512 float primitives (F32x16: 16 lanes,
// masked loads and stores for the tail). Compiled with AVX-512 flags: the primitives are in
// an anonymous namespace (kernels/x86_avx512/avx512_math.h) and the template is
// instantiated over them (internal linkage).
#include <immintrin.h>

#include <cstdint>

#include "kernels/dense_isa.h"
#include "kernels/snake_blocking.h"
#include "kernels/x86_avx512/avx512_math.h"

namespace edge {

void install_snake_avx512(KernelTable* t) {
  snake::Kernels<F32x16>::install(t);
}

}  // namespace edge
