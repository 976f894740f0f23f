// Whether the AVX2 fits (x86_avx2/quant_fit_avx2.cpp) may run: the CPU has the avx2 level
// its file is compiled for (core/cpu_info.h, the one feature detector).
#include "core/cpu_info.h"
#include "quant/quant_fit.h"

namespace edge::quant_fit {

bool avx2_available() {
  const CpuInfo& cpu = cpu_info();
  return cpu.has("avx2") && cpu.has("fma") && cpu.has("f16c");
}

}  // namespace edge::quant_fit
