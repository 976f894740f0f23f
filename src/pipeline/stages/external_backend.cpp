// The external backend's process: command line, output reader, readiness, stop.
#include "pipeline/stages/external_backend.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/process_rss.h"

extern char** environ;

namespace edge::pipeline {

const char* server_flavour_name(ServerFlavour f) {
  return f == ServerFlavour::kEdgeInfer ? "edge-infer" : "llama-server";
}

Expected<ServerFlavour> server_flavour(const std::string& declared, const std::string& binary) {
  if (declared == "edge-infer") return ServerFlavour::kEdgeInfer;
  if (declared == "llama-server") return ServerFlavour::kLlamaServer;
  if (!declared.empty())
    return Status::invalid_argument(
        fmt::format("server_flavour '{}' is not one of edge-infer, llama-server", declared));
  const std::string name = std::filesystem::path(binary).filename().string();
  return name.find("llama-server") != std::string::npos ? ServerFlavour::kLlamaServer
                                                        : ServerFlavour::kEdgeInfer;
}

std::vector<std::string> backend_argv(const BackendLaunch& l, int port) {
  std::vector<std::string> a;
  if (l.flavour == ServerFlavour::kEdgeInfer) {
    a = {l.binary,
         "serve",
         "-m",
         l.model,
         "--host",
         "127.0.0.1",
         "--port",
         "0",
         "--ctx",
         std::to_string(l.ctx),
         "--max-seqs",
         std::to_string(l.capacity),
         "--kv-type",
         l.engine.kv_type,
         "--max-batched-tokens",
         std::to_string(l.engine.max_batched_tokens)};
    if (!l.engine.kv_type_v.empty()) a.insert(a.end(), {"--kv-type-v", l.engine.kv_type_v});
    if (l.engine.kv_budget_bytes > 0)
      a.insert(a.end(), {"--kv-budget", std::to_string(l.engine.kv_budget_bytes)});
  } else {
    a = {l.binary,
         "-m",
         l.model,
         "--host",
         "127.0.0.1",
         "--port",
         std::to_string(port),
         "-c",
         std::to_string(l.ctx * l.capacity),
         "-np",
         std::to_string(l.capacity)};
  }
  if (!l.projector.empty()) a.insert(a.end(), {"--mmproj", l.projector});  // both servers' flag
  if (l.threads > 0) a.insert(a.end(), {"-t", std::to_string(l.threads)});
  a.insert(a.end(), l.extra_args.begin(), l.extra_args.end());
  return a;
}

namespace {

constexpr const char* kOurPlacement = "edge-infer: placement ";
constexpr const char* kOurBuild = "edge-infer: build ";
constexpr const char* kOurVision = "edge-infer: vision placement ";
constexpr const char* kClipBackend = "CLIP using ";
constexpr const char* kOurListening = "edge-infer: listening on http://";
constexpr size_t kTailLines = 64, kNotableLines = 64, kMaxLineBytes = 64 << 10;

bool notable(const std::string& line) {
  for (const char* key : {kOurPlacement, kOurListening, kOurBuild, kOurVision, kClipBackend, "using device ",
                          "offloaded ", "build: ", "build info"})
    if (line.find(key) != std::string::npos) return true;
  return false;
}

// llama-server's "offloaded N/M layers to GPU": {N, M}, or {-1, -1} when absent.
std::pair<int, int> offloaded_layers(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    const size_t at = line.find("offloaded ");
    if (at == std::string::npos || line.find(" layers to GPU", at) == std::string::npos) continue;
    int n = -1, m = -1;
    if (std::sscanf(line.c_str() + at, "offloaded %d/%d", &n, &m) == 2) return {n, m};
  }
  return {-1, -1};
}

// llama-server's "using device NAME (DESCRIPTION) - N MiB free": "NAME (DESCRIPTION)", once
// per device.
std::vector<std::string> devices_used(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const std::string& line : lines) {
    const size_t at = line.find("using device ");
    if (at == std::string::npos) continue;
    std::string d = line.substr(at + 13);
    const size_t dash = d.rfind(" - ");
    if (dash != std::string::npos) d.resize(dash);
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  return out;
}

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

bool health_ok(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(1, 0);
  c.set_read_timeout(5, 0);
  auto r = c.Get("/health");
  return r && r->status == 200;
}

}  // namespace

std::string placement_proof(ServerFlavour f, const std::vector<std::string>& lines) {
  if (f == ServerFlavour::kEdgeInfer) {
    for (const std::string& line : lines) {
      const size_t at = line.find(kOurPlacement);
      if (at != std::string::npos) return line.substr(at + std::strlen(kOurPlacement));
    }
    return "unreported";
  }
  const auto [n, m] = offloaded_layers(lines);
  const std::vector<std::string> devices_seen = devices_used(lines);
  // A build without a GPU backend (ik_llama.cpp's CPU build) names only the CPU device and
  // prints no offload line.
  if (n < 0 && !devices_seen.empty() &&
      std::all_of(devices_seen.begin(), devices_seen.end(), [](const std::string& d) { return d == "CPU"; }))
    return "cpu (CPU device only, no layers offloaded)";
  if (n < 0) return "unreported (no 'offloaded N/M layers' line)";
  if (n == 0) return fmt::format("cpu (0/{} layers offloaded)", m);
  std::string devices;
  for (const std::string& d : devices_used(lines)) devices += (devices.empty() ? "" : ", ") + d;
  return fmt::format("{}, {}/{} layers offloaded", devices.empty() ? "GPU" : devices, n, m);
}

