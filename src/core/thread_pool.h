// A persistent thread pool: threads start once and are reused for every parallel region.
// run(fn) calls fn(thread_index, n_threads) on every thread (the caller is thread 0) and
// returns when all have finished. Inside fn, barrier() synchronises all threads, so a
// forward pass can run several ops in one region without a fork/join per op.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace edge {

class ThreadPool {
 public:
  // kOne: one caller at a time (a second one concurrently is a programming error, caught).
  // kShared: callers from several threads take turns, one region each: stages that run
  // side by side on a small machine (a talker and its decoder) share the cores instead of
  // oversubscribing them with a spinning pool each. Re-entering from inside a region is
  // still an error.
  enum class Callers { kOne, kShared };
  explicit ThreadPool(int n_threads, Callers callers = Callers::kOne);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  void run(const std::function<void(int, int)>& fn);
  // Only valid inside run(): every thread must call it the same number of times.
  void barrier();

  // Splits [0, n) into near-equal contiguous chunks; returns this thread's range.
  static std::pair<int64_t, int64_t> split(int64_t n, int tid, int nth) {
    int64_t chunk = (n + nth - 1) / nth;
    int64_t b = std::min<int64_t>(n, chunk * tid);
    return {b, std::min<int64_t>(n, b + chunk)};
  }

  // Default thread count: physical parallelism of this process (affinity mask).
  static int default_threads();

 private:
  static constexpr size_t kLine = 64;
  void worker_loop(int tid);

  int n_threads_;
  std::vector<std::thread> workers_;
  // Each group of atomics sits on its own cache line: workers spin reading generation_
  // while they finish by writing pending_, and a write to a line another core is polling
  // costs a transfer per poll (false sharing).
  //
  // A region starts when generation_ changes. Workers spin on it briefly (a decode step
  // runs hundreds of regions back to back, and a futex wake per region costs more than
  // the region), then sleep on the condition variable.
  alignas(kLine) std::atomic<const std::function<void(int, int)>*> task_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  alignas(kLine) std::atomic<int> pending_{0};
  alignas(kLine) std::atomic<int> sleepers_{0};
  std::atomic<bool> in_run_{false};  // a region is running (run() is not reentrant)
  const bool shared_ = false;
  std::mutex turn_mu_;                      // kShared: held by the caller whose region runs
  std::atomic<std::thread::id> turn_owner_{};
  std::mutex mu_;
  std::condition_variable cv_start_;
  // Barrier state: count of arrivals and a phase flip (sense-reversing barrier).
  alignas(kLine) std::atomic<int> barrier_count_{0};
  alignas(kLine) std::atomic<uint32_t> barrier_phase_{0};
};

}  // namespace edge
