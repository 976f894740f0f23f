// The ISA levels kernel files are built for, and which kernel variant needs which. The
// tables live in one file per architecture, compiled only there (CMake picks x86_*/ and
// *_x86.cpp on x86, arm_*/ and *_arm.cpp on aarch64): isa_x86.cpp, isa_arm.cpp.
//
// A kernel file named *_<level>.cpp (x86_avx2/packed_avxvnni.cpp, arm_dotprod/
// packed_dotprod.cpp, ...) is compiled with exactly its level's compile flags (x86:
// -m<feature> per feature; aarch64: one -march=armv8.2-a+...), and dispatch runs code
// from it only where the CPU reports every one of the level's features. A flag beyond the
// level's features would let the compiler emit an instruction (auto-vectorised, not only
// an intrinsic) that the runtime check never promised: SIGILL on a CPU with the level but
// not the flag. tests/kernels/isa_test.cpp checks the real compile commands against this
// table and every dispatch decision against simulated CPU classes.
#pragma once

#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "kernels/api.h"
#include "kernels/packed_api.h"
#include "kernels/stream_read.h"

namespace edge {

enum class Isa { kAvx2, kAvxVnni, kAvx512, kAvx512Vnni, kAmx, kNeon, kDotprod, kI8mm };

struct IsaLevel {
  Isa isa;
  const char* suffix;                 // file-name suffix: "avx2", "avxvnni", "amx", "neon", ...
  std::vector<std::string> features;  // cpu_info() names (x86: == the GCC -m flag names)
  std::vector<std::string> flags;     // exactly the compile flags of its files
};

const std::vector<IsaLevel>& isa_levels();
const IsaLevel& isa_level(Isa isa);
const IsaLevel* isa_level_by_suffix(const std::string& suffix);  // nullptr if none

// Features of `isa` that `cpu` lacks, space-separated ("" when it can run the level).
std::string isa_missing_features(Isa isa, const CpuInfo& cpu);
inline bool isa_runnable(Isa isa, const CpuInfo& cpu) {
  return isa_missing_features(isa, cpu).empty();
}

// Every SIMD kernel variant the build contains: family ("dense", "packed", "stream_read"),
// the name dispatch reports, the level it needs, and how to install it (the entry of its
// family; an installer overwrites entries of a copy of the reference table).
struct KernelVariant {
  const char* family;
  const char* name;
  Isa isa;
  void (*install_dense)(KernelTable*) = nullptr;     // family "dense"
  void (*install_packed)(PackedKernels*) = nullptr;  // family "packed"
  StreamReadFn stream_read = nullptr;                // family "stream_read"
};
// The variant of `family` called `name`, or nullptr.
const KernelVariant* find_kernel_variant(const std::string& family, const std::string& name);
const std::vector<KernelVariant>& kernel_variants();

// Dispatch decisions as pure functions of the CPU, so tests can ask them about CPUs they
// do not run on. Each returns variant names from kernel_variants() (or "ref").
std::string dense_variant_for(const CpuInfo& cpu);                 // widest runnable
std::vector<std::string> packed_variants_for(const CpuInfo& cpu);  // runnable, narrow first
std::string stream_read_variant_for(const CpuInfo& cpu);           // widest runnable

}  // namespace edge
