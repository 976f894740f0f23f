// The default thread count counts cores, not hardware threads: count_physical_cores over a
// fake sysfs tree with SMT siblings, without SMT, and with a CPU whose topology is missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

TEST(CpuTopologyHost, DefaultThreadsIsTheCoresOrTheAllowedCpus) {
  const CpuInfo& c = cpu_info();
  const int n = ThreadPool::default_threads();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, static_cast<int>(c.allowed_cpus.size()));
  if (c.physical_cores > 0) EXPECT_EQ(n, c.physical_cores);
}

}  // namespace
}  // namespace edge
