#include "harness/grid_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/process_rss.h"

namespace edge {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kErrTail = 64 << 10;

struct Pipe {
  int r = -1, w = -1;
  Status open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return Status::unavailable(std::string("pipe: ") + std::strerror(errno));
    r = fds[0];
    w = fds[1];
    return {};
  }
  void close_all() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
    r = w = -1;
  }
};

// fork + exec. The child only makes async-signal-safe calls: affinity, dup2, exec, and on
// exec failure writes errno to `report` (close-on-exec, so a successful exec closes it).
Expected<pid_t> spawn_child(const std::vector<std::string>& argv, const std::vector<int>& cpus,
                            int out_fd, int err_fd) {
  if (argv.empty()) return Status::invalid_argument("empty command");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  Pipe report;
  RETURN_IF_ERROR(report.open());
  const pid_t pid = ::fork();
  if (pid < 0) {
    report.close_all();
    return Status::unavailable(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    if (!cpus.empty()) (void)sched_setaffinity(0, sizeof set, &set);
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(out_fd >= 0 ? out_fd : devnull, 1);
    ::dup2(err_fd >= 0 ? err_fd : devnull, 2);
    ::execvp(args[0], args.data());
    const int e = errno;
    (void)!::write(report.w, &e, sizeof e);
    ::_exit(127);
  }
  ::close(report.w);
  int child_errno = 0;
  const ssize_t n = ::read(report.r, &child_errno, sizeof child_errno);
  ::close(report.r);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    ::waitpid(pid, nullptr, 0);
    return Status::not_found("cannot run " + argv[0] + ": " + std::strerror(child_errno));
  }
  return pid;
}

void decode_status(int status, ProcessResult& r) {
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
}

// Reads what is available from fd into s (keeping only the tail when `cap` > 0); false at EOF.
bool drain(int fd, std::string& s, size_t cap) {
  char buf[16384];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n <= 0) return n < 0 && (errno == EAGAIN || errno == EINTR);
  s.append(buf, static_cast<size_t>(n));
  if (cap > 0 && s.size() > 2 * cap) s.erase(0, s.size() - cap);
  return true;
}

}  // namespace

Expected<ProcessResult> run_owned(const std::vector<std::string>& argv, const SpawnOptions& o) {
  Pipe out, err;
  RETURN_IF_ERROR(out.open());
  if (Status s = err.open(); !s.ok()) {
    out.close_all();
    return s;
  }
  const auto t0 = Clock::now();
  auto pid = spawn_child(argv, o.cpus, out.w, err.w);
  ::close(out.w);
  ::close(err.w);
  out.w = err.w = -1;
  if (!pid) {
    out.close_all();
    err.close_all();
    return pid.status();
  }
  ProcessResult r;
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s));
  auto next_sample = t0;
  bool out_open = true, err_open = true, reaped = false;
  int status = 0;
  rusage usage{};
  while (!reaped || out_open || err_open) {
    pollfd fds[2] = {{out_open ? out.r : -1, POLLIN, 0}, {err_open ? err.r : -1, POLLIN, 0}};
    ::poll(fds, 2, reaped ? 50 : 10);
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP))) out_open = drain(out.r, r.out, 0);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP))) err_open = drain(err.r, r.err, kErrTail);
    const auto now = Clock::now();
    if (!reaped && o.rss_interval_ms > 0 && now >= next_sample) {
      const RssSample s = read_rss_tree(*pid);
      if (s.processes > 0)
        r.rss.push_back({std::chrono::duration<double>(now - t0).count(), s.anon, s.anon_file()});
      r.peak_anon = std::max(r.peak_anon, s.anon);
      r.peak_anon_file = std::max(r.peak_anon_file, s.anon_file());
      next_sample = now + std::chrono::milliseconds(o.rss_interval_ms);
    }
    if (!reaped && ::wait4(*pid, &status, WNOHANG, &usage) == *pid) {
      reaped = true;
      r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    }
    if (!reaped && now >= deadline) {
      ::kill(*pid, SIGKILL);  // our own child, not yet reaped: the pid is still ours
      ::wait4(*pid, &status, 0, &usage);
      reaped = true;
      r.timed_out = true;
      r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    }
    // A grandchild that kept the pipes open must not hold us past the child's end.
    if (reaped &&
        Clock::now() - t0 > std::chrono::duration<double>(o.timeout_s) + std::chrono::seconds(2))
      break;
  }
  decode_status(status, r);
  r.cpu_user_s = static_cast<double>(usage.ru_utime.tv_sec) + usage.ru_utime.tv_usec * 1e-6;
  r.cpu_sys_s = static_cast<double>(usage.ru_stime.tv_sec) + usage.ru_stime.tv_usec * 1e-6;
  if (r.err.size() > kErrTail) r.err.erase(0, r.err.size() - kErrTail);
  out.close_all();
  err.close_all();
  return r;
}

Expected<OwnedProcess> OwnedProcess::spawn(const std::vector<std::string>& argv,
                                           const std::vector<int>& cpus) {
  ASSIGN_OR_RETURN(pid_t pid, spawn_child(argv, cpus, -1, -1));
  return OwnedProcess(pid);
}

bool OwnedProcess::alive() {
  if (pid_ < 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

std::string OwnedProcess::stop(double grace_s) {
  if (pid_ < 0) return "already exited";
  int status = 0;
  std::string how = "SIGTERM";
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::duration<double>(grace_s);
  while (::waitpid(pid_, &status, WNOHANG) != pid_) {
    if (Clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      how = "SIGKILL after " + std::to_string(grace_s) + " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
  return how;
}

}  // namespace edge
