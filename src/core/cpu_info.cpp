#include "core/cpu_info.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

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
  c.os_refused = enable_os_features(&c.features);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) c.allowed_cpus.push_back(i);
  c.physical_cores = count_physical_cores("/sys/devices/system/cpu", c.allowed_cpus);
  c.caches =
      read_cache_sizes("/sys/devices/system/cpu", c.allowed_cpus.empty() ? 0 : c.allowed_cpus[0]);
  if (c.caches.l1d == 0 && c.caches.l2 == 0 && c.caches.l3 == 0) {
    cpu_cache_sizes(&c.caches);  // no sysfs cache entries (some VMs): ask the CPU
    c.caches_from_cpuid = c.caches.l2 != 0;
  }
  return c;
}

// "32K" -> 32768; "32M", "1G", plain bytes; 0 when malformed.
int64_t parse_cache_size(const std::string& s) {
  size_t i = 0;
  int64_t n = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9' && n < (int64_t{1} << 40); ++i)
    n = n * 10 + (s[i] - '0');
  if (i == 0) return 0;
  const char unit = i < s.size() ? s[i] : '\0';
  if (unit == 'K' || unit == 'k') return n << 10;
  if (unit == 'M' || unit == 'm') return n << 20;
  if (unit == 'G' || unit == 'g') return n << 30;
  return unit == '\0' ? n : 0;
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

CacheSizes read_cache_sizes(const std::string& sysfs_cpu_dir, int cpu) {
  CacheSizes c;
  const std::string dir = sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/cache/index";
  auto field = [](const std::string& path) {
    std::ifstream in(path);
    std::string v;
    std::getline(in, v);
    return v;
  };
  // index0.. are numbered densely; a few spare indices cover odd layouts.
  for (int i = 0; i < 16; ++i) {
    const std::string idx = dir + std::to_string(i) + "/";
    const std::string level = field(idx + "level"), type = field(idx + "type");
    if (level.empty() || type == "Instruction") continue;
    const int64_t size = parse_cache_size(field(idx + "size"));
    if (level == "1") c.l1d = size;
    if (level == "2") c.l2 = size;
    if (level == "3") c.l3 = size;
  }
  return c;
}

std::string CacheSizes::to_string() const {
  auto one = [](const char* name, int64_t b) {
    if (b == 0) return std::string(name) + " ?";
    if (b % (1 << 20) == 0) return std::string(name) + " " + std::to_string(b >> 20) + " MiB";
    return std::string(name) + " " + std::to_string(b >> 10) + " KiB";
  };
  return one("L1d", l1d) + ", " + one("L2", l2) + ", " + one("L3", l3);
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
