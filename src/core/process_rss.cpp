#include "core/process_rss.h"

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace edge {
namespace {

// Reads "Key:   1234 kB" lines; false when the file cannot be opened.
bool parse_status(const std::string& path, RssSample* s) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return false;
  char line[256];
  while (std::fgets(line, sizeof(line), f)) {
    long long kb = 0;
    if (std::sscanf(line, "RssAnon: %lld", &kb) == 1)
      s->anon += kb * 1024;
    else if (std::sscanf(line, "RssFile: %lld", &kb) == 1)
      s->file += kb * 1024;
    else if (std::sscanf(line, "RssShmem: %lld", &kb) == 1)
      s->shmem += kb * 1024;
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

}  // namespace

long long process_start_ticks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t rp = all.rfind(')');  // the command name may hold spaces and ')'
  if (rp == std::string::npos || rp + 2 > all.size()) return -1;
  std::istringstream rest(all.substr(rp + 2));
  std::string field;
  for (int i = 3; i < 22; ++i)  // after ')' comes field 3 (state); starttime is field 22
    if (!(rest >> field)) return -1;
  long long ticks = -1;
  return (rest >> ticks) ? ticks : -1;
}

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

}  // namespace edge
