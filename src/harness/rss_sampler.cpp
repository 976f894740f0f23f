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

// Reads "Key:   1234 kB" lines; false when the file cannot be opened.
bool parse_status(const std::string& path, RssSample* s) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return false;
  char line[256];
  while (std::fgets(line, sizeof(line), f)) {
    long long kb = 0;
    if (std::sscanf(line, "RssAnon: %lld", &kb) == 1) s->anon += kb * 1024;
    else if (std::sscanf(line, "RssFile: %lld", &kb) == 1) s->file += kb * 1024;
    else if (std::sscanf(line, "RssShmem: %lld", &kb) == 1) s->shmem += kb * 1024;
  }
  std::fclose(f);
  return true;
}

// Direct children of every thread of pid (a child belongs to the thread that forked it).
void append_children(pid_t pid, std::vector<pid_t>& out) {
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(task_dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(task_dir + "/" + e->d_name + "/children");
    long long child = 0;
    while (f >> child) out.push_back(static_cast<pid_t>(child));
  }
  closedir(d);
}

// starttime (ticks since boot) of pid; the comm field may contain spaces and ')' so
// fields are counted from the last ')'.
bool read_starttime_ticks(pid_t pid, long long* ticks) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t rp = all.rfind(')');
  if (rp == std::string::npos) return false;
  std::istringstream rest(all.substr(rp + 2));
  std::string field;
  // After ')' comes field 3 (state); starttime is field 22.
  for (int i = 3; i < 22; ++i) {
    if (!(rest >> field)) return false;
  }
  return static_cast<bool>(rest >> *ticks);
}

}  // namespace

Expected<RssSample> read_rss(pid_t pid) {
  RssSample s;
  if (!parse_status("/proc/" + std::to_string(pid) + "/status", &s))
    return Status::not_found("process " + std::to_string(pid) + " is gone");
  s.processes = 1;
  return s;
}

std::vector<pid_t> process_tree(pid_t root) {
  std::vector<pid_t> tree = {root};
  for (size_t i = 0; i < tree.size() && tree.size() < 4096; ++i) append_children(tree[i], tree);
  return tree;
}

RssSample read_rss_tree(pid_t root) {
  RssSample total;
  for (pid_t p : process_tree(root)) {
    auto s = read_rss(p);
    if (!s) continue;
    total.anon += s->anon;
    total.file += s->file;
    total.shmem += s->shmem;
    total.processes++;
  }
  return total;
}

double seconds_since_process_start(pid_t pid) {
  long long start_ticks = 0;
  if (!read_starttime_ticks(pid, &start_ticks)) return -1;
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

Expected<Residency> mincore_residency(const void* addr, size_t len) {
  Residency r;
  if (addr == nullptr || len == 0) return r;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(addr) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(addr) + len + page - 1) / page * page;
  const size_t pages = (end - begin) / page;
  // In chunks, so a multi-GB mapping does not need a multi-MB vector at once.
  constexpr size_t kChunk = 1 << 16;
  std::vector<unsigned char> vec(std::min(pages, kChunk));
  for (size_t done = 0; done < pages; done += kChunk) {
    const size_t n = std::min(kChunk, pages - done);
    if (mincore(reinterpret_cast<void*>(begin + done * page), n * page, vec.data()) != 0)
      return Status::io_error(std::string("mincore: ") + std::strerror(errno));
    for (size_t i = 0; i < n; ++i) r.resident += (vec[i] & 1) ? static_cast<int64_t>(page) : 0;
  }
  r.total = static_cast<int64_t>(pages * page);
  return r;
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
