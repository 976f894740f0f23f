// The default thread count counts cores, not hardware threads: count_physical_cores over a
// fake sysfs tree with SMT siblings, without SMT, and with a CPU whose topology is missing.
// Cache sizes (read_cache_sizes) from fake cache/index* entries.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/cpu_info.h"
#include "core/thread_pool.h"

namespace edge {
namespace {

namespace fs = std::filesystem;

class CpuTopology : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("edge_topology_" + std::to_string(::getpid()));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void cpu(int n, const std::string& siblings, const char* file = "thread_siblings_list") {
    const fs::path dir = root_ / ("cpu" + std::to_string(n)) / "topology";
    fs::create_directories(dir);
    std::ofstream(dir / file) << siblings << "\n";
  }
  int count(const std::vector<int>& cpus) { return count_physical_cores(root_.string(), cpus); }
  void cache(int n, int index, const std::string& level, const std::string& type,
             const std::string& size) {
    const fs::path dir =
        root_ / ("cpu" + std::to_string(n)) / "cache" / ("index" + std::to_string(index));
    fs::create_directories(dir);
    std::ofstream(dir / "level") << level << "\n";
    std::ofstream(dir / "type") << type << "\n";
    std::ofstream(dir / "size") << size << "\n";
  }
  fs::path root_;
};

TEST_F(CpuTopology, SmtSiblingsCountOnce) {
  // 4 cores x 2 threads, Intel-style numbering: cpu i and i+4 share a core.
  for (int i = 0; i < 4; ++i) {
    const std::string s = std::to_string(i) + "," + std::to_string(i + 4);
    cpu(i, s);
    cpu(i + 4, s);
  }
  EXPECT_EQ(count({0, 1, 2, 3, 4, 5, 6, 7}), 4);
  EXPECT_EQ(count({0, 4}), 1);      // both threads of one core
  EXPECT_EQ(count({0, 1, 5}), 2);   // an affinity mask over part of the machine
}

TEST_F(CpuTopology, WithoutSmtEveryCpuIsACore) {
  cpu(0, "0");
  cpu(1, "1", "core_cpus_list");  // newer kernels' name
  EXPECT_EQ(count({0, 1}), 2);
}

TEST_F(CpuTopology, AnUnreadableTopologyIsUnknown) {
  cpu(0, "0");
  EXPECT_EQ(count({0, 1}), 0);
}

TEST_F(CpuTopology, CacheSizesFromSysfs) {
  // A Zen-like CPU: split L1, private L2, shared L3 in MiB units.
  cache(0, 0, "1", "Data", "32K");
  cache(0, 1, "1", "Instruction", "64K");
  cache(0, 2, "2", "Unified", "512K");
  cache(0, 3, "3", "Unified", "32M");
  const CacheSizes c = read_cache_sizes(root_.string(), 0);
  EXPECT_EQ(c.l1d, 32 << 10);  // the instruction cache is not the data cache
  EXPECT_EQ(c.l2, 512 << 10);
  EXPECT_EQ(c.l3, int64_t{32} << 20);
  EXPECT_EQ(c.to_string(), "L1d 32 KiB, L2 512 KiB, L3 32 MiB");
}

TEST_F(CpuTopology, MissingOrMalformedCachesAreUnknown) {
  // A Cortex-A76-like board without an L3 entry and with an unreadable L2 size.
  cache(1, 0, "1", "Data", "64K");
  cache(1, 1, "2", "Unified", "lots");
  const CacheSizes c = read_cache_sizes(root_.string(), 1);
  EXPECT_EQ(c.l1d, 64 << 10);
  EXPECT_EQ(c.l2, 0);
  EXPECT_EQ(c.l3, 0);
  EXPECT_EQ(c.to_string(), "L1d 64 KiB, L2 ?, L3 ?");
  EXPECT_EQ(read_cache_sizes(root_.string(), 7).l1d, 0);  // no such CPU
}

// The CPU's own cache description (the fallback for VMs without sysfs cache entries): on
// x86 every cache it names has a plausible size and the levels grow; on aarch64 it says
// nothing. (Not compared with sysfs: on a hybrid CPU the two may describe different cores.)
TEST(CpuTopologyHost, CacheSizesFromTheCpuArePlausible) {
  CacheSizes c;
  cpu_cache_sizes(&c);
#if defined(__x86_64__)
  if (c.l2 == 0) GTEST_SKIP() << "this CPU (or its hypervisor) describes no L2 through cpuid";
  EXPECT_GE(c.l2, 64 << 10);
  EXPECT_LE(c.l2, 64 << 20);
  if (c.l1d > 0) EXPECT_LT(c.l1d, c.l2);  // Intel's legacy leaves have no L1d
  if (c.l3 > 0) EXPECT_GE(c.l3, c.l2);
#else
  EXPECT_EQ(c.l1d, 0);
  EXPECT_EQ(c.l2, 0);
#endif
}

TEST(CpuTopologyHost, DefaultThreadsIsTheCoresOrTheAllowedCpus) {
  const CpuInfo& c = cpu_info();
  const int n = ThreadPool::default_threads();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, static_cast<int>(c.allowed_cpus.size()));
  if (c.physical_cores > 0) EXPECT_EQ(n, c.physical_cores);
}

}  // namespace
}  // namespace edge
