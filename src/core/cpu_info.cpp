#include "core/cpu_info.h"

#include <sched.h>

#include <algorithm>
#include <fstream>

namespace edge {
namespace {

std::string read_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

CpuInfo detect() {
  CpuInfo c;
  c.model_name = read_model_name();
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
#define EDGE_FEATURE(name) \
  if (__builtin_cpu_supports(name)) c.features.emplace_back(name);
  EDGE_FEATURE("sse4.2")
  EDGE_FEATURE("avx")
  EDGE_FEATURE("avx2")
  EDGE_FEATURE("fma")
  EDGE_FEATURE("f16c")
  EDGE_FEATURE("avx512f")
  EDGE_FEATURE("avx512bw")
  EDGE_FEATURE("avx512vl")
  EDGE_FEATURE("avx512dq")
  EDGE_FEATURE("avx512vnni")
  EDGE_FEATURE("avx512bf16")
  EDGE_FEATURE("avxvnni")
  EDGE_FEATURE("amx-tile")
  EDGE_FEATURE("amx-int8")
  EDGE_FEATURE("amx-bf16")
#undef EDGE_FEATURE
#endif
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) c.allowed_cpus.push_back(i);
  return c;
}

}  // namespace

bool CpuInfo::has(const std::string& feature) const {
  return std::find(features.begin(), features.end(), feature) != features.end();
}

std::string CpuInfo::features_string() const {
  std::string s;
  for (const auto& f : features) s += (s.empty() ? "" : " ") + f;
  return s;
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = detect();
  return info;
}

}  // namespace edge
