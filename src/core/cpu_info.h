// What CPU this is: model name, ISA feature flags (core/cpu_features.h: cpuid on x86,
// hwcaps on aarch64) and the cores this process may run on. Read once; used by kernel dispatch
// reports and by every benchmark's provenance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edge {

// Data cache sizes seen by one CPU, in bytes (0: unknown): the level 1 data cache and the
// level 2 and 3 data or unified caches.
struct CacheSizes {
  int64_t l1d = 0, l2 = 0, l3 = 0;
  std::string to_string() const;  // "L1d 32 KiB, L2 512 KiB, L3 32 MiB"
};

struct CpuInfo {
  std::string model_name;
  std::vector<std::string> features;  // e.g. "avx2", "avx512_vnni", present ones only
  std::vector<int> allowed_cpus;      // sched_getaffinity
  // Cores behind allowed_cpus, SMT siblings counted once (sysfs topology); 0: unknown.
  // The default thread count: a second hardware thread on a core shares its vector units
  // and its bandwidth, so it adds little to matmuls and costs a barrier participant.
  int physical_cores = 0;
  // Caches of the first allowed CPU (sysfs cache/index*, else the CPU's own description,
  // core/cpu_features.h): what the tiling may assume.
  CacheSizes caches;
  bool caches_from_cpuid = false;     // sysfs had none; the sizes are cpuid's
  std::string capped_by;              // "EDGE_MAX_ISA=avx2" when features were hidden
  // Features the CPU has but the OS refused to enable, and why ("" when none): e.g. AMX
  // when Linux refuses this process the tile data state (core/cpu_features.h).
  std::string os_refused;
  bool has(const std::string& feature) const;
  std::string features_string() const;  // "avx2 fma f16c ..."
};

// Read once. EDGE_MAX_ISA hides the features above a CPU class, so every dispatch decision
// and test can be run as that CPU would run it; an unknown value is reported and ignored.
// x86: scalar|avx2|avxvnni|avx512|avx512vnni (Haswell/Zen 2-3, Alder Lake, Skylake-X,
// Cascade Lake); aarch64: scalar|neon|dotprod|i8mm (Cortex-A72, Cortex-A76, Neoverse N2).
const CpuInfo& cpu_info();

// How many distinct cores `cpus` run on, read from `sysfs_cpu_dir`/cpuN/topology
// (thread_siblings_list, else core_cpus_list): CPUs with the same sibling list share a
// core. 0 when a CPU's topology cannot be read.
int count_physical_cores(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus);

// The caches of CPU `cpu` from `sysfs_cpu_dir`/cpuN/cache/index*/{level,type,size}
// (size "32K", "2048K", "32M"; instruction caches skipped). Missing entries stay 0.
CacheSizes read_cache_sizes(const std::string& sysfs_cpu_dir, int cpu);

// `features` with those above class `max_isa` removed; false if the class is unknown.
// Defined per architecture (core/cpu_features_x86.cpp, cpu_features_arm.cpp).
bool cap_cpu_features(const std::string& max_isa, std::vector<std::string>* features);

}  // namespace edge
