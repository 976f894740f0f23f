// x86 feature detection: the compiler's cpuid builtins (they also check, through xgetbv,
// that the OS saves the AVX / AVX-512 register state). The only file outside the x86
// kernel folders that asks the CPU anything.
#include <immintrin.h>


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
