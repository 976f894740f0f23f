// aarch64 ISA levels and the kernel variants built for them (kernels/isa.h). Compiled only
// on aarch64 (CMakeLists.txt), like the arm_neon/, arm_dotprod/ and arm_i8mm/ folders it names.
// Features are the Linux hwcap names (core/cpu_features_arm.cpp).
#include "kernels/dense_isa.h"
#include "kernels/isa.h"

namespace edge {

const std::vector<IsaLevel>& isa_levels() {
  static const std::vector<IsaLevel> levels = {
      // Advanced SIMD is part of the Armv8-A baseline: its files need no flag.
      {Isa::kNeon, "neon", {"asimd"}, {}},
      // SDOT/UDOT (Cortex-A55/A76 and later, Raspberry Pi 5, Apple M1+, Graviton 2+).
      {Isa::kDotprod, "dotprod", {"asimd", "asimddp"}, {"-march=armv8.2-a+dotprod"}},
      // SMMLA (Armv8.6 I8MM: Neoverse N2/V1+, Cortex-A710+, Apple M2+).
      {Isa::kI8mm, "i8mm", {"asimd", "asimddp", "i8mm"}, {"-march=armv8.2-a+dotprod+i8mm"}},
  };
  return levels;
}

const std::vector<KernelVariant>& kernel_variants() {
  static const std::vector<KernelVariant> v = {
      {"dense", "neon", Isa::kNeon, install_dense_neon},
      {"packed", "neon", Isa::kNeon, nullptr, install_packed_neon},
      {"packed", "neon_dotprod", Isa::kDotprod, nullptr, install_packed_dotprod},
      {"packed", "neon_i8mm", Isa::kI8mm, nullptr, install_packed_i8mm},
  };
  return v;
}

}  // namespace edge
