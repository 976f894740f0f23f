// Memory as the kernel sees it (docs/measuring.md rule 4): RssAnon for what we allocated,
// RssFile for mapped files, RssShmem apart, from /proc/<pid>/status, summed over a whole
// process tree. No kernel counter keeps the peak of RssAnon, so RssSampler polls the tree
// from a background thread (<= 20 ms) and keeps the peaks itself. Also: time since the
// process was created (for ready_s) and mincore residency of a mapped range.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/process_rss.h"
#include "core/status.h"

namespace edge {

// Seconds since `pid` was created: starttime (field 22 of /proc/<pid>/stat, clock ticks
// since boot) against /proc/uptime. Resolution 1/CLK_TCK (10 ms). Negative on error.
double seconds_since_process_start(pid_t pid);
// Monotonic seconds since this process was created: the /proc figure read once at first
// use, then advanced with steady_clock (finer than /proc's 10 ms ticks).
double process_uptime_s();

struct PhaseMark {
  std::string name;
  double t_s = 0;  // seconds since process creation
  RssSample rss;   // of the sampled tree at the mark
};

// Samples a process tree every interval_ms on a background thread, keeping the peaks of
// RssAnon and of RssAnon+RssFile (each a sum over the tree at one instant).
class RssSampler {
 public:
  explicit RssSampler(pid_t root = 0 /* self */, int interval_ms = 10);
  ~RssSampler() { stop(); }
  RssSampler(const RssSampler&) = delete;
  RssSampler& operator=(const RssSampler&) = delete;

  void start();
  void stop();
  // Takes one sample now (also updates the peaks) and returns it.
  RssSample sample_now();
  // Records a phase mark (taking a sample).
  void mark(const std::string& name);
  // Starts a fresh peak window (e.g. "during load" then "during generation").
  void reset_peaks();

  int64_t peak_anon() const { return peak_anon_.load(); }
  int64_t peak_anon_file() const { return peak_anon_file_.load(); }
  int64_t peak_file() const { return peak_file_.load(); }
  int64_t samples() const { return samples_.load(); }
  int max_processes() const { return max_processes_.load(); }
  std::vector<PhaseMark> marks() const;
  nlohmann::json marks_json() const;

 private:
  void loop();
  pid_t root_;
  int interval_ms_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::atomic<int64_t> peak_anon_{0}, peak_anon_file_{0}, peak_file_{0}, samples_{0};
  std::atomic<int> max_processes_{0};
  mutable std::mutex mu_;
  std::vector<PhaseMark> marks_;
};

nlohmann::json rss_json(const RssSample& s);

}  // namespace edge
