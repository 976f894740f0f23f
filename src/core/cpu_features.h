// The one CPU-feature detector, per architecture: cpu_features_x86.cpp (the compiler's
// cpuid builtins) or cpu_features_arm.cpp (getauxval(AT_HWCAP/AT_HWCAP2) on Linux/aarch64).
// CMake compiles exactly one of them (the file-name suffix picks the architecture), so
// cpu_info.cpp and everything above it hold no architecture-specific code.
#pragma once

#include <string>
#include <vector>

namespace edge {

// Appends the ISA features this CPU and OS support, by the names kernels/isa.h uses
// (x86: the GCC -m flag names, "avx2", "avx512vnni"; aarch64: the Linux hwcap names,
// "asimd", "asimddp", "i8mm", "sve", "fphp", "asimdhp", "bf16").
void detect_isa_features(std::vector<std::string>* features);

// Asks the OS for the register state that features in *features need before their first
// use, and removes the features it refuses; returns why ("" when nothing was refused). x86
// Linux: the AMX tile data (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): the
// kernel keeps it disabled per process until asked, and a tile instruction would be killed
// with SIGILL without it); aarch64: nothing to ask. Called once by cpu_info(), after the
// EDGE_MAX_ISA cap (a capped-away feature is not asked for).
std::string enable_os_features(std::vector<std::string>* features);

struct CacheSizes;

// The data caches as the CPU itself describes them (x86: cpuid's deterministic cache
// parameters, leaf 4 on Intel, 0x8000001D on AMD), for machines whose sysfs has no cache
// entries (some VMs); *sizes is left as it is where the CPU says nothing (aarch64 here).
void cpu_cache_sizes(CacheSizes* sizes);

// The EDGE_MAX_ISA classes this architecture knows, e.g. "scalar, avx2, avxvnni, ...".
const char* isa_class_names();

// Removes the features named in `hide` (cap_cpu_features' helper; portable, cpu_info.cpp).
void hide_features(const std::vector<std::string>& hide, std::vector<std::string>* features);

// One short pause inside a spin-wait loop (x86 PAUSE, aarch64 YIELD).
void cpu_relax();

}  // namespace edge
