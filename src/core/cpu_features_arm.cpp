// aarch64 feature detection on Linux: the kernel's hwcaps (getauxval(AT_HWCAP/AT_HWCAP2)),
// which name only what both the CPU and the kernel support. Names follow the kernel's
// /proc/cpuinfo "Features" line: asimd (NEON, always there on aarch64), asimddp (SDOT/UDOT,
// Armv8.2 dot product), i8mm (SMMLA, Armv8.6), sve, fphp/asimdhp (FP16 arithmetic), bf16.
#include <sys/auxv.h>

#include <cstdint>

#include "core/cpu_features.h"
#include "core/cpu_info.h"

namespace edge {
namespace {

// Bit numbers of the Linux arm64 uapi (asm/hwcap.h), spelt out so an older libc header
// that lacks a name still builds.
constexpr uint64_t kHwcapFphp = 1ull << 9, kHwcapAsimdhp = 1ull << 10;
constexpr uint64_t kHwcapAsimd = 1ull << 1, kHwcapAsimddp = 1ull << 20;
constexpr uint64_t kHwcapSve = 1ull << 22;
constexpr uint64_t kHwcap2I8mm = 1ull << 13, kHwcap2Bf16 = 1ull << 14;

}  // namespace

void detect_isa_features(std::vector<std::string>* features) {
  const uint64_t hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  const struct {
    uint64_t word, bit;
    const char* name;
  } table[] = {{hw, kHwcapAsimd, "asimd"}, {hw, kHwcapFphp, "fphp"},
               {hw, kHwcapAsimdhp, "asimdhp"}, {hw, kHwcapAsimddp, "asimddp"},
               {hw, kHwcapSve, "sve"}, {hw2, kHwcap2I8mm, "i8mm"}, {hw2, kHwcap2Bf16, "bf16"}};
  for (const auto& f : table)
    if (f.word & f.bit) features->emplace_back(f.name);
}

// Nothing to ask for: the hwcaps above already name only what the kernel enabled.
std::string enable_os_features(std::vector<std::string>*) {
  return "";
}

void cpu_cache_sizes(CacheSizes*) {}  // sysfs is the source on aarch64

const char* isa_class_names() { return "scalar, neon, dotprod, i8mm"; }

void cpu_relax() { asm volatile("yield" ::: "memory"); }

// Classes: scalar (hides NEON too), neon (Cortex-A53/A72: no dot product), dotprod
// (Cortex-A76 / Raspberry Pi 5), i8mm (Armv8.6+: Neoverse N2/V2, Apple M2+, recent phones).
bool cap_cpu_features(const std::string& max_isa, std::vector<std::string>* features) {
  std::vector<std::string> hide;
  if (max_isa == "i8mm") {
  } else if (max_isa == "dotprod") {
    hide = {"i8mm", "sve", "bf16"};
  } else if (max_isa == "neon") {
    hide = {"i8mm", "sve", "bf16", "asimddp"};
  } else if (max_isa == "scalar") {
    hide = {"i8mm", "sve", "bf16", "asimddp", "asimd", "asimdhp", "fphp"};
  } else {
    return false;
  }
  hide_features(hide, features);
  return true;
}

}  // namespace edge
