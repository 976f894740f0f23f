// x86 dispatch decisions: every CPU class users own gets only the variants it can run, and
// EDGE_MAX_ISA hides everything above a class (built on x86 only).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/cpu_info.h"
#include "kernels/cpu_with.h"
#include "kernels/isa.h"

namespace edge {
namespace {

// Feature sets of the x86 classes users own (what __builtin_cpu_supports reports there).
struct CpuClass {
  const char* name;
  CpuInfo cpu;
  const char* dense;
  std::vector<std::string> packed;
};

std::vector<CpuClass> cpu_classes() {
  const std::vector<std::string> avx2 = {"sse4.2", "avx", "avx2", "fma", "f16c"};
  auto plus = [](std::vector<std::string> v, std::vector<std::string> more) {
    v.insert(v.end(), more.begin(), more.end());
    return v;
  };
  const auto skx = plus(avx2, {"avx512f", "avx512bw", "avx512vl", "avx512dq"});
  return {
      {"no AVX (Atom)", cpu_with({"sse4.2"}), "ref", {}},
      {"AVX without FMA (Sandy Bridge)", cpu_with({"sse4.2", "avx"}), "ref", {}},
      {"Haswell / Zen 3", cpu_with(avx2), "avx2", {"avx2"}},
      {"Alder Lake", cpu_with(plus(avx2, {"avxvnni"})), "avx2", {"avx2", "avx2_vnni"}},
      {"Skylake-X", cpu_with(skx), "avx512", {"avx2"}},
      {"Cascade Lake", cpu_with(plus(skx, {"avx512vnni"})), "avx512", {"avx2", "avx512_vnni"}},
      {"Zen 4",
       cpu_with(plus(skx, {"avx512vnni", "avx512bf16"})),
       "avx512",
       {"avx2", "avx512_vnni"}},
      {"Sapphire Rapids",
       cpu_with(
           plus(skx, {"avx512vnni", "avx512bf16", "avxvnni", "amx-tile", "amx-int8", "amx-bf16"})),
       "avx512",
       {"avx2", "avx2_vnni", "avx512_vnni", "avx512_amx"}},
      // The OS refused the tile data state (core/cpu_features.h hides the AMX features).
      {"Sapphire Rapids without the AMX permission",
       cpu_with(plus(skx, {"avx512vnni", "avx512bf16", "avxvnni"})),
       "avx512",
       {"avx2", "avx2_vnni", "avx512_vnni"}},
      // AMX tiles for int8 but not the AVX-512 VNNI table the variant extends: not run.
      {"AMX without AVX-512 VNNI (none known)",
       cpu_with(plus(skx, {"amx-tile", "amx-int8"})),
       "avx512",
       {"avx2"}},
  };
}

const KernelVariant& variant(const std::string& family, const std::string& name) {
  for (const KernelVariant& v : kernel_variants())
    if (family == v.family && name == v.name) return v;
  ADD_FAILURE() << "no variant " << family << "/" << name;
  return kernel_variants().front();
}

TEST(IsaDispatch, EachCpuClassGetsOnlyVariantsItRuns) {
  for (const CpuClass& c : cpu_classes()) {
    SCOPED_TRACE(c.name);
    const std::string dense = dense_variant_for(c.cpu);
    EXPECT_EQ(dense, c.dense);
    if (dense != "ref") {
      EXPECT_TRUE(isa_runnable(variant("dense", dense).isa, c.cpu));
    }
    EXPECT_EQ(packed_variants_for(c.cpu), c.packed);
    for (const std::string& p : packed_variants_for(c.cpu))
      EXPECT_TRUE(isa_runnable(variant("packed", p).isa, c.cpu)) << p;
    const std::string sr = stream_read_variant_for(c.cpu);
    if (sr != "ref") {
      EXPECT_TRUE(isa_runnable(variant("stream_read", sr).isa, c.cpu)) << sr;
    }
  }
}

TEST(IsaDispatch, MissingFeaturesAreNamed) {
  const CpuInfo skx =
      cpu_with({"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq"});
  EXPECT_EQ(isa_missing_features(Isa::kAvx512Vnni, skx), "avx512vnni");
  EXPECT_EQ(isa_missing_features(Isa::kAvxVnni, skx), "avxvnni");
  EXPECT_EQ(isa_missing_features(Isa::kAvx512, skx), "");
  EXPECT_EQ(isa_missing_features(Isa::kAvx2, cpu_with({"avx2"})), "fma f16c");
  std::vector<std::string> clx = skx.features;
  clx.push_back("avx512vnni");
  EXPECT_EQ(isa_missing_features(Isa::kAmx, cpu_with(clx)), "amx-tile amx-int8");
  clx.push_back("amx-tile");
  EXPECT_EQ(isa_missing_features(Isa::kAmx, cpu_with(clx)), "amx-int8");
}

// The AMX level's features and flags: AVX-512 VNNI's plus the two tile extensions.
TEST(IsaDispatch, AmxLevelExtendsAvx512Vnni) {
  std::vector<std::string> want = isa_level(Isa::kAvx512Vnni).features;
  want.push_back("amx-tile");
  want.push_back("amx-int8");
  EXPECT_EQ(isa_level(Isa::kAmx).features, want);
  EXPECT_EQ(std::string(isa_level(Isa::kAmx).suffix), "amx");
  const std::vector<std::string>& flags = isa_level(Isa::kAmx).flags;
  EXPECT_EQ(flags.size(), want.size());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-mamx-tile"), flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-mamx-int8"), flags.end());
}

