// aarch64 dispatch decisions (built on aarch64 only): every CPU class gets only the
// variants it can run, EDGE_MAX_ISA hides what is above a class, and on the CPU the tests
// run on (qemu-aarch64 -cpu cortex-a76 / max in CI) the ARM variants are the ones the
// dispatch report names, so they really ran in the suites that compare them with the
// reference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "kernels/cpu_with.h"
#include "kernels/api.h"
#include "kernels/isa.h"
#include "kernels/packed_api.h"

namespace edge {
namespace {

TEST(IsaDispatchArm, EachCpuClassGetsOnlyVariantsItRuns) {
  struct Class {
    const char* name;
    CpuInfo cpu;
    const char* dense;
    std::vector<std::string> packed;
  };
  const std::vector<Class> classes = {
      {"no NEON (EDGE_MAX_ISA=scalar)", cpu_with({}), "ref", {}},
      {"Cortex-A72 (Raspberry Pi 4)", cpu_with({"asimd", "fphp", "asimdhp"}), "neon", {"neon"}},
      {"Cortex-A76 (Raspberry Pi 5)",
       cpu_with({"asimd", "fphp", "asimdhp", "asimddp"}),
       "neon",
       {"neon", "neon_dotprod"}},
      {"Neoverse N2",
       cpu_with({"asimd", "fphp", "asimdhp", "asimddp", "sve", "i8mm", "bf16"}),
       "neon",
       {"neon", "neon_dotprod", "neon_i8mm"}},
  };
  for (const Class& c : classes) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(dense_variant_for(c.cpu), c.dense);
    EXPECT_EQ(packed_variants_for(c.cpu), c.packed);
    for (const std::string& p : packed_variants_for(c.cpu))
      EXPECT_TRUE(isa_runnable(find_kernel_variant("packed", p)->isa, c.cpu)) << p;
  }
  EXPECT_EQ(isa_missing_features(Isa::kDotprod, cpu_with({"asimd"})), "asimddp");
  EXPECT_EQ(isa_missing_features(Isa::kI8mm, cpu_with({"asimd", "asimddp"})), "i8mm");
}

TEST(IsaDispatchArm, MaxIsaCapHidesEverythingAboveTheClass) {
  const std::vector<std::string> all = {"asimd", "fphp", "asimdhp", "asimddp", "sve", "i8mm", "bf16"};
  auto capped = [&](const char* cap) {
    std::vector<std::string> f = all;
    EXPECT_TRUE(cap_cpu_features(cap, &f)) << cap;
    return cpu_with(f);
  };
  EXPECT_EQ(packed_variants_for(capped("neon")), (std::vector<std::string>{"neon"}));
  EXPECT_EQ(packed_variants_for(capped("dotprod")),
            (std::vector<std::string>{"neon", "neon_dotprod"}));
  EXPECT_FALSE(capped("dotprod").has("i8mm"));
  EXPECT_EQ(packed_variants_for(capped("i8mm")),
            (std::vector<std::string>{"neon", "neon_dotprod", "neon_i8mm"}));
  EXPECT_EQ(dense_variant_for(capped("scalar")), "ref");
  EXPECT_TRUE(capped("scalar").features.empty());
  std::vector<std::string> f = all;
  EXPECT_FALSE(cap_cpu_features("avx2", &f));
  EXPECT_EQ(f, all);
}

// The proof that the ARM variants ran: on a CPU that has them, the engine's tables (the
// ones dense_simd_test and packed_test hold to the reference) are named after them.
TEST(IsaDispatchArm, DispatchReportNamesTheArmVariantsThisCpuRuns) {
  const CpuInfo& cpu = cpu_info();
  if (!cpu.has("asimd")) GTEST_SKIP() << "NEON hidden (" << cpu.capped_by << ")";
  EXPECT_STREQ(select_kernels().name, "neon");
  const std::string report = packed_kernels_description();
  std::printf("%s", report.c_str());
  if (cpu.has("i8mm")) {
    // Both integer variants run here (the timing picks between them per op).
    EXPECT_NE(report.find("variants: ref, neon, neon_dotprod, neon_i8mm"), std::string::npos)
        << report;
    EXPECT_NE(report.find("w4_a8   -> neon_"), std::string::npos) << report;
  } else if (cpu.has("asimddp")) {
    EXPECT_NE(report.find("w4_a8   -> neon_dotprod"), std::string::npos) << report;
    EXPECT_NE(report.find("w8_a8   -> neon_dotprod"), std::string::npos) << report;
    EXPECT_NE(report.find("neon_i8mm (lacks i8mm)"), std::string::npos) << report;
  } else {
    EXPECT_NE(report.find("neon_dotprod (lacks asimddp)"), std::string::npos) << report;
  }
  // Every op runs an ARM variant, W6, Q4K, Q5K and Q6K too: without the dot product their
  // int8 paths are plain NEON's (widening multiplies); with it the k-quants' are SDOT's,
  // which the i8mm table keeps (so GGUF Q4_K, Q5_K and Q6_K keep their super-blocks:
  // q4k_g256, q5k_g256 and q6k_g256 cells, not w4a_g32 and w6_g32).
  if (!cpu.has("asimddp")) {
    EXPECT_NE(report.find("w6_a8   -> neon "), std::string::npos) << report;
    EXPECT_NE(report.find("q4k_a8  -> neon "), std::string::npos) << report;
    EXPECT_NE(report.find("q5k_a8  -> neon "), std::string::npos) << report;
    EXPECT_NE(report.find("q6k_a8  -> neon "), std::string::npos) << report;
  } else {
    EXPECT_NE(report.find("q4k_a8  -> neon_dotprod"), std::string::npos) << report;
    EXPECT_NE(report.find("q5k_a8  -> neon_dotprod"), std::string::npos) << report;
    EXPECT_NE(report.find("q6k_a8  -> neon_dotprod"), std::string::npos) << report;
  }
  EXPECT_TRUE(packed_kernels_run_q4k());
  EXPECT_TRUE(packed_kernels_run_q5k());
  EXPECT_TRUE(packed_kernels_run_q6k());
  EXPECT_EQ(report.find("-> ref"), std::string::npos) << report;
}

}  // namespace
}  // namespace edge
