// ISA discipline: every kernel file is compiled with exactly the flags its runtime check
// guarantees, every dispatch decision picks only what a CPU class can run, and the variants
// this machine cannot run are named (skipped tests below, one per variant).
#include "kernels/isa.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <ostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "kernels/dense_isa.h"
#include "kernels/packed_api.h"

namespace edge {
namespace {

// "-m" flags of one compile command, except -march/-mtune (the baseline is checked apart).
std::set<std::string> isa_flags(const std::string& command, std::string* march) {
  std::set<std::string> out;
  std::istringstream in(command);
  for (std::string arg; in >> arg;) {
    if (arg.rfind("-march=", 0) == 0)
      *march = arg.substr(7);
    else if (arg.rfind("-m", 0) == 0 && arg.rfind("-mtune=", 0) != 0)
      out.insert(arg);
  }
  return out;
}

// The ISA level a file's name gives (src/kernels/x86_avx2/packed_avxvnni.cpp -> avxvnni).
const IsaLevel* level_of(const std::string& file) {
  const size_t dot = file.rfind(".cpp"), us = file.rfind('_');
  if (dot == std::string::npos || us == std::string::npos || us > dot) return nullptr;
  return isa_level_by_suffix(file.substr(us + 1, dot - us - 1));
}

TEST(IsaFlags, EveryKernelFileIsCompiledWithExactlyItsLevelsFlags) {
  std::ifstream in(std::string(EDGE_BUILD_DIR) + "/compile_commands.json");
  ASSERT_TRUE(in.good()) << "compile_commands.json missing in " << EDGE_BUILD_DIR;
  const nlohmann::json db = nlohmann::json::parse(in);
  std::set<std::string> levels_seen;
  int files = 0;
  for (const nlohmann::json& e : db) {
    const std::string file = e.at("file");
    if (file.find("/src/") == std::string::npos && file.find("/apps/") == std::string::npos)
      continue;
    ++files;
    std::string march;
    const std::set<std::string> flags = isa_flags(e.value("command", ""), &march);
    // A baseline above x86-64-v2 would put AVX into every file, portable ones included.
    EXPECT_TRUE(march.empty() || march == "x86-64" || march == "x86-64-v2")
        << file << ": -march=" << march;
    std::set<std::string> want;
    if (const IsaLevel* lvl = level_of(file)) {
      levels_seen.insert(lvl->suffix);
      for (const std::string& f : lvl->features) want.insert("-m" + f);
    }
    EXPECT_EQ(flags, want) << file << " is not compiled with exactly the flags of its ISA level";
  }
  EXPECT_GT(files, 50);
  // Each level that has kernel variants has at least one file built for it.
  for (const KernelVariant& v : kernel_variants())
    EXPECT_TRUE(levels_seen.count(isa_level(v.isa).suffix)) << v.family << " " << v.name;
}

CpuInfo cpu_with(std::vector<std::string> features) {
  CpuInfo c;
  c.features = std::move(features);
  return c;
}

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
       cpu_with(plus(skx, {"avx512vnni", "avx512bf16", "avxvnni"})),
       "avx512",
       {"avx2", "avx2_vnni", "avx512_vnni"}},
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
    if (dense != "ref") EXPECT_TRUE(isa_runnable(variant("dense", dense).isa, c.cpu));
    EXPECT_EQ(packed_variants_for(c.cpu), c.packed);
    for (const std::string& p : packed_variants_for(c.cpu))
      EXPECT_TRUE(isa_runnable(variant("packed", p).isa, c.cpu)) << p;
    const std::string sr = stream_read_variant_for(c.cpu);
    if (sr != "ref") EXPECT_TRUE(isa_runnable(variant("stream_read", sr).isa, c.cpu)) << sr;
  }
}

TEST(IsaDispatch, MissingFeaturesAreNamed) {
  const CpuInfo skx =
      cpu_with({"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq"});
  EXPECT_EQ(isa_missing_features(Isa::kAvx512Vnni, skx), "avx512vnni");
  EXPECT_EQ(isa_missing_features(Isa::kAvxVnni, skx), "avxvnni");
  EXPECT_EQ(isa_missing_features(Isa::kAvx512, skx), "");
  EXPECT_EQ(isa_missing_features(Isa::kAvx2, cpu_with({"avx2"})), "fma f16c");
}

TEST(IsaDispatch, MaxIsaCapHidesEverythingAboveTheClass) {
  const std::vector<std::string> all = {
      "sse4.2",   "avx",      "avx2",       "fma",        "f16c",    "avx512f", "avx512bw",
      "avx512vl", "avx512dq", "avx512vnni", "avx512bf16", "avxvnni", "amx-tile"};
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
  std::vector<std::string> f = all;
  EXPECT_FALSE(cap_cpu_features("avx3", &f));
  EXPECT_EQ(f, all);
}

TEST(IsaDispatch, DescriptionNamesTheChoicePerOpOnAnyCpu) {
  const std::string d = packed_kernels_description();
  for (const char* op : {"w4_a8", "w4_a16", "w8_a8", "w8_a16"})
    EXPECT_NE(d.find(op), std::string::npos) << op << " missing from:\n" << d;
  EXPECT_NE(d.find("not runnable here:"), std::string::npos) << d;
}

}  // namespace

// Readable test output: "packed avx2_vnni (avxvnni)" instead of the struct's bytes.
void PrintTo(const KernelVariant& v, std::ostream* os) {
  *os << v.family << " " << v.name << " (" << isa_level(v.isa).suffix << ")";
}

namespace {

// One test per SIMD variant: it passes where this CPU runs the variant (and then the
// variant is among those the kernel tests compare with the reference); elsewhere it is
// SKIPPED with the features the CPU lacks, so the test report names what was not exercised.
class KernelVariantTest : public ::testing::TestWithParam<KernelVariant> {};

TEST_P(KernelVariantTest, ExercisedOnThisCpu) {
  const KernelVariant& v = GetParam();
  const std::string missing = isa_missing_features(v.isa, cpu_info());
  if (!missing.empty())
    GTEST_SKIP() << v.family << " variant " << v.name << " not exercised: this CPU lacks "
                 << missing
                 << (cpu_info().capped_by.empty() ? "" : " (" + cpu_info().capped_by + ")");
  std::vector<std::string> compared;
  if (std::string(v.family) == "packed")
    for (const PackedKernels* k : available_packed_kernels()) compared.emplace_back(k->name);
  else if (std::string(v.family) == "dense")
    for (const KernelTable& k : simd_dense_kernels()) compared.emplace_back(k.name);
  else
    compared.emplace_back(v.name);  // stream_read: tested by the harness's bandwidth test
  EXPECT_NE(std::find(compared.begin(), compared.end(), v.name), compared.end())
      << v.family << " " << v.name << " runs here but is not in the tested list";
}

INSTANTIATE_TEST_SUITE_P(Isa, KernelVariantTest, ::testing::ValuesIn(kernel_variants()),
                         [](const ::testing::TestParamInfo<KernelVariant>& i) {
                           return std::string(i.param.family) + "_" + i.param.name;
                         });

}  // namespace
}  // namespace edge
