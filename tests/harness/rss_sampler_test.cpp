#include "harness/rss_sampler.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "core/mapped_file.h"

namespace edge {
namespace {

constexpr int64_t kMiB = 1 << 20;

// A child that touches `bytes` of anonymous memory, reports through a pipe, then waits.
pid_t spawn_hungry_child(int64_t bytes) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) std::memset(p, 1, bytes);
    char c = 'x';
    (void)!write(fds[1], &c, 1);
    pause();
    _exit(0);
  }
  close(fds[1]);
  char c = 0;
  (void)!read(fds[0], &c, 1);
  close(fds[0]);
  return pid;
}

TEST(RssSampler, ReadsOwnStatus) {
  auto s = read_rss(getpid());
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->anon, 0);
  EXPECT_GT(s->file, 0);  // the test binary's text pages
  EXPECT_FALSE(read_rss(-5).ok());
}

TEST(RssSampler, SeesChildProcessMemory) {
  const RssSample before = read_rss_tree(getpid());
  const pid_t child = spawn_hungry_child(64 * kMiB);
  ASSERT_GT(child, 0);
  RssSampler sampler(getpid(), 5);
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  const RssSample during = read_rss_tree(getpid());
  sampler.stop();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  const auto tree = process_tree(getpid());
  EXPECT_EQ(tree.size(), 1u);
  EXPECT_EQ(during.processes, 2);
  EXPECT_GE(during.anon - before.anon, 60 * kMiB);
  EXPECT_GE(sampler.peak_anon(), before.anon + 60 * kMiB);
  EXPECT_GE(sampler.peak_anon_file(), sampler.peak_anon());
  EXPECT_GE(sampler.samples(), 3);
  EXPECT_EQ(sampler.max_processes(), 2);
}

TEST(RssSampler, PeakCatchesShortLivedAllocation) {
  RssSampler sampler(getpid(), 5);
  sampler.start();
  const int64_t base = read_rss(getpid())->anon;
  {
    const size_t n = 48 * kMiB;
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    std::memset(p, 2, n);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    munmap(p, n);
  }
  sampler.mark("after");
  sampler.stop();
  EXPECT_GE(sampler.peak_anon(), base + 44 * kMiB);
  const auto marks = sampler.marks();
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_LT(marks[0].rss.anon, base + 24 * kMiB);  // freed memory left RssAnon
  EXPECT_EQ(sampler.marks_json()[0]["name"], "after");
}

TEST(RssSampler, ProcessStartTime) {
  const double t = seconds_since_process_start(getpid());
  EXPECT_GE(t, 0.0);
  EXPECT_LT(t, 3600.0);
  const double a = process_uptime_s();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(process_uptime_s() - a, 0.019);
  EXPECT_LT(seconds_since_process_start(-1), 0);
}

TEST(RssSampler, MincoreResidencyOfMappedFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "edge_mincore_test.bin").string();
  std::vector<uint8_t> bytes(8 * kMiB, 7);
  ASSERT_TRUE(write_file(path, bytes.data(), bytes.size()).ok());
  auto m = MappedFile::open(path);
  ASSERT_TRUE(m.ok());
  // Drop whatever our process has of it, then touch the first quarter.
  madvise(const_cast<uint8_t*>(m->data()), m->size(), MADV_DONTNEED);
  volatile uint64_t sum = 0;
  for (size_t i = 0; i < m->size() / 4; i += 4096) sum += m->data()[i];
  auto r = mincore_residency(m->data(), m->size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->total, static_cast<int64_t>(m->size()));
  // mincore reports page-cache residency: at least the touched quarter.
  EXPECT_GE(r->resident, static_cast<int64_t>(m->size() / 4));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace edge
