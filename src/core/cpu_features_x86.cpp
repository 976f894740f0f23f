// x86 feature detection: the compiler's cpuid builtins (they also check, through xgetbv,
// that the OS saves the AVX / AVX-512 register state). The only file outside the x86
// kernel folders that asks the CPU anything.
#include <cpuid.h>
#include <immintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/cpu_features.h"
#include "core/cpu_info.h"

namespace edge {

void detect_isa_features(std::vector<std::string>* features) {
  __builtin_cpu_init();
#define EDGE_FEATURE(name) \
  if (__builtin_cpu_supports(name)) features->emplace_back(name);
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
}

// amx-tile and amx-int8 come from __builtin_cpu_supports above: CPUID leaf 7 EDX bits 24
// and 25, and only where XCR0 has the tile state enabled (bits 17-18). Linux still keeps
// the tile data disabled per process (XFD) until the process asks for it; without the
// permission the first tile instruction is killed with SIGILL. Asked once here, for every
// thread of the process, before any kernel can run.
std::string enable_os_features(std::vector<std::string>* features) {
  const std::vector<std::string> amx = {"amx-tile", "amx-int8", "amx-bf16"};
  auto has = [&](const std::string& f) {
    return std::find(features->begin(), features->end(), f) != features->end();
  };
  if (std::none_of(amx.begin(), amx.end(), has)) return "";
  std::string why;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023;  // asm/prctl.h (Linux 5.16)
  constexpr long kXfeatureXtiledata = 18;     // the AMX tile data state component
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) return "";
  const int err = errno;
  why = std::string("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed: ") + std::strerror(err);
#else
  why = "no known way to ask this OS for the AMX tile data state";
#endif
  std::string names;
  for (const std::string& f : amx)
    if (has(f)) names += (names.empty() ? "" : " ") + f;
  hide_features(amx, features);
  return names + " hidden: " + why;
}

void cpu_cache_sizes(CacheSizes* sizes) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid(0, a, b, c, d);
  const bool amd = b == 0x68747541;  // "Auth"enticAMD
  const unsigned max_ext = __get_cpuid_max(0x80000000, nullptr);
  const unsigned leaf = amd ? 0x8000001D : 4;
  // Subleaf i of the deterministic leaf describes one cache: type in EAX[4:0] (0 ends the
  // list, 2 = instruction), level in EAX[7:5]; size = ways x partitions x line x sets,
  // each stored minus one.
  if ((amd ? max_ext : a) >= leaf) {
    for (unsigned i = 0; i < 16; ++i) {
      __cpuid_count(leaf, i, a, b, c, d);
      const unsigned type = a & 0x1F, level = (a >> 5) & 0x7;
      if (type == 0) break;
      if (type == 2) continue;
      const int64_t size = int64_t{((b >> 22) & 0x3FF) + 1} * (((b >> 12) & 0x3FF) + 1) *
                           ((b & 0xFFF) + 1) * (int64_t{c} + 1);
      if (level == 1) sizes->l1d = size;
      if (level == 2) sizes->l2 = size;
      if (level == 3) sizes->l3 = size;
    }
  }
  // Some hypervisors (Firecracker) zero that leaf but pass the legacy ones through: the L2
  // in KiB in 0x80000006 ECX[31:16] (AMD and Intel), the L1d in KiB in 0x80000005
  // ECX[31:24] (AMD). Their L3 field is left out: VMs report the host's, often garbled.
  if (sizes->l2 == 0 && max_ext >= 0x80000006) {
    __cpuid(0x80000006, a, b, c, d);
    sizes->l2 = int64_t{c >> 16} << 10;
    if (amd && max_ext >= 0x80000005) {
      __cpuid(0x80000005, a, b, c, d);
      if (sizes->l1d == 0) sizes->l1d = int64_t{c >> 24} << 10;
    }
  }
}

const char* isa_class_names() { return "scalar, avx2, avxvnni, avx512, avx512vnni"; }

void cpu_relax() { _mm_pause(); }

bool cap_cpu_features(const std::string& max_isa, std::vector<std::string>* features) {
  // Features each class lacks (of those detect_isa_features() reads); AMX is above every class.
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
  hide_features(hide, features);
  return true;
}

}  // namespace edge
