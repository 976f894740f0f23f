// The pipeline's side of worker.h: spawn, handshake, requests, death and retirement.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/process_rss.h"
#include "pipeline/worker.h"
#include "pipeline/worker_protocol.h"

extern char** environ;

namespace edge::pipeline {

namespace {

constexpr int32_t kCredits = 16;
constexpr auto kEventTimeout = std::chrono::minutes(10);

// One spawned worker process, owned by (pid, start time).
struct WorkerProcess {
  pid_t pid = -1;
  long long start_ticks = -1;
  int fd = -1;
  uint32_t generation = 0;

  // Closes the socket and reaps the process: at once after SIGKILL (kill_it), or after it
  // exits by itself, killed if it has not within 5 s. Signals go only to the process we
  // spawned: same pid and same start time.
  void stop(bool kill_it) {
    if (fd >= 0) close(fd), fd = -1;
    if (pid <= 0) return;
    auto kill_ours = [&] {
      if (process_start_ticks(pid) == start_ticks) ::kill(pid, SIGKILL);
    };
    if (kill_it) kill_ours();
    int status = 0;
    for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(10000);
    if (waitpid(pid, &status, WNOHANG) == 0) {
      kill_ours();
      waitpid(pid, &status, 0);
    }
    pid = -1;
  }
};

Expected<WorkerProcess> spawn_worker(const std::string& binary, uint32_t generation) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return Status::io_error(std::string("socketpair: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 3);  // dup2 clears close-on-exec on fd 3
  const std::string fd_arg = "3";
  std::vector<char*> argv = {const_cast<char*>(binary.c_str()), const_cast<char*>("worker"),
                             const_cast<char*>("--fd"), const_cast<char*>(fd_arg.c_str()), nullptr};
  WorkerProcess w;
  const int rc = posix_spawn(&w.pid, binary.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    return Status::io_error(fmt::format("cannot start worker {}: {}", binary, std::strerror(rc)));
  }
  w.fd = sv[0];
  w.generation = generation;
  w.start_ticks = process_start_ticks(w.pid);
  return w;
}

class WorkerStageRunner final : public StageRunner {
 public:
  WorkerStageRunner(std::string model, const StageSpec& s, WorkerOptions o)
      : model_(std::move(model)), spec_(s), o_(std::move(o)) {}
  ~WorkerStageRunner() override { retire(); }

  // Spawns the next generation and waits for its ready (or its refusal).
  Status start() {
    ASSIGN_OR_RETURN(w_, spawn_worker(o_.binary, ++generation_));
    const nlohmann::json hello = {{"type", "hello"},
                                  {"stage", spec_.name},
                                  {"contract", spec_.contract.str()},
                                  {"model", model_},
                                  {"sha256", sha256_},
                                  {"capacity", spec_.capacity},
                                  {"ctx", o_.run.ctx},
                                  {"max_tokens", o_.run.max_tokens},
                                  {"threads", o_.run.n_threads},
                                  {"generation", generation_},
                                  {"credits", kCredits}};
    Status st = send_message(w_.fd, hello);
    auto ready =
        st.ok() ? receive_message(w_.fd, std::chrono::minutes(2)) : Expected<nlohmann::json>(st);
    if (ready.ok() && (*ready)["type"] == "ready") return Status();
    w_.stop(/*kill_it=*/true);
    if (ready.ok())
      return Status::invalid_argument(fmt::format("stage '{}': worker refused: {}", spec_.name,
                                                  ready->value("message", "no reason")));
    return ready.status().with_context(fmt::format("stage '{}': worker handshake", spec_.name));
  }

  void set_hash(std::string sha) { sha256_ = std::move(sha); }

  Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
             const std::function<void(StageEvent)>& emit) override {
    if (w_.pid <= 0) RETURN_IF_ERROR(start());  // the last one died: a new generation
    nlohmann::json in = nlohmann::json::object();
    for (const auto& [port, v] : inputs) in[port] = {{"text", v.text}, {"tokens", v.tokens}};
    Status st = send_message(w_.fd, {{"type", "request"}, {"epoch", epoch}, {"inputs", in}});
    while (st.ok()) {
      auto m = receive_message(w_.fd, kEventTimeout);
      if (!m.ok()) {
        st = m.status();
        break;
      }
      if ((*m)["type"] == "failed") return Status::internal(m->value("error", "the stage failed"));
      StageEvent e;
      e.epoch = m->value("epoch", uint64_t{0}), e.seq = m->value("seq", uint64_t{0});
      e.terminal = m->value("terminal", false), e.port = m->value("port", "");
      e.stage = spec_.name, e.worker_generation = generation_;
      e.value.text = m->value("text", ""),
      e.value.tokens = m->value("tokens", std::vector<int32_t>{});
      if (m->contains("error")) e.error = Status::internal((*m)["error"].get<std::string>());
      emit(e);
      st = send_message(w_.fd, {{"type", "ack"}, {"n", 1}});
      if (e.terminal && e.port == "text") return Status();  // both ports are done
    }
    // The worker died (or hung) mid-request: end this request explicitly; the next one
    // starts generation + 1.
    const pid_t pid = w_.pid;
    w_.stop(/*kill_it=*/true);
    return Status::unavailable(
        fmt::format("stage '{}': worker pid {} (generation {}) ended during request epoch {}: {}",
                    spec_.name, pid, generation_, epoch, st.message()));
  }

  int64_t resident_bytes() const override {
    return w_.pid > 0 ? read_rss_tree(w_.pid).anon_file() : 0;
  }
  uint32_t generation() const override { return generation_; }
  std::string placement() const override {
    return w_.pid > 0 ? fmt::format("worker pid {} cpu", w_.pid) : "worker (not running)";
  }

 private:
  // Drain: ask the worker to finish and exit, wait for it, reap it.
  void retire() {
    if (w_.pid <= 0) return;
    (void)send_message(w_.fd, {{"type", "retire"}});
    w_.stop(/*kill_it=*/false);
  }

  std::string model_, sha256_;
  StageSpec spec_;
  WorkerOptions o_;
  WorkerProcess w_;
  uint32_t generation_ = 0;
};

}  // namespace

Expected<std::unique_ptr<StageRunner>> start_worker_stage(const std::string& model_path,
                                                          const StageSpec& s,
                                                          const WorkerOptions& o) {
  WorkerOptions opts = o;
  if (opts.binary.empty()) opts.binary = "/proc/self/exe";
  auto r = std::make_unique<WorkerStageRunner>(model_path, s, opts);
  for (const Artifact& a : s.artifacts)
    if (a.role == "model") r->set_hash(a.sha256);
  RETURN_IF_ERROR(r->start());
  return std::unique_ptr<StageRunner>(std::move(r));
}

}  // namespace edge::pipeline
