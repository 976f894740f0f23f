// Processes the grid starts and owns: spawned directly (fork + exec, no shell), pinned to
// the run's cores, their output captured, reaped, and killed on timeout. The grid signals
// only the pids it spawned, never a process group or a name.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace edge {

struct SpawnOptions {
  std::vector<int> cpus;    // affinity of the child (empty: inherited)
  double timeout_s = 600;   // SIGKILL to the child after this long
  int rss_interval_ms = 0;  // > 0: sample the child's process tree RSS over time
};

struct RssPoint {
  double t_s = 0;         // since spawn
  int64_t anon = 0;       // RssAnon summed over the tree, bytes
  int64_t anon_file = 0;  // RssAnon + RssFile
};

struct ProcessResult {
  int exit_code = -1;   // -1 when ended by a signal
  int term_signal = 0;  // the signal that ended it, 0 if it exited
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr, last 64 KiB
  double wall_s = 0;
  double cpu_user_s = 0, cpu_sys_s = 0;  // wait4: the child and the descendants it reaped
  std::vector<RssPoint> rss;
  int64_t peak_anon = 0;
  int64_t peak_anon_file = 0;  // RssAnon + RssFile: a mapped model file counts here
  bool ok() const { return exit_code == 0 && !timed_out; }
};

// Runs argv[0] (looked up on PATH when it has no '/') to completion. An error only when it
// could not be started; a failure of the program itself is in the result.
Expected<ProcessResult> run_owned(const std::vector<std::string>& argv, const SpawnOptions& o);

// A long-running child (a server under test): output discarded, stopped with SIGTERM then
// SIGKILL after a grace period, always reaped.
class OwnedProcess {
 public:
  static Expected<OwnedProcess> spawn(const std::vector<std::string>& argv,
                                      const std::vector<int>& cpus);
  OwnedProcess(OwnedProcess&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  OwnedProcess& operator=(OwnedProcess&&) = delete;
  OwnedProcess(const OwnedProcess&) = delete;
  ~OwnedProcess() { stop(5.0); }
  pid_t pid() const { return pid_; }
  bool alive();
  // Returns how it ended ("exited 0", "SIGTERM", "SIGKILL after 5 s").
  std::string stop(double grace_s);

 private:
  explicit OwnedProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
};

}  // namespace edge
