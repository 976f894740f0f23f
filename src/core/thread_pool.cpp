#include "core/thread_pool.h"

#include "core/check.h"

#include <sched.h>

#include "core/cpu_features.h"
#include "core/cpu_info.h"

namespace edge {
namespace {
// A few microseconds of pause-spinning, then yielding spins (so an oversubscribed machine
// still makes progress), then a worker sleeps.
constexpr int kSpinIterations = 4000;
constexpr int kYieldIterations = 2000;
}  // namespace

ThreadPool::ThreadPool(int n_threads, Callers callers)
    : n_threads_(n_threads < 1 ? 1 : n_threads), shared_(callers == Callers::kShared) {
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_start_.notify_all();
  for (auto& w : workers_) w.join();
}

// One thread per core this process may run on (SMT siblings once), else per allowed CPU.
int ThreadPool::default_threads() {
  if (cpu_info().physical_cores > 0) return cpu_info().physical_cores;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned h = std::thread::hardware_concurrency();
  return h ? static_cast<int>(h) : 1;
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  // One region at a time: a second caller would overwrite task_ and pending_ under the
  // first one's workers. A shared pool makes callers take turns; otherwise two engines over
  // one model get separate pools (runtime/engine.cpp), and anything else that gets here
  // concurrently is a programming error, caught, not raced.
  std::unique_lock<std::mutex> turn;
  if (shared_) {
    CHECK_MSG(turn_owner_.load(std::memory_order_relaxed) != std::this_thread::get_id(),
              "ThreadPool::run re-entered from inside a region");
    turn = std::unique_lock<std::mutex>(turn_mu_);
    turn_owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  struct ReleaseTurn {
    const bool shared;
    std::atomic<std::thread::id>& owner;
    ~ReleaseTurn() {
      if (shared) owner.store(std::thread::id(), std::memory_order_relaxed);
    }
  } release_turn{shared_, turn_owner_};
  CHECK_MSG(!in_run_.exchange(true, std::memory_order_acquire),
            "ThreadPool::run entered from two threads at once (one pool per concurrent user)");
  struct Leave {
    std::atomic<bool>& flag;
    ~Leave() { flag.store(false, std::memory_order_release); }
  } leave{in_run_};
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  task_.store(&fn, std::memory_order_relaxed);
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  // No mutex on the hot path: the seq_cst increment of generation_ and load of sleepers_
  // pair with a worker's seq_cst increment of sleepers_ and re-check of generation_ (both
  // under mu_), so either we see the sleeper and notify under mu_, or it sees the new
  // generation before it waits; no wake-up is lost.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lk(mu_);
    cv_start_.notify_all();
  }
  fn(0, n_threads_);
  int spins = 0;
  while (pending_.load(std::memory_order_acquire) != 0) {
    if (++spins < kSpinIterations) cpu_relax();
    else std::this_thread::yield();
  }
}

void ThreadPool::worker_loop(int tid) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    uint64_t gen;
    while ((gen = generation_.load(std::memory_order_acquire)) == seen &&
           spins < kSpinIterations + kYieldIterations) {
      if (spins++ < kSpinIterations) cpu_relax();
      else std::this_thread::yield();
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      cv_start_.wait(lk, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      gen = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = gen;
    (*task_.load(std::memory_order_acquire))(tid, n_threads_);
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::barrier() {
  if (n_threads_ == 1) return;
  uint32_t phase = barrier_phase_.load(std::memory_order_acquire);
  if (barrier_count_.fetch_add(1, std::memory_order_acq_rel) == n_threads_ - 1) {
    barrier_count_.store(0, std::memory_order_relaxed);
    barrier_phase_.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  int spins = 0;
  while (barrier_phase_.load(std::memory_order_acquire) == phase) {
    if (++spins < kSpinIterations) cpu_relax();
    else std::this_thread::yield();
  }
}

}  // namespace edge
