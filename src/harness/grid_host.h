// What the grid asks of the host before it measures (docs/measuring.md rule 9): per-core
// load on the cores a run will use, read from /proc/stat over a short window (a contended
// core makes every figure from it a figure about the other tenant), and an advisory host
// lock so two grids never measure at the same time.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace edge {

// Cores this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cores();

struct CoreLoad {
  int cpu = -1;
  double busy = 0;  // 1 - (idle + iowait) / total over the window, in [0, 1]
};

struct Preflight {
  std::vector<CoreLoad> cores;
  double window_s = 0;
  double threshold = 0;  // a core busier than this makes the run contended
  double max_busy = 0;
  bool contended = false;
  nlohmann::json to_json() const;
};

// Samples /proc/stat twice, window_s apart, and reports each of `cpus`. A cpu that
// /proc/stat does not list (offline) is an error: the run would not get it.
Expected<Preflight> preflight_cores(const std::vector<int>& cpus, double window_s,
                                    double threshold);

// flock(LOCK_EX | LOCK_NB) on a lock file; released when destroyed. Advisory: it keeps
// grids apart, not other tenants (that is the pre-flight's job).
class HostLock {
 public:
  // resource_exhausted when another holder has it (naming the file and, if it wrote it,
  // its pid).
  static Expected<HostLock> acquire(const std::string& path);
  HostLock(HostLock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  HostLock& operator=(HostLock&& o) noexcept;
  HostLock(const HostLock&) = delete;
  HostLock& operator=(const HostLock&) = delete;
  ~HostLock();
  const std::string& path() const { return path_; }

 private:
  HostLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

// /run/lock/edge-infer-grid.lock where /run/lock is writable, else /tmp/edge-infer-grid.lock.
std::string default_grid_lock_path();

}  // namespace edge