std::string vision_placement_proof(ServerFlavour f, const std::vector<std::string>& lines) {
  const char* key = f == ServerFlavour::kEdgeInfer ? kOurVision : kClipBackend;
  for (const std::string& line : lines) {
    const size_t at = line.find(key);
    if (at == std::string::npos) continue;
    std::string rest = line.substr(at + std::strlen(key));
    if (f == ServerFlavour::kEdgeInfer) return rest;
    const size_t end = rest.find(" backend");
    const std::string backend = rest.substr(0, end);
    return backend == "CPU" ? "cpu (CLIP on the CPU backend)"
                            : fmt::format("{} (CLIP backend)", backend);
  }
  return "unreported";
}

std::string backend_version(ServerFlavour f, const std::vector<std::string>& lines) {
  const char* key = f == ServerFlavour::kEdgeInfer ? kOurBuild : "build: ";
  for (const std::string& line : lines) {
    const size_t at = line.find(key);
    if (at == std::string::npos) continue;
    std::string v = line.substr(at + (f == ServerFlavour::kEdgeInfer ? std::strlen(key) : 0));
    return f == ServerFlavour::kEdgeInfer ? "edge-infer " + v : "llama-server " + v;
  }
  // ik_llama.cpp's server logs `build info | ... build=N commit="HASH"` instead.
  if (f == ServerFlavour::kLlamaServer)
    for (const std::string& line : lines)
      if (line.find("build info") != std::string::npos && line.find("build=") != std::string::npos)
        return "llama-server " + line.substr(line.find("build="));
  return "unreported";
}

// The device class a backend's placement proof shows: "cpu" (ours; llama-server with no
// layer offloaded), "gpu" (every layer offloaded), "partial" (some), "unknown" (no line).
std::string device_of_proof(const std::string& proof) {
  const size_t vision_at = proof.find(kVisionProofSeparator);
  if (vision_at != std::string::npos) {
    const std::string model = device_of_proof(proof.substr(0, vision_at));
    const std::string vision = proof.substr(vision_at + std::strlen(kVisionProofSeparator));
    const std::string encoder = vision.rfind("cpu", 0) == 0           ? "cpu"
                                : vision.rfind("unreported", 0) == 0 ? "unknown"
                                                                     : "gpu";
    if (model == encoder) return model;
    return model == "unknown" || encoder == "unknown" ? "unknown" : "partial";
  }
  if (proof.rfind("cpu", 0) == 0) return "cpu";
  const size_t at = proof.find(" layers offloaded");
  if (at == std::string::npos) return "unknown";
  const size_t slash = proof.rfind('/', at), space = proof.rfind(' ', slash);
  if (slash == std::string::npos) return "unknown";
  const long n = std::strtol(proof.c_str() + (space == std::string::npos ? 0 : space + 1), nullptr, 10);
  const long m = std::strtol(proof.c_str() + slash + 1, nullptr, 10);
  return n > 0 && n == m ? "gpu" : n > 0 ? "partial" : "cpu";
}

// Reads the backend's stdout+stderr (one pipe) on its own thread for the process's whole
// life: a pipe nobody reads fills up and blocks the server's next log line. Keeps the last
// lines for error messages and the lines the placement proof and the port come from.
class BackendOutput {
 public:
  explicit BackendOutput(int fd) : fd_(fd), thread_([this] { loop(); }) {}
  ~BackendOutput() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }

  // Returns when a new line arrived, the output ended, or `timeout` passed.
  void wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    const uint64_t seen = lines_;
    cv_.wait_for(l, timeout, [&] { return eof_ || lines_ != seen; });
  }
  void wait_eof(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, timeout, [&] { return eof_; });
  }
  int listen_port() const {
    std::lock_guard<std::mutex> l(mu_);
    return port_;
  }
  std::vector<std::string> notable_lines() const {
    std::lock_guard<std::mutex> l(mu_);
    return notable_;
  }
  std::string tail(size_t n) const {
    std::lock_guard<std::mutex> l(mu_);
    std::string out;
    for (size_t i = tail_.size() > n ? tail_.size() - n : 0; i < tail_.size(); ++i)
      out += "  " + tail_[i] + "\n";
    return out.empty() ? "  (no output)\n" : out;
  }

 private:
  void loop() {
    std::string pending;
    char buf[4096];
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      const int r = poll(&p, 1, 100);  // wakes to see stop_ even if a grandchild holds the pipe
      if (r <= 0) continue;
      const ssize_t n = read(fd_, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
        add_line(pending.substr(0, nl));
      if (pending.size() > kMaxLineBytes) {  // a line without end is cut, not grown
        add_line(std::move(pending));
        pending.clear();
      }
    }
    if (!pending.empty()) add_line(std::move(pending));
    std::lock_guard<std::mutex> l(mu_);
    eof_ = true;
    cv_.notify_all();
  }

  void add_line(std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::lock_guard<std::mutex> l(mu_);
    if (notable(line) && notable_.size() < kNotableLines) notable_.push_back(line);
    const size_t at = line.find(kOurListening);
    if (at != std::string::npos && port_ == 0) {
      const size_t colon = line.rfind(':');
      if (colon != std::string::npos && colon > at) port_ = std::atoi(line.c_str() + colon + 1);
    }
    tail_.push_back(std::move(line));
    if (tail_.size() > kTailLines) tail_.pop_front();
    ++lines_;
    cv_.notify_all();
  }

  const int fd_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t lines_ = 0;
  bool eof_ = false;
  int port_ = 0;
  std::deque<std::string> tail_;
  std::vector<std::string> notable_;
  std::thread thread_;  // last: started once the members above exist
};

