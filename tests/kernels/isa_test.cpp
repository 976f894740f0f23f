// ISA discipline: every kernel file is compiled with exactly the flags its runtime check
// guarantees and the variants this machine cannot run are named (skipped tests below, one
// per variant). What each CPU class of an architecture gets: isa_x86_test.cpp, isa_arm_test.cpp.
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

// The portable baselines a whole build may use (the presets' CMAKE_CXX_FLAGS): anything
// above them would put SIMD instructions into every file, portable ones included.
bool is_baseline_march(const std::string& march) {
  return march == "x86-64" || march == "x86-64-v2" || march == "armv8-a";
}

// "-m" flags of one compile command except -mtune and a baseline -march (returned apart).
std::set<std::string> isa_flags(const std::string& command, std::string* march) {
  std::set<std::string> out;
  std::istringstream in(command);
  for (std::string arg; in >> arg;) {
    if (arg.rfind("-march=", 0) == 0 && is_baseline_march(arg.substr(7)))
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
    std::set<std::string> want;
    if (const IsaLevel* lvl = level_of(file)) {
      levels_seen.insert(lvl->suffix);
      want.insert(lvl->flags.begin(), lvl->flags.end());
    }
    EXPECT_EQ(flags, want) << file << " is not compiled with exactly the flags of its ISA level";
  }
  EXPECT_GT(files, 50);
  // Each level that has kernel variants has at least one file built for it.
  for (const KernelVariant& v : kernel_variants())
    EXPECT_TRUE(levels_seen.count(isa_level(v.isa).suffix)) << v.family << " " << v.name;
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
                 << (cpu_info().capped_by.empty() ? "" : " (" + cpu_info().capped_by + ")")
                 << (cpu_info().os_refused.empty() ? "" : " [" + cpu_info().os_refused + "]");
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
