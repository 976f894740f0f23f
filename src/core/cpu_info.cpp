#include "core/cpu_info.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "core/log.h"

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
  if (const char* cap = std::getenv("EDGE_MAX_ISA")) {
    if (cap_cpu_features(cap, &c.features))
      c.capped_by = std::string("EDGE_MAX_ISA=") + cap;
    else
      log_warn("EDGE_MAX_ISA={} is not one of scalar, avx2, avxvnni, avx512, avx512vnni; ignored",
               cap);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) c.allowed_cpus.push_back(i);
  return c;
}

}  // namespace

bool cap_cpu_features(const std::string& max_isa, std::vector<std::string>* features) {
  // Features each class lacks (of those detect() reads); AMX is above every class.
  const std::vector<std::string> above_avx512vnni = {"avx512bf16", "avxvnni", "amx-tile",
                                                     "amx-int8", "amx-bf16"};
  std::vector<std::string> hide;
  if (max_isa == "avx512vnni") {
    hide = above_avx512vnni;
  } else if (max_isa == "avx512") {
    hide = above_avx512vnni;
    hide.push_back("avx512vnni");
  } else if (max_isa == "avxvnni" || max_isa == "avx2" || max_isa == "scalar") {
    hide = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vnni", "avx512bf16",
            "amx-tile", "amx-int8", "amx-bf16"};
    if (max_isa != "avxvnni") hide.push_back("avxvnni");
    if (max_isa == "scalar")
      for (const char* f : {"avx", "avx2", "fma", "f16c"}) hide.push_back(f);
  } else {
    return false;
  }
  std::erase_if(*features, [&](const std::string& f) {
    return std::find(hide.begin(), hide.end(), f) != hide.end();
  });
  return true;
}

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
