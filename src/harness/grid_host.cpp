#include "harness/grid_host.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace edge {
namespace {

struct CpuTimes {
  uint64_t total = 0;
  uint64_t idle = 0;  // idle + iowait
};

// Per-cpu lines of /proc/stat ("cpu3 user nice system idle iowait irq softirq steal ...").
Expected<std::map<int, CpuTimes>> read_proc_stat() {
  std::ifstream in("/proc/stat");
  if (!in) return Status::unavailable("cannot read /proc/stat");
  std::map<int, CpuTimes> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream ss(line.substr(3));
    int cpu = -1;
    ss >> cpu;
    CpuTimes t;
    uint64_t v = 0;
    // guest and guest_nice (fields 9-10) are already inside user and nice.
    for (int field = 0; field < 8 && ss >> v; ++field) {
      t.total += v;
      if (field == 3 || field == 4) t.idle += v;
    }
    out[cpu] = t;
  }
  return out;
}

}  // namespace

std::vector<int> allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

nlohmann::json Preflight::to_json() const {
  nlohmann::json per = nlohmann::json::object();
  for (const CoreLoad& c : cores) per[std::to_string(c.cpu)] = c.busy;
  return {{"source", "/proc/stat"}, {"window_s", window_s}, {"threshold", threshold},
          {"busy_per_core", per},   {"max_busy", max_busy}, {"contended", contended}};
}

Expected<Preflight> preflight_cores(const std::vector<int>& cpus, double window_s,
                                    double threshold) {
  if (cpus.empty()) return Status::invalid_argument("pre-flight: no cores to check");
  ASSIGN_OR_RETURN(auto before, read_proc_stat());
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  ASSIGN_OR_RETURN(auto after, read_proc_stat());
  Preflight p;
  p.window_s = window_s;
  p.threshold = threshold;
  for (int cpu : cpus) {
    auto a = before.find(cpu), b = after.find(cpu);
    if (a == before.end() || b == after.end())
      return Status::invalid_argument("pre-flight: cpu " + std::to_string(cpu) +
                                      " is not in /proc/stat");
    const double total = static_cast<double>(b->second.total - a->second.total);
    const double idle = static_cast<double>(b->second.idle - a->second.idle);
    CoreLoad c{cpu, total > 0 ? std::clamp(1.0 - idle / total, 0.0, 1.0) : 0.0};
    p.max_busy = std::max(p.max_busy, c.busy);
    p.cores.push_back(c);
  }
  p.contended = p.max_busy > threshold;
  return p;
}

Expected<HostLock> HostLock::acquire(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return Status::unavailable("host lock: cannot open " + path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return Status::resource_exhausted("another grid holds the host lock " + path + " (pid " +
                                      holder + ")");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
  return HostLock(fd, path);
}

HostLock& HostLock::operator=(HostLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

HostLock::~HostLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

std::string default_grid_lock_path() {
  return ::access("/run/lock", W_OK) == 0 ? "/run/lock/edge-infer-grid.lock"
                                          : "/tmp/edge-infer-grid.lock";
}

}  // namespace edge
