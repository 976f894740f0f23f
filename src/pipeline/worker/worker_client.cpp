// The pipeline's side of worker.h: spawn, handshake, concurrent requests multiplexed by
// epoch over one socket, death, retirement.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <thread>

#include "core/process_rss.h"
#include "pipeline/graph/credits.h"
#include "pipeline/graph/stage_kind.h"
#include "pipeline/worker/port_tensor.h"
#include "pipeline/worker/request_params_json.h"
#include "pipeline/worker/shm_tensor.h"
#include "pipeline/worker/worker.h"
#include "pipeline/worker/worker_protocol.h"

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

  // Reaps the process: at once after SIGKILL (kill_it), or after it exits by itself,
  // killed if it has not within `grace`. Signals go only to the process we spawned: same
  // pid and same start time.
  void reap(bool kill_it, std::chrono::milliseconds grace = std::chrono::seconds(5)) {
    if (pid <= 0) return;
    auto kill_ours = [&] {
      if (process_start_ticks(pid) == start_ticks) ::kill(pid, SIGKILL);
    };
    if (kill_it) kill_ours();
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (waitpid(pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline)
      usleep(10000);
    if (waitpid(pid, &status, WNOHANG) == 0) {
      kill_ours();
      waitpid(pid, &status, 0);
    }
    pid = -1;
  }
};

Expected<WorkerProcess> spawn_worker(const std::string& binary) {
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
  w.start_ticks = process_start_ticks(w.pid);
  return w;
}

// One generation of the worker: its process, the socket, and a reader thread that sorts
// the worker's messages into one inbox per request (epoch).
class WorkerConn {
 public:
  WorkerConn(WorkerProcess p, uint32_t generation, std::unique_ptr<TensorPool> inputs)
      : proc_(p), generation_(generation), inputs_(std::move(inputs)) {}
  ~WorkerConn() { shut(/*kill_it=*/true); }

  uint32_t generation() const { return generation_; }
  pid_t pid() const { return proc_.pid; }

  Status send(const nlohmann::json& m) {
    std::lock_guard<std::mutex> l(send_mu_);
    return send_message(proc_.fd, m);
  }
  Expected<nlohmann::json> receive_ready() {
    return receive_message(proc_.fd, std::chrono::minutes(2));
  }
  void start_reader() {
    reader_ = std::thread([this] { read_loop(); });
  }

  // Opens the request's inbox and sends the request; false when the worker is dead or
  // retiring. One lock with retire(): a request is never sent after the retire message.
  // Token lists of at least `shm_min_bytes`, and every image, PCM or embedding array, go
  // through the shared-memory pool (port_tensor.h).
  bool request(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
               const RequestParams* params, uint64_t shm_min_bytes,
               const std::vector<std::string>& streamed, Status* sent) {
    std::lock_guard<std::mutex> s(send_mu_);
    {
      std::lock_guard<std::mutex> l(mu_);
      if (dead_ || retiring_) return false;
      inbox_[epoch];
    }
    nlohmann::json in = nlohmann::json::object();
    for (const auto& [port, v] : inputs) {
      auto t = port_tensor(v);
      const bool small_tokens =
          t.ok() && *t && !v.tokens.empty() && t->value().bytes.size() < shm_min_bytes;
      if (t.ok() && (!*t || small_tokens)) {
        in[port] = {{"text", v.text}, {"tokens", v.tokens}};
        continue;
      }
      auto tensor = t.ok() ? share(**t) : Expected<nlohmann::json>(t.status());
      if (!tensor.ok()) {
        *sent = tensor.status().with_context("input port '" + port + "'");
        return true;
      }
      in[port] = {{"text", v.text}, {"tensor", *tensor}};
    }
    nlohmann::json msg = {{"type", "request"}, {"epoch", epoch}, {"inputs", in}};
    if (params) msg["params"] = request_params_json(*params);
    if (!streamed.empty()) msg["streamed"] = streamed;
    *sent = send_message(proc_.fd, msg);
    return true;
  }
  nlohmann::json transport_stats() const {
    const TensorPoolStats t = inputs_->stats();
    return {{"shm_slots", t.slots},
            {"shm_in_use", t.in_use},
            {"shm_high_water", t.high_water},
            {"shm_stalls", t.stalls},
            {"shm_published", t.published},
            {"shm_dedicated", t.dedicated},
            {"audio_buffers_mapped", audio_buffers()}};
  }
  void close(uint64_t epoch) {
    std::lock_guard<std::mutex> l(mu_);
    inbox_.erase(epoch);
    cv_.notify_all();
  }
  // The next message for `epoch`, or the worker's death.
  Expected<nlohmann::json> next(uint64_t epoch) {
    std::unique_lock<std::mutex> l(mu_);
    auto& q = inbox_[epoch];
    if (!cv_.wait_for(l, kEventTimeout, [&] { return !q.empty() || dead_; }))
      return Status::deadline_exceeded("no event from the worker in 10 minutes");
    if (q.empty()) return death_;
    nlohmann::json m = std::move(q.front());
    q.pop_front();
    return m;
  }

