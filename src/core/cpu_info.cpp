#include "core/cpu_info.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include "core/cpu_features.h"
#include "core/log.h"

namespace edge {
namespace {

// x86 names the CPU ("model name"); aarch64 Linux gives only the implementer and part
// numbers (0x41 / 0xd0b = Arm Cortex-A76), reported as such.
std::string read_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, implementer, part;
  auto value = [&] { return line.substr(line.find(':') + 2); };
  while (std::getline(in, line)) {
    if (line.find(':') == std::string::npos || line.find(':') + 2 > line.size()) continue;
    if (line.rfind("model name", 0) == 0) return value();
    if (line.rfind("CPU implementer", 0) == 0 && implementer.empty()) implementer = value();
    if (line.rfind("CPU part", 0) == 0 && part.empty()) part = value();
  }
  if (!part.empty()) return "CPU implementer " + implementer + " part " + part;
  return "unknown";
}

CpuInfo detect() {
  CpuInfo c;
  c.model_name = read_model_name();
  detect_isa_features(&c.features);
  if (const char* cap = std::getenv("EDGE_MAX_ISA")) {
    if (cap_cpu_features(cap, &c.features))
      c.capped_by = std::string("EDGE_MAX_ISA=") + cap;
    else
      log_warn("EDGE_MAX_ISA={} is not one of {}; ignored", cap, isa_class_names());
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) c.allowed_cpus.push_back(i);
  c.physical_cores = count_physical_cores("/sys/devices/system/cpu", c.allowed_cpus);
  return c;
}

}  // namespace

int count_physical_cores(const std::string& sysfs_cpu_dir, const std::vector<int>& cpus) {
  std::set<std::string> cores;
  for (int cpu : cpus) {
    const std::string topo = sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/topology/";
    std::string siblings;
    for (const char* name : {"thread_siblings_list", "core_cpus_list"}) {
      std::ifstream in(topo + name);
      if (in && std::getline(in, siblings) && !siblings.empty()) break;
      siblings.clear();
    }
    if (siblings.empty()) return 0;
    cores.insert(siblings);
  }
  return static_cast<int>(cores.size());
}

void hide_features(const std::vector<std::string>& hide, std::vector<std::string>* features) {
  std::erase_if(*features, [&](const std::string& f) {
    return std::find(hide.begin(), hide.end(), f) != hide.end();
  });
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