// Linux hands out the AMX tile data state per process on request (arch_prctl): asked on
// behalf of a CPU reporting AMX, it is granted where this CPU has AMX, and refused elsewhere
// (no tile state, or a kernel before 5.16), which hides the AMX features with the reason.
TEST(IsaDispatch, AmxFeaturesNeedTheOsPermission) {
  if (!cpu_info().capped_by.empty())
    GTEST_SKIP() << "features capped (" << cpu_info().capped_by << "): the CPU's AMX is unknown";
  std::vector<std::string> f = {"avx2", "amx-tile", "amx-int8"};
  const std::string why = enable_os_features(&f);
  if (cpu_info().has("amx-tile") && cpu_info().has("amx-int8")) {
    EXPECT_EQ(why, "");
    EXPECT_EQ(f.size(), 3u);
  } else {
    EXPECT_EQ(f, std::vector<std::string>{"avx2"});
#if defined(__linux__)
    EXPECT_NE(why.find("amx-tile amx-int8 hidden: arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)"),
              std::string::npos)
        << why;
#endif
  }
  std::vector<std::string> no_amx = {"avx2", "avx512f"};
  EXPECT_EQ(enable_os_features(&no_amx), "");  // nothing to ask for
  EXPECT_EQ(no_amx.size(), 2u);
}

TEST(IsaDispatch, MaxIsaCapHidesEverythingAboveTheClass) {
  const std::vector<std::string> all = {"sse4.2",   "avx",        "avx2",       "fma",
                                        "f16c",     "avx512f",    "avx512bw",   "avx512vl",
                                        "avx512dq", "avx512vnni", "avx512bf16", "avxvnni",
                                        "amx-tile", "amx-int8",   "amx-bf16"};
  auto capped = [&](const char* cap) {
    std::vector<std::string> f = all;
    EXPECT_TRUE(cap_cpu_features(cap, &f)) << cap;
    return cpu_with(f);
  };
  EXPECT_EQ(packed_variants_for(capped("avx2")), (std::vector<std::string>{"avx2"}));
  EXPECT_EQ(dense_variant_for(capped("avx2")), "avx2");
  EXPECT_EQ(packed_variants_for(capped("avxvnni")),
            (std::vector<std::string>{"avx2", "avx2_vnni"}));
  EXPECT_EQ(packed_variants_for(capped("avx512")), (std::vector<std::string>{"avx2"}));
  EXPECT_EQ(dense_variant_for(capped("avx512")), "avx512");
  EXPECT_EQ(packed_variants_for(capped("avx512vnni")),
            (std::vector<std::string>{"avx2", "avx512_vnni"}));
  EXPECT_EQ(dense_variant_for(capped("scalar")), "ref");
  // Uncapped, the AMX variant is the widest; every class hides it.
  EXPECT_EQ(packed_variants_for(cpu_with(all)).back(), "avx512_amx");
  for (const char* cap : {"scalar", "avx2", "avxvnni", "avx512", "avx512vnni"})
    EXPECT_FALSE(isa_runnable(Isa::kAmx, capped(cap))) << cap;
  std::vector<std::string> f = all;
  EXPECT_FALSE(cap_cpu_features("avx3", &f));
  EXPECT_EQ(f, all);
}

}  // namespace
}  // namespace edge