  bool dead() const {
    std::lock_guard<std::mutex> l(mu_);
    return dead_;
  }
  // Retirement: the worker finishes what it holds, accepts nothing new, and exits.
  void retire() {
    std::lock_guard<std::mutex> s(send_mu_);
    {
      std::lock_guard<std::mutex> l(mu_);
      if (retiring_ || dead_) return;
      retiring_ = true;
    }
    (void)send_message(proc_.fd, {{"type", "retire"}});
  }
  bool retiring() const {
    std::lock_guard<std::mutex> l(mu_);
    return retiring_;
  }
  bool finished_retiring() const {
    std::lock_guard<std::mutex> l(mu_);
    return retiring_ && (dead_ || inbox_.empty());
  }

  // Stops reading, closes the socket and reaps the process (SIGKILL first if kill_it).
  void shut(bool kill_it, std::chrono::milliseconds grace = std::chrono::seconds(5)) {
    std::lock_guard<std::mutex> l(shut_mu_);
    if (proc_.fd < 0) return;
    inputs_->close();                        // a request waiting for a buffer gives up
    if (!kill_it) proc_.reap(false, grace);  // let it exit (it was told to retire)
    ::shutdown(proc_.fd, SHUT_RDWR);         // wakes the reader with end of file
    if (reader_.joinable()) reader_.join();
    proc_.reap(true);
    ::close(proc_.fd);
    proc_.fd = -1;
  }

  size_t audio_buffers() const {
    std::lock_guard<std::mutex> o(outputs_mu_);
    return outputs_.mapped_buffers();
  }

  // The array of an event (audio PCM, embeddings), from the worker's shared buffer: copied
  // out, then the buffer is released to the worker (which reuses it only after the release).
  Status take_tensor(const nlohmann::json& descriptor, PortValue& out) {
    nlohmann::json release;
    Status st;
    {
      std::lock_guard<std::mutex> o(outputs_mu_);
      ASSIGN_OR_RETURN(SharedTensor t, outputs_.view(descriptor));
      st = set_port_tensor(t, out);
      ASSIGN_OR_RETURN(release, outputs_.release(t.buffer));
    }
    (void)send(release);  // a worker gone by now needs no release
    return st.with_context("an event of the worker");
  }

 private:
  void read_loop() {
    for (;;) {
      auto got = receive_message_with_fds(proc_.fd, std::chrono::hours(24 * 365), 1);
      Expected<nlohmann::json> m = got.ok() ? Expected<nlohmann::json>(std::move(got->msg))
                                            : Expected<nlohmann::json>(got.status());
      if (m.ok() && (*m)["type"] == "announce") {  // a buffer the worker's audio will come in
        std::lock_guard<std::mutex> o(outputs_mu_);
        if (outputs_.add(*m, std::move(got->fds)).ok()) continue;
        m = Status::invalid_format("the worker announced a broken buffer");
      }
      std::lock_guard<std::mutex> l(mu_);
      if (!m.ok()) {
        dead_ = true;
        death_ = m.status();
        cv_.notify_all();
        return;
      }
      if ((*m)["type"] == "release") {  // the worker is done with an input tensor
        (void)inputs_->release(*m);
        continue;
      }
      const nlohmann::json& e = (*m)["epoch"];
      if (!e.is_number_unsigned()) continue;  // not about a request
      auto it = inbox_.find(e.get<uint64_t>());
      if (it != inbox_.end()) it->second.push_back(std::move(*m));
      cv_.notify_all();
    }
  }