Expected<std::unique_ptr<BackendProcess>> BackendProcess::start(const BackendLaunch& l,
                                                                uint32_t generation) {
  std::unique_ptr<BackendProcess> b(new BackendProcess());
  b->generation_ = generation;
  if (l.flavour == ServerFlavour::kLlamaServer) {
    // Free now; another process could take it before the server binds it, which the
    // readiness wait then reports as a server that exited (address in use).
    b->port_ = free_loopback_port();
    if (b->port_ == 0) return Status::io_error("no free loopback port for the external backend");
  }
  std::vector<std::string> args = backend_argv(l, b->port_);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return Status::io_error(std::string("pipe: ") + strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);  // dup2 clears close-on-exec on 1 and 2
  posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  const int rc = posix_spawn(&b->pid_, l.binary.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (rc != 0) {
    close(p[0]);
    b->pid_ = -1;
    return Status::io_error(fmt::format("stage '{}': cannot start external backend {}: {}", l.stage,
                                        l.binary, strerror(rc)));
  }
  b->start_ticks_ = process_start_ticks(b->pid_);
  b->output_ = std::make_unique<BackendOutput>(p[0]);
  if (Status st = b->wait_ready(l); !st.ok()) {
    b->stop(std::chrono::milliseconds(0));
    return st;
  }
  b->proof_ = placement_proof(l.flavour, b->output_->notable_lines());
  if (!l.projector.empty())
    b->proof_ += kVisionProofSeparator + vision_placement_proof(l.flavour, b->output_->notable_lines());
  b->version_ = backend_version(l.flavour, b->output_->notable_lines());
  return b;
}

// Ours prints its port once loaded; llama-server listens early and answers /health with
// 503 while it loads. Either way, ready is GET /health answering 200.
Status BackendProcess::wait_ready(const BackendLaunch& l) {
  const auto deadline = std::chrono::steady_clock::now() + l.ready_timeout;
  const std::string who = fmt::format("stage '{}': external backend {} (pid {}, generation {})",
                                      l.stage, l.binary, pid_, generation_);
  for (;;) {
    if (!running()) {
      output_->wait_eof(std::chrono::seconds(1));  // its last words, before they are quoted
      return Status::unavailable(fmt::format("{} exited before it was ready ({}); last output:\n{}",
                                             who, exit_description(), output_tail(20)));
    }
    if (port_ == 0) port_ = output_->listen_port();
    if (port_ > 0 && health_ok(port_)) return Status();
    if (std::chrono::steady_clock::now() >= deadline)
      return Status::deadline_exceeded(
          fmt::format("{} was not ready within {} ms; last output:\n{}", who,
                      l.ready_timeout.count(), output_tail(20)));
    output_->wait(std::chrono::milliseconds(50));
  }
}

BackendProcess::~BackendProcess() {
  stop(std::chrono::seconds(5));
}

bool BackendProcess::running() {
  if (reaped_ || pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) wait_status_ = status;
  reaped_ = true;  // or not our child any more (ECHILD): nothing left to reap or signal
  return false;
}

bool BackendProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void BackendProcess::signal_ours(int sig) const {
  // Not reaped yet, so the pid cannot have been reused; the start time says so anyway.
  if (!reaped_ && pid_ > 0 && process_start_ticks(pid_) == start_ticks_) ::kill(pid_, sig);
}

void BackendProcess::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0 || reaped_) return;
  signal_ours(SIGTERM);
  if (wait_exit(grace)) return;
  signal_ours(SIGKILL);
  int status = 0;
  if (waitpid(pid_, &status, 0) == pid_) wait_status_ = status;
  reaped_ = true;
}

std::string BackendProcess::exit_description() const {
  if (!reaped_) return "running";
  if (WIFEXITED(wait_status_)) return fmt::format("exit status {}", WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) return fmt::format("killed by signal {}", WTERMSIG(wait_status_));
  return "ended";
}

std::string BackendProcess::output_tail(size_t n) const {
  return output_ ? output_->tail(n) : "  (no output)\n";
}

}  // namespace edge::pipeline
