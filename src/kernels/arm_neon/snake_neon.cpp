// SnakeBeta (kernels/snake_blocking.h) over the NEON float primitives (neon::F32x4: 4
// lanes, the tail through a zero-padded buffer).
#include <arm_neon.h>

#include "kernels/arm_neon/neon_math.h"
#include "kernels/dense_isa.h"
#include "kernels/snake_blocking.h"

namespace edge {

void install_snake_neon(KernelTable* t) {
  snake::Kernels<neon::F32x4>::install(t);
}

}  // namespace edge
