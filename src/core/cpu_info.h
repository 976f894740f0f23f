// What CPU this is: model name, ISA feature flags (from cpuid via the compiler's
// builtins) and the cores this process may run on. Read once; used by kernel dispatch
// reports and by every benchmark's provenance.
#pragma once

#include <string>
#include <vector>

namespace edge {

struct CpuInfo {
  std::string model_name;
  std::vector<std::string> features;  // e.g. "avx2", "avx512_vnni", present ones only
  std::vector<int> allowed_cpus;      // sched_getaffinity
  bool has(const std::string& feature) const;
  std::string features_string() const;  // "avx2 fma f16c ..."
};

const CpuInfo& cpu_info();

}  // namespace edge
