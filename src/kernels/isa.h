// The x86 ISA levels kernel files are built for, and which kernel variant needs which.
//
// A kernel file named *_<level>.cpp (x86_avx2/packed_avxvnni.cpp, ...) is compiled with
// exactly -m<feature> for each feature of its level (CMakeLists.txt), and dispatch runs code
// from it only where the CPU reports every one of those features. A flag beyond the
// level's features would let the compiler emit an instruction (auto-vectorised, not only
// an intrinsic) that the runtime check never promised: SIGILL on a CPU with the level but
// not the flag. tests/kernels/isa_test.cpp checks the real compile commands against this
// table and every dispatch decision against simulated CPU classes.
#pragma once

#include <string>
#include <vector>

#include "core/cpu_info.h"

namespace edge {

enum class Isa { kAvx2, kAvxVnni, kAvx512, kAvx512Vnni };

struct IsaLevel {
  Isa isa;
  const char* suffix;                 // file-name suffix: "avx2", "avxvnni", "avx512", ...
  std::vector<std::string> features;  // cpu_info() names == the GCC -m flag names
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
// the name dispatch reports, and the level it needs.
struct KernelVariant {
  const char* family;
  const char* name;
  Isa isa;
};
const std::vector<KernelVariant>& kernel_variants();

// Dispatch decisions as pure functions of the CPU, so tests can ask them about CPUs they
// do not run on. Each returns variant names from kernel_variants() (or "ref").
std::string dense_variant_for(const CpuInfo& cpu);                 // widest runnable
std::vector<std::string> packed_variants_for(const CpuInfo& cpu);  // runnable, narrow first
std::string stream_read_variant_for(const CpuInfo& cpu);           // widest runnable

}  // namespace edge
