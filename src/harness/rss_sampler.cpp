#include "harness/rss_sampler.h"

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace edge {
namespace {

void raise(std::atomic<int64_t>& peak, int64_t v) {
  int64_t seen = peak.load();
  while (v > seen && !peak.compare_exchange_weak(seen, v)) {
  }
}

}  // namespace

double seconds_since_process_start(pid_t pid) {
  const long long start_ticks = process_start_ticks(pid);  // core/process_rss.h
  if (start_ticks < 0) return -1;
  std::ifstream up("/proc/uptime");
  double uptime = 0;
  if (!(up >> uptime)) return -1;
  return uptime - static_cast<double>(start_ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double process_uptime_s() {
  using Clock = std::chrono::steady_clock;
  static const double at_first_use = seconds_since_process_start(getpid());
  static const Clock::time_point first_use = Clock::now();
  return at_first_use + std::chrono::duration<double>(Clock::now() - first_use).count();
}

RssSampler::RssSampler(pid_t root, int interval_ms)
    : root_(root > 0 ? root : getpid()), interval_ms_(interval_ms > 0 ? interval_ms : 10) {}

void RssSampler::start() {
  if (running_.exchange(true)) return;
  process_uptime_s();  // fix the time origin before the load starts
  sample_now();
  thread_ = std::thread([this] { loop(); });
}

void RssSampler::stop() {
  if (!running_.exchange(false)) return;
  if (thread_.joinable()) thread_.join();
  sample_now();
}

void RssSampler::loop() {
  while (running_.load()) {
    sample_now();
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms_));
  }
}

RssSample RssSampler::sample_now() {
  RssSample s = read_rss_tree(root_);
  raise(peak_anon_, s.anon);
  raise(peak_file_, s.file);
  raise(peak_anon_file_, s.anon_file());
  int seen = max_processes_.load();
  while (s.processes > seen && !max_processes_.compare_exchange_weak(seen, s.processes)) {
  }
  samples_++;
  return s;
}

void RssSampler::mark(const std::string& name) {
  PhaseMark m;
  m.name = name;
  m.t_s = process_uptime_s();
  m.rss = sample_now();
  std::lock_guard<std::mutex> lock(mu_);
  marks_.push_back(std::move(m));
}

void RssSampler::reset_peaks() {
  RssSample s = read_rss_tree(root_);
  peak_anon_ = s.anon;
  peak_file_ = s.file;
  peak_anon_file_ = s.anon_file();
}

std::vector<PhaseMark> RssSampler::marks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return marks_;
}

nlohmann::json rss_json(const RssSample& s) {
  return {{"rss_anon", s.anon}, {"rss_file", s.file}, {"rss_shmem", s.shmem}, {"processes", s.processes}};
}

nlohmann::json RssSampler::marks_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const PhaseMark& m : marks()) {
    nlohmann::json j = rss_json(m.rss);
    j["name"] = m.name;
    j["t_s"] = m.t_s;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace edge
