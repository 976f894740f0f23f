#include "harness/owned_process.h"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace edge {
namespace {

struct StatFields {
  pid_t ppid = -1;
  uint64_t start_ticks = 0;
  char state = '?';
};

// /proc/PID/stat: "pid (comm) state ppid ..." where comm may hold spaces and parentheses,
// so fields are counted after its last ')'.
Expected<StatFields> read_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return Status::not_found("no process " + std::to_string(pid));
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return Status::invalid_format("unreadable /proc stat");
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> f;
  for (std::string x; rest >> x;) f.push_back(x);
  // f[0] is field 3 (state), so field N is f[N - 3].
  if (f.size() < 20) return Status::invalid_format("short /proc stat");
  StatFields s;
  s.state = f[0][0];
  s.ppid = static_cast<pid_t>(std::stol(f[1]));
  s.start_ticks = std::stoull(f[19]);
  return s;
}

}  // namespace

Expected<OwnedProcess> OwnedProcess::child(pid_t pid) {
  if (pid <= 0) return Status::invalid_argument("no pid");
  ASSIGN_OR_RETURN(StatFields s, read_stat(pid));
  if (s.ppid != ::getpid())
    return Status::invalid_argument("process " + std::to_string(pid) +
                                    " is not a child of this process: not ours to signal");
  return OwnedProcess{pid, s.start_ticks};
}

bool OwnedProcess::alive() const {
  auto s = read_stat(pid);
  return s.ok() && s->start_ticks == start_ticks;
}

Status OwnedProcess::signal(int sig) const {
  auto s = read_stat(pid);
  if (!s.ok() || s->start_ticks != start_ticks)
    return Status::not_found(to_string() + " is gone (its pid may name another process now)");
  if (s->ppid != ::getpid())
    return Status::invalid_argument(to_string() + " is no longer our child");
  if (::kill(pid, sig) != 0) return Status::io_error("kill " + to_string() + " failed");
  return Status();
}

std::string OwnedProcess::to_string() const {
  return "pid " + std::to_string(pid) + " (started at tick " + std::to_string(start_ticks) + ")";
}

}  // namespace edge