 private:
  // A port value's array as a tensor in a pool buffer (announced with its memfd on first
  // use); the worker releases it once copied. Under send_mu_.
  Expected<nlohmann::json> share(const PortTensor& t) {
    const uint64_t bytes = t.bytes.size();
    ASSIGN_OR_RETURN(TensorSlot slot, inputs_->acquire(bytes, std::chrono::seconds(30)));
    std::memcpy(slot.data.data(), t.bytes.data(), bytes);
    ASSIGN_OR_RETURN(PublishedTensor p, inputs_->publish(slot, t.dtype, t.shape));
    if (p.announce) {
      const int fds[1] = {p.announce_fd};
      RETURN_IF_ERROR(send_message_with_fds(proc_.fd, *p.announce, fds));
    }
    return p.descriptor;
  }

  WorkerProcess proc_;
  const uint32_t generation_;
  std::unique_ptr<TensorPool> inputs_;  // the pipeline produces, the worker consumes
  mutable std::mutex outputs_mu_;
  TensorMapper outputs_{"audio from the worker"};  // the worker produces, the pipeline consumes
  std::mutex send_mu_, shut_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, std::deque<nlohmann::json>> inbox_;
  bool dead_ = false, retiring_ = false;
  Status death_;
  std::thread reader_;
};

StageEvent event_from(const nlohmann::json& m, const std::string& stage, uint32_t generation) {
  StageEvent e;
  e.epoch = m.value("epoch", uint64_t{0}), e.seq = m.value("seq", uint64_t{0});
  e.terminal = m.value("terminal", false), e.port = m.value("port", "");
  e.stage = stage, e.worker_generation = generation;
  e.value.text = m.value("text", "");
  e.value.tokens = m.value("tokens", std::vector<int32_t>{});
  e.value.samples = m.value("samples", std::vector<float>{});
  if (m.contains("error")) e.error = Status::internal(m["error"].get<std::string>());
  e.finish_reason = m.value("finish_reason", "");
  return e;
}

