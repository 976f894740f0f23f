// parallel_ranges: ThreadPool::split ranges, one per thread, and the first error kept.
#include "core/parallel_ranges.h"

#include <algorithm>
#include <memory>
#include <mutex>

namespace edge {

Status parallel_ranges(ThreadPool* pool, int64_t n, const RangeTask& task) {
  std::mutex mu;
  Status first;
  auto work = [&](int tid, int nth) {
    const auto [begin, end] = ThreadPool::split(n, tid, nth);
    if (begin >= end) return;
    Status st = task(begin, end, tid);
    if (st.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (first.ok()) first = std::move(st);
  };
  if (pool != nullptr && n > 1) {
    pool->run(work);
  } else {
    work(0, 1);
  }
  return first;
}

Status parallel_ranges(int threads, int64_t n, const RangeTask& task) {
  std::unique_ptr<ThreadPool> pool;
  if (threads > 1 && n > 1)
    pool = std::make_unique<ThreadPool>(static_cast<int>(std::min<int64_t>(threads, n)));
  return parallel_ranges(pool.get(), n, task);
}

}  // namespace edge
