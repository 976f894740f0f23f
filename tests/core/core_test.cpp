#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/half.h"
#include "core/mapped_file.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "core/work_segment.h"

namespace edge {
namespace {

Expected<int> parse_positive(int v) {
  if (v <= 0) return Status::invalid_argument("not positive");
  return v;
}

Status twice(int v, int* out) {
  ASSIGN_OR_RETURN(int x, parse_positive(v));
  *out = 2 * x;
  return {};
}

TEST(Status, ExpectedCarriesValueOrError) {
  int out = 0;
  EXPECT_TRUE(twice(3, &out).ok());
  EXPECT_EQ(out, 6);
  Status s = twice(-1, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.to_string(), "invalid argument: not positive");
  EXPECT_EQ(s.with_context("x").message(), "x: not positive");
}

TEST(Half, F16RoundTripsEveryHalfValue) {
  // Every finite half converts to float and back to the same bits.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00u) == 0x7c00u) continue;  // inf/nan
    uint16_t back = f32_to_f16(f16_to_f32(static_cast<uint16_t>(h)));
    ASSERT_EQ(back, h) << std::hex << h;
  }
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f32_to_f16(65520.f), 0x7c00);  // rounds to inf
}

TEST(Half, F16RoundsToNearestEven) {
  // 1 + 2^-11 is exactly halfway between 1 and the next half (1 + 2^-10): ties to even.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(Half, Bf16) {
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.5f)), 1.5f);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie -> even
  EXPECT_NEAR(bf16_to_f32(f32_to_bf16(3.14159f)), 3.14159f, 0.02f);
}

TEST(ThreadPool, RunsEveryThreadAndBarrierOrdersPhases) {
  ThreadPool pool(4);
  std::vector<int> stage(4, 0);
  std::atomic<int> errors{0};
  for (int iter = 0; iter < 200; ++iter) {
    pool.run([&](int tid, int nth) {
      stage[tid] = iter * 2 + 1;
      pool.barrier();
      // After the barrier every thread must see every other thread's first write.
      for (int t = 0; t < nth; ++t)
        if (stage[t] != iter * 2 + 1) errors++;
      pool.barrier();
      stage[tid] = iter * 2 + 2;
    });
  }
  EXPECT_EQ(errors.load(), 0);
  for (int v : stage) EXPECT_EQ(v, 400);
}

// A shared pool lets callers on several threads take turns: their regions never overlap
// (at most one region's threads inside at once) and every region runs on every thread.
TEST(ThreadPool, SharedCallersTakeTurnsRegionByRegion) {
  ThreadPool pool(3, ThreadPool::Callers::kShared);
  std::atomic<int> inside{0}, overlaps{0};
  std::atomic<int64_t> calls{0};
  auto caller = [&] {
    for (int r = 0; r < 300; ++r)
      pool.run([&](int, int nth) {
        EXPECT_EQ(nth, 3);
        if (inside.fetch_add(1) >= 3) overlaps.fetch_add(1);
        calls.fetch_add(1);
        pool.barrier();  // all three of this region are inside together
        inside.fetch_sub(1);
      });
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(calls.load(), 2 * 300 * 3);
}

TEST(ThreadPool, SplitCoversRangeExactlyOnce) {
  for (int n : {0, 1, 7, 100}) {
    int64_t covered = 0;
    for (int t = 0; t < 3; ++t) {
      auto [b, e] = ThreadPool::split(n, t, 3);
      EXPECT_LE(b, e);
      covered += e - b;
    }
    EXPECT_EQ(covered, n);
  }
}

TEST(WorkSegment, OwnerAndThiefClaimsTileTheRange) {
  WorkSegment seg;
  seg.reset(3, 20);
  std::vector<int> hits(20, 0);
  int64_t u0 = 0, u1 = 0;
  for (int i = 0;; ++i) {
    const bool thief = i % 2 == 1;
    if (!seg.take(thief ? 5 : 4, thief, &u0, &u1)) break;
    ASSERT_LT(u0, u1);
    if (thief) EXPECT_LE(u1 - u0, 5);
    for (int64_t u = u0; u < u1; ++u) hits[static_cast<size_t>(u)]++;
  }
  for (int u = 0; u < 20; ++u)
    EXPECT_EQ(hits[static_cast<size_t>(u)], u >= 3 ? 1 : 0) << "unit " << u;
  EXPECT_FALSE(seg.take(1, false, &u0, &u1));
}

// With align 2, claims start and end on even units (the segment's odd end excepted), even
// for odd chunks, and still tile the range.
TEST(WorkSegment, AlignedClaimsHoldWholePairs) {
  WorkSegment seg;
  seg.reset(4, 61);
  std::vector<int> hits(61, 0);
  int64_t u0 = 0, u1 = 0;
  for (int i = 0;; ++i) {
    const bool thief = i % 3 == 2;
    if (!seg.take(thief ? 5 : 3, thief, &u0, &u1, 2)) break;
    ASSERT_LT(u0, u1);
    EXPECT_EQ(u0 % 2, 0) << u0;
    if (u1 != 61) EXPECT_EQ(u1 % 2, 0) << u1;
    for (int64_t u = u0; u < u1; ++u) hits[static_cast<size_t>(u)]++;
  }
  for (int u = 0; u < 61; ++u)
    EXPECT_EQ(hits[static_cast<size_t>(u)], u >= 4 ? 1 : 0) << "unit " << u;
}

// Four threads own four segments; thread 0 starts late, so the others steal its tail. Every
// unit must be claimed exactly once.
TEST(WorkSegment, ConcurrentStealingClaimsEveryUnitOnce) {
  constexpr int kThreads = 4, kUnits = 4000;
  ThreadPool pool(kThreads);
  std::vector<WorkSegment> segs(kThreads);
  std::vector<std::atomic<int>> hits(kUnits);
  std::atomic<int> stolen_from_0{0};
  for (int iter = 0; iter < 20; ++iter) {
    for (auto& h : hits) h.store(0);
    for (int t = 0; t < kThreads; ++t)
      segs[t].reset(kUnits * t / kThreads, kUnits * (t + 1) / kThreads);
    pool.run([&](int tid, int nth) {
      if (tid == 0) std::this_thread::sleep_for(std::chrono::microseconds(500));
      int64_t u0 = 0, u1 = 0;
      while (segs[tid].take(3, false, &u0, &u1))
        for (int64_t u = u0; u < u1; ++u) hits[static_cast<size_t>(u)]++;
      for (int v = 1; v < nth; ++v)
        while (segs[(tid + v) % nth].take(2, true, &u0, &u1))
          for (int64_t u = u0; u < u1; ++u) {
            hits[static_cast<size_t>(u)]++;
            if (u < kUnits / kThreads) stolen_from_0++;
          }
    });
    for (int u = 0; u < kUnits; ++u)
      ASSERT_EQ(hits[static_cast<size_t>(u)].load(), 1) << "unit " << u;
  }
  EXPECT_GT(stolen_from_0.load(), 0);  // the late thread's segment was shared out
}

TEST(MappedFile, MapsAndRejectsMissing) {
  std::string path = testing::TempDir() + "/edge_mapped_file_test.bin";
  ASSERT_TRUE(write_file(path, "hello", 5).ok());
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f->data()), 5), "hello");
  EXPECT_TRUE(f->contains(0, 5));
  EXPECT_FALSE(f->contains(1, 5));
  EXPECT_FALSE(f->contains(UINT64_MAX, 2));
  auto missing = MappedFile::open(path + ".nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace edge