class WorkerStageRunner final : public StageRunner {
 public:
  WorkerStageRunner(std::string model, const StageSpec& s, WorkerOptions o)
      : model_(std::move(model)), spec_(s), o_(std::move(o)) {}
  ~WorkerStageRunner() override {
    std::vector<std::shared_ptr<WorkerConn>> all;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (current_) current_->retire(), all.push_back(current_);
      all.insert(all.end(), retired_.begin(), retired_.end());
      current_.reset(), retired_.clear();
    }
    for (auto& c : all) c->shut(/*kill_it=*/false);
  }

  void set_hash(std::string sha) { sha256_ = std::move(sha); }

  // Spawns the next generation and waits for its ready (or its refusal). Under mu_.
  Expected<std::shared_ptr<WorkerConn>> spawn() {
    TensorPoolOptions po;
    po.name = "inputs of stage " + spec_.name;
    po.slots = std::max(2, spec_.capacity);
    ASSIGN_OR_RETURN(std::unique_ptr<TensorPool> pool, TensorPool::create(po));
    ASSIGN_OR_RETURN(WorkerProcess p, spawn_worker(o_.binary));
    auto c = std::make_shared<WorkerConn>(p, ++generation_, std::move(pool));
    const nlohmann::json hello = {{"type", "hello"},
                                  {"stage", spec_.name},
                                  {"contract", spec_.contract.str()},
                                  {"model", model_},
                                  {"sha256", sha256_},
                                  {"capacity", spec_.capacity},
                                  {"ctx", o_.run.ctx},
                                  {"engine_ctx", spec_.engine.ctx},
                                  {"max_batched_tokens", spec_.engine.max_batched_tokens},
                                  {"kv_type", spec_.engine.kv_type},
                                  {"kv_type_v", spec_.engine.kv_type_v},
                                  {"kv_budget_bytes", spec_.engine.kv_budget_bytes},
                                  {"itl_target_ms", spec_.engine.itl_target_ms},
                                  {"prefix_cache", spec_.engine.prefix_cache},
                                  {"state_checkpoints", spec_.engine.state_checkpoints},
                                  {"speculative", spec_.engine.speculative},
                                  {"draft_max", spec_.engine.draft_max},
                                  {"draft_model", spec_.engine.draft_model},
                                  {"media_begin", spec_.engine.media_begin},
                                  {"media_end", spec_.engine.media_end},
                                  {"max_tokens", o_.run.max_tokens},
                                  {"threads", o_.run.n_threads},
                                  {"vocoder_window", spec_.vocoder.window},
                                  {"vocoder_context", spec_.vocoder.context},
                                  {"vocoder_lookahead", spec_.vocoder.lookahead},
                                  {"generation", generation_},
                                  {"credits", kCredits}};
    Status st = c->send(hello);
    auto ready = st.ok() ? c->receive_ready() : Expected<nlohmann::json>(st);
    if (ready.ok() && (*ready)["type"] == "ready") {
      c->start_reader();
      return c;
    }
    c->shut(/*kill_it=*/true);
    if (ready.ok())
      return Status::invalid_argument(fmt::format("stage '{}': worker refused: {}", spec_.name,
                                                  ready->value("message", "no reason")));
    return ready.status().with_context(fmt::format("stage '{}': worker handshake", spec_.name));
  }

  Status start() {
    std::lock_guard<std::mutex> l(mu_);
    ASSIGN_OR_RETURN(current_, spawn());
    return Status();
  }

  Status run_with_params(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
                         const RequestParams* params,
                         const std::function<void(StageEvent)>& emit) override {
    return serve(epoch, inputs, params, nullptr, emit);
  }

  // A kind that streams its input (a vocoder starts on the first codes) gets it in the worker
  // as it arrives. Other stages gather theirs (a language model's prompt is needed whole).
  Status run_streaming(uint64_t epoch, StageInputs& in, const RequestParams* params,
                       const std::function<void(StageEvent)>& emit) override {
    if (!spec_.kind->streams_input) return StageRunner::run_streaming(epoch, in, params, emit);
    return serve(epoch, {}, params, &in, emit);
  }

  Status serve(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
               const RequestParams* params, StageInputs* streamed,
               const std::function<void(StageEvent)>& emit) {
    std::shared_ptr<WorkerConn> c;
    Status st;
    // A generation retired (or found dead) between choosing it and sending: the next one.
    for (int attempt = 0; !c; ++attempt) {
      ASSIGN_OR_RETURN(c, connection_for(epoch));
      if (!c->request(epoch, inputs, params, o_.run.shm_min_bytes,
                      streamed ? streamed->ports() : std::vector<std::string>{}, &st)) {
        if (attempt == 3)
          return Status::unavailable(
              fmt::format("stage '{}': no worker took request epoch {}", spec_.name, epoch));
        c.reset();
      }
    }
    CreditGate input_credits(kWorkerInputCredits);
    std::thread feeder;
    if (st.ok() && streamed)
      feeder = std::thread([&, c] { feed(*c, epoch, *streamed, input_credits); });
    if (st.ok()) st = relay(*c, epoch, emit, input_credits);
    if (feeder.joinable()) {
      input_credits.close();    // a feeder waiting for a credit gives up
      streamed->abandon_all();  // and one waiting for the next chunk
      feeder.join();
    }
    c->close(epoch);
    forget(epoch);
    if (st.ok() || st.code() != StatusCode::kUnavailable) return st;
    // The worker died (or hung) mid-request: this request ends explicitly; the next one
    // starts generation + 1.
    c->shut(/*kill_it=*/true);
    return Status::unavailable(
        fmt::format("stage '{}': worker (generation {}) ended during request epoch {}: {}",
                    spec_.name, c->generation(), epoch, st.message()));
  }

  void cancel(uint64_t epoch) override {
    std::shared_ptr<WorkerConn> c;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = serving_.find(epoch);
      if (it == serving_.end()) return;
      c = it->second;
    }
    (void)c->send({{"type", "cancel"}, {"epoch", epoch}});
  }

  Status retire() override {
    std::lock_guard<std::mutex> l(mu_);
    if (!current_) return Status();
    current_->retire();
    retired_.push_back(std::move(current_));  // reaped once it has drained
    return Status();
  }

  bool running() const override {
    std::lock_guard<std::mutex> l(mu_);
    return current_ && !current_->dead();
  }
  int64_t resident_bytes() const override {
    std::lock_guard<std::mutex> l(mu_);
    int64_t bytes = 0;
    if (current_ && !current_->dead()) bytes += read_rss_tree(current_->pid()).anon_file();
    for (const auto& c : retired_)
      if (!c->dead()) bytes += read_rss_tree(c->pid()).anon_file();
    return bytes;
  }
  uint32_t generation() const override {
    std::lock_guard<std::mutex> l(mu_);
    return generation_;
  }
  nlohmann::json transport_stats() const override {
    std::lock_guard<std::mutex> l(mu_);
    return current_ ? current_->transport_stats() : nlohmann::json::object();
  }
  std::string placement() const override {
    std::lock_guard<std::mutex> l(mu_);
    return current_ && !current_->dead() ? fmt::format("worker pid {} cpu", current_->pid())
                                         : "worker (not running)";
  }

 private:
  // The live generation (spawning the next one when the last died or retired), with the
  // request's inbox open on it.
  Expected<std::shared_ptr<WorkerConn>> connection_for(uint64_t epoch) {
    std::lock_guard<std::mutex> l(mu_);
    reap_retired();
    if (current_ && current_->retiring()) retired_.push_back(std::move(current_));
    if (!current_ || current_->dead()) {
      ASSIGN_OR_RETURN(current_, spawn());
    }
    serving_[epoch] = current_;
    return current_;
  }
  void forget(uint64_t epoch) {
    std::lock_guard<std::mutex> l(mu_);
    serving_.erase(epoch);
  }
  void reap_retired() {  // under mu_: retired generations that have drained are reaped
    for (auto it = retired_.begin(); it != retired_.end();) {
      if ((*it)->finished_retiring()) {
        (*it)->shut(/*kill_it=*/false);
        it = retired_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Sends each chunk of the streamed ports as it arrives, within the input credits, then
  // each port's end (with the producer's error, if it failed).
  static void feed(WorkerConn& c, uint64_t epoch, StageInputs& in, CreditGate& credits) {
    for (const std::string& port : in.ports()) {
      for (;;) {
        auto chunk = in.next(port);
        nlohmann::json m = {{"epoch", epoch}, {"port", port}};
        if (!chunk.ok() || !*chunk) {
          m["type"] = "input_end";
          if (!chunk.ok()) m["error"] = chunk.status().to_string();
          (void)c.send(m);
          if (!chunk.ok()) return;
          break;
        }
        if (!credits.acquire(kEventTimeout)) return;  // the request has ended
        m["type"] = "input";
        m["text"] = (*chunk)->text;
        m["tokens"] = (*chunk)->tokens;
        if (!c.send(m).ok()) return;  // the worker is gone: relay reports it
      }
    }
  }

  // Passes the worker's events on, acknowledging each once consumed (a consumer that
  // stalls in emit() stalls the worker at its credits); input acks return input credits.
  Status relay(WorkerConn& c, uint64_t epoch, const std::function<void(StageEvent)>& emit,
               CreditGate& input_credits) {
    for (;;) {
      auto m = c.next(epoch);
      if (!m.ok()) return Status::unavailable(m.status().message());
      const std::string type = m->value("type", "");
      if (type == "input_ack") {
        (void)input_credits.acknowledge(m->value("n", 1));
        continue;
      }
      if (type == "done") return Status();
      if (type == "failed")
        return m->value("code", "") == "cancelled"
                   ? Status::cancelled(m->value("error", "cancelled"))
                   : Status::internal(m->value("error", "the stage failed"));
      if (type != "event") continue;
      StageEvent e = event_from(*m, spec_.name, c.generation());
      if (m->contains("tensor")) RETURN_IF_ERROR(c.take_tensor((*m)["tensor"], e.value));
      emit(std::move(e));
      // A retiring worker exits right after its last "done": an ack that finds the socket
      // closed is not an error by itself. If the worker died before finishing, next()
      // reports it once the inbox is empty.
      (void)c.send({{"type", "ack"}, {"epoch", epoch}, {"n", 1}});
    }
  }

  std::string model_, sha256_;
  StageSpec spec_;
  WorkerOptions o_;
  mutable std::mutex mu_;
  std::shared_ptr<WorkerConn> current_;
  std::vector<std::shared_ptr<WorkerConn>> retired_;         // draining, reaped when drained
  std::map<uint64_t, std::shared_ptr<WorkerConn>> serving_;  // by epoch
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

Expected<std::unique_ptr<StageRunner>> start_in_worker(const std::string& model_path,
                                                       const StageSpec& s,
                                                       const PipelineRunOptions& o) {
  return start_worker_stage(model_path, s, WorkerOptions{o.worker_binary, o});
}

}  // namespace edge::pipeline
