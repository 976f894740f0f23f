// parallel_ranges: every index covered once, ranges per thread, the first error kept.
#include "core/parallel_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace edge {
namespace {

TEST(ParallelRanges, CoversEveryIndexOnceWithOneRangePerThread) {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t n : {0, 1, 2, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::mutex mu;
      std::set<int> tids;
      Status st = parallel_ranges(threads, n, [&](int64_t b, int64_t e, int tid) -> Status {
        EXPECT_LT(b, e);  // empty ranges are not handed out
        {
          std::lock_guard<std::mutex> l(mu);
          EXPECT_TRUE(tids.insert(tid).second) << "thread " << tid << " got two ranges";
        }
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        return Status();
      });
      ASSERT_TRUE(st.ok()) << st.to_string();
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " index " << i;
      // A pool of min(threads, n) threads (the caller alone for threads <= 1 or n < 2), each
      // thread with its ThreadPool::split range when that is not empty.
      const int nth = threads <= 1 || n < 2 ? 1 : static_cast<int>(std::min<int64_t>(threads, n));
      size_t ranges = 0;
      for (int t = 0; t < nth; ++t) {
        const auto [b, e] = ThreadPool::split(n, t, nth);
        ranges += b < e ? 1 : 0;
      }
      EXPECT_EQ(tids.size(), ranges) << "threads " << threads << " n " << n;
    }
  }
}

TEST(ParallelRanges, OneFailingRangeIsReportedAndTheOthersRunToTheirEnd) {
  ThreadPool pool(4);
  constexpr int64_t kN = 400;
  std::vector<std::atomic<int>> hits(kN);
  Status st = parallel_ranges(&pool, kN, [&](int64_t b, int64_t e, int) -> Status {
    for (int64_t i = b; i < e; ++i) {
      if (i == 150) return Status::invalid_argument("index 150");
      hits[static_cast<size_t>(i)]++;
    }
    return Status();
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "index 150");
  // The failing range stopped at 150 (its own choice); every other range ran in full.
  const auto [b150, e150] = ThreadPool::split(kN, 1, 4);
  ASSERT_TRUE(b150 <= 150 && 150 < e150);  // 150 lies in thread 1's range
  for (int64_t i = 0; i < kN; ++i) {
    const bool skipped = i >= 150 && i < e150;
    EXPECT_EQ(hits[static_cast<size_t>(i)].load(), skipped ? 0 : 1) << "index " << i;
  }
}

TEST(ParallelRanges, ManyFailingRangesGiveOneOfTheirErrors) {
  ThreadPool pool(4);
  std::mutex mu;
  std::set<std::string> returned;
  Status st = parallel_ranges(&pool, 40, [&](int64_t b, int64_t, int) -> Status {
    Status e = Status::out_of_range("range at " + std::to_string(b));
    std::lock_guard<std::mutex> l(mu);
    returned.insert(e.message());
    return e;
  });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(returned.size(), 4u);
  EXPECT_EQ(returned.count(st.message()), 1u) << st.message();  // one error, whole
}

TEST(ParallelRanges, WithoutAPoolTheCallerRunsOneRange) {
  int calls = 0;
  Status st = parallel_ranges(nullptr, 10, [&](int64_t b, int64_t e, int tid) -> Status {
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 10);
    EXPECT_EQ(tid, 0);
    return Status::internal("stop");
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(st.message(), "stop");
}

}  // namespace
}  // namespace edge
