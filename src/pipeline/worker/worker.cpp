// The worker's side of worker.h: handshake, then requests (each on its own thread, their
// events within per-request credits) until retire or end of file.
#include "pipeline/worker/worker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "pipeline/graph/artifact.h"
#include "pipeline/graph/credits.h"
#include "pipeline/graph/stage_kind.h"
#include "pipeline/worker/port_tensor.h"
#include "pipeline/worker/request_params_json.h"
#include "pipeline/worker/shm_tensor.h"
#include "pipeline/worker/worker_protocol.h"

namespace edge::pipeline {

namespace {

constexpr auto kForever = std::chrono::hours(24 * 365);

// "text.generate@1, ...": every contract version a kind that runs in a worker implements.
std::string worker_contracts() {
  std::vector<std::string> refs;
  for (const StageKind* k : stage_kinds())
    for (const Contract& c : builtin_contracts())
      if (k->start_in_worker && k->implements(c.ref)) refs.push_back(c.ref.str());
  return join_with_and(refs);
}

// Checks the hello and starts the stage; the error names what the pipeline asked for.
Expected<std::unique_ptr<StageRunner>> start_from_hello(const nlohmann::json& h) {
  ASSIGN_OR_RETURN(ContractRef ref, parse_contract_ref(h.value("contract", "")));
  const StageKind* kind = find_contract(ref) ? worker_stage_kind(ref) : nullptr;
  if (!kind)
    return Status::unsupported(
        fmt::format("this worker does not implement contract {} (it implements {})", ref.str(),
                    worker_contracts()));
  const std::string model = h.value("model", "");
  const std::string pinned = h.value("sha256", "");
  if (!pinned.empty()) {
    ASSIGN_OR_RETURN(std::string sha, sha256_file(model));
    if (sha != pinned)
      return Status::invalid_argument(fmt::format(
          "{} (sha256 {}) differs from the declared artifact hash {}", model, sha, pinned));
  }
  StageSpec s;
  s.name = h.value("stage", "worker");
  s.kind = kind;
  s.contract = ref;
  s.capacity = h.value("capacity", 1);
  s.engine.ctx = h.value("engine_ctx", int64_t{0});
  s.engine.max_batched_tokens = h.value("max_batched_tokens", int64_t{512});
  s.engine.kv_type = h.value("kv_type", "f16");
  s.engine.kv_type_v = h.value("kv_type_v", "");
  s.engine.kv_budget_bytes = h.value("kv_budget_bytes", int64_t{0});
  s.engine.itl_target_ms = h.value("itl_target_ms", 0.0);
  s.engine.prefix_cache = h.value("prefix_cache", true);
  s.engine.state_checkpoints = h.value("state_checkpoints", 4);
  s.engine.speculative = h.value("speculative", std::string());
  s.engine.draft_max = h.value("draft_max", 4);
  s.engine.draft_model = h.value("draft_model", std::string());
  s.engine.media_begin = h.value("media_begin", std::string());
  s.engine.media_end = h.value("media_end", std::string());
  PipelineRunOptions o;
  o.ctx = h.value("ctx", int64_t{4096});
  o.max_tokens = h.value("max_tokens", 64);
  o.n_threads = h.value("threads", 0);
  s.vocoder.window = h.value("vocoder_window", 0);
  s.vocoder.context = h.value("vocoder_context", 0);
  s.vocoder.lookahead = h.value("vocoder_lookahead", 0);
  return kind->start(model, s, o);
}

// The requests this worker runs: their threads and credit gates, by epoch.
class WorkerLoop {
 public:
  WorkerLoop(int fd, StageRunner& runner, int32_t credits)
      : fd_(fd), runner_(runner), credits_(credits) {
    TensorPoolOptions po;
    po.name = "audio of the worker";
    po.slots = credits + 1;  // the events in flight, each holding at most one buffer
    po.slot_bytes = 256 << 10;
    auto pool = TensorPool::create(po);
    if (pool.ok()) outputs_ = std::move(*pool);  // without it PCM goes inline as JSON
  }
  ~WorkerLoop() {
    if (outputs_) outputs_->close();  // a request waiting for a buffer gives up
    stop_all();
  }

  // The pipeline has copied the PCM of one event: the buffer is free again.
  Status release_output(const nlohmann::json& m) {
    return outputs_ ? outputs_->release(m) : Status::invalid_argument("no output buffers");
  }

  Status send(const nlohmann::json& m) {
    std::lock_guard<std::mutex> l(send_mu_);
    return send_message(fd_, m);
  }

  // A new request on its own thread (refused while retiring).
  void start(const nlohmann::json& req) {
    const uint64_t epoch = req.value("epoch", uint64_t{0});
    std::lock_guard<std::mutex> l(mu_);
    reap_finished();
    if (retiring_) {
      (void)send({{"type", "failed"}, {"epoch", epoch}, {"error", "the worker is retiring"}});
      return;
    }
    auto gate = std::make_shared<CreditGate>(credits_);
    gates_[epoch] = gate;
    auto stream = open_stream(epoch, req);
    threads_[epoch] = std::thread([this, req, gate, epoch, stream] {
      serve(req, *gate, stream.get());
      std::lock_guard<std::mutex> l2(mu_);
      gates_.erase(epoch);
      streams_.erase(epoch);
      finished_.push_back(epoch);
      cv_.notify_all();
    });
  }

  void ack(uint64_t epoch, int32_t n) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = gates_.find(epoch);
    if (it != gates_.end()) (void)it->second->acknowledge(n);
  }

  void cancel(uint64_t epoch) {
    runner_.cancel(epoch);
    std::lock_guard<std::mutex> l(mu_);
    auto it = gates_.find(epoch);
    if (it != gates_.end()) it->second->close();  // an emit waiting for credit gives up
    auto st = streams_.find(epoch);
    if (st != streams_.end()) st->second->stop = true;  // a wait for input gives up
  }

  // A chunk of a streamed input ("input"), or its end ("input_end", with the producer's
  // error if it failed). The pipeline sends chunks within the input credits, so the
  // channel always has room.
  void input(const nlohmann::json& m, bool end) {
    std::shared_ptr<Channel> ch;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = streams_.find(m.value("epoch", uint64_t{0}));
      if (it == streams_.end()) return;  // finished or cancelled meanwhile
      auto p = it->second->ports.find(m.value("port", ""));
      if (p == it->second->ports.end()) return;
      ch = p->second;
    }
    if (end) {
      ch->close(m.contains("error") ? Status::cancelled(m["error"].get<std::string>()) : Status());
      return;
    }
    PortValue v;
    v.text = m.value("text", "");
    v.tokens = m.value("tokens", std::vector<int32_t>{});
    const std::atomic<bool> never{false};
    (void)ch->push(std::move(v), never);
  }

  void retire() {
    std::lock_guard<std::mutex> l(mu_);
    retiring_ = true;
  }
  // Retiring and nothing left in flight: time to exit.
  bool drained() {
    std::lock_guard<std::mutex> l(mu_);
    return retiring_ && gates_.empty();
  }
  bool retiring() {
    std::lock_guard<std::mutex> l(mu_);
    return retiring_;
  }

  // The pipeline is gone: cancel everything and wait for the threads.
  void stop_all() {
    std::vector<uint64_t> epochs;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& [e, g] : gates_) epochs.push_back(e);
    }
    for (uint64_t e : epochs) cancel(e);
    std::map<uint64_t, std::thread> threads;
    {
      std::lock_guard<std::mutex> l(mu_);
      threads.swap(threads_);  // joined unlocked: each takes mu_ once more as it ends
    }
    for (auto& [e, t] : threads)
      if (t.joinable()) t.join();
  }

 private:
  void reap_finished() {  // under mu_
    for (uint64_t e : finished_) {
      auto it = threads_.find(e);
      if (it != threads_.end() && it->second.joinable()) it->second.join();
      if (it != threads_.end()) threads_.erase(it);
    }
    finished_.clear();
  }

  // A request's streamed inputs: a channel per port, fed by input messages; each chunk the
  // stage takes returns an input credit to the pipeline ("input_ack").
  struct Stream {
    std::map<std::string, std::shared_ptr<Channel>> ports;
    std::atomic<bool> stop{false};
  };
  std::shared_ptr<Stream> open_stream(uint64_t epoch, const nlohmann::json& req) {  // under mu_
    if (!req.contains("streamed")) return nullptr;
    auto st = std::make_shared<Stream>();
    for (const auto& port : req["streamed"]) {
      auto ch = std::make_shared<Channel>(kWorkerInputCredits);
      ch->set_on_pop([this, epoch] {
        (void)send({{"type", "input_ack"}, {"epoch", epoch}, {"n", 1}});
      });
      st->ports[port.get<std::string>()] = ch;
    }
    streams_[epoch] = st;
    return st;
  }

  // Runs one request; each event waits for a credit of its request (acks return them).
  void serve(const nlohmann::json& req, CreditGate& gate, Stream* stream) {
    const uint64_t epoch = req.value("epoch", uint64_t{0});
    std::map<std::string, PortValue> inputs;
    Status parsed;
    try {
      const nlohmann::json in = req.value("inputs", nlohmann::json::object());
      for (const auto& [port, v] : in.items()) {
        if (!v.is_object()) continue;
        PortValue& pv = inputs[port];
        pv.text = v.value("text", "");
        if (v.contains("tensor"))
          parsed = take_tensor(v["tensor"], pv);
        else
          pv.tokens = v.value("tokens", std::vector<int32_t>{});
        if (!parsed.ok()) break;
      }
    } catch (const nlohmann::json::exception& e) {
      parsed = Status::invalid_argument(e.what());
    }
    std::optional<RequestParams> params;
    if (parsed.ok() && req.contains("params")) {
      auto p = request_params_from_json(req["params"]);
      if (p.ok()) params = *p;
      parsed = p.status();
    }
    if (!parsed.ok()) {
      (void)send({{"type", "failed"}, {"epoch", epoch}, {"error", parsed.to_string()}});
      return;
    }
    Status link;
    auto emit = [&](StageEvent e) {
      if (!link.ok() || !gate.acquire(kForever)) return;  // closed: cancelled
      nlohmann::json m = {{"type", "event"},         {"epoch", e.epoch}, {"seq", e.seq},
                          {"terminal", e.terminal},  {"port", e.port},   {"text", e.value.text},
                          {"tokens", e.value.tokens}};
      link = attach_tensor(e.value, m);
      if (!e.error.ok()) m["error"] = e.error.to_string();
      if (!e.finish_reason.empty()) m["finish_reason"] = e.finish_reason;
      if (link.ok()) link = send(m);
    };
    const RequestParams* p = params ? &*params : nullptr;
    Status st;
    if (stream) {  // whole inputs as closed channels beside the streamed ones
      std::map<std::string, std::shared_ptr<Channel>> ports = stream->ports;
      for (auto& [port, v] : inputs) {
        auto ch = std::make_shared<Channel>(1);
        (void)ch->push(std::move(v), stream->stop);
        ch->close();
        ports.emplace(port, ch);
      }
      StageInputs in(std::move(ports), stream->stop);
      st = runner_.run_streaming(epoch, in, p, emit);
      in.abandon_all();
    } else {
      st = runner_.run_with_params(epoch, inputs, p, emit);
    }
    if (!link.ok()) return;  // the pipeline is gone
    if (st.ok())
      (void)send({{"type", "done"}, {"epoch", epoch}});
    else
      (void)send({{"type", "failed"},
                  {"epoch", epoch},
                  {"code", st.code() == StatusCode::kCancelled ? "cancelled" : "error"},
                  {"error", st.to_string()}});
  }

  // The event's array (audio PCM, embeddings: port_tensor.h) into a shared buffer
  // (announced with its memfd on first use), its descriptor into the event; inline JSON
  // samples when there is no pool.
  Status attach_tensor(const PortValue& v, nlohmann::json& m) {
    // A value the event cannot carry is the request's error, not the link's.
    auto t = port_tensor(v);
    if (!t.ok()) return m["error"] = t.status().to_string(), Status();
    if (!*t || !v.tokens.empty()) return Status();  // tokens go inline in the event
    if (!outputs_) {
      if (v.samples.empty())
        return m["error"] = "the worker has no shared buffers for its output", Status();
      m["samples"] = v.samples;
      return Status();
    }
    ASSIGN_OR_RETURN(TensorSlot slot,
                     outputs_->acquire((*t)->bytes.size(), std::chrono::seconds(30)));
    const PortTensor& pt = **t;
    std::memcpy(slot.data.data(), pt.bytes.data(), pt.bytes.size());
    ASSIGN_OR_RETURN(PublishedTensor p, outputs_->publish(slot, pt.dtype, pt.shape));
    if (p.announce) {
      const int fds[1] = {p.announce_fd};
      std::lock_guard<std::mutex> l(send_mu_);
      RETURN_IF_ERROR(send_message_with_fds(fd_, *p.announce, fds));
    }
    m["tensor"] = p.descriptor;
    return Status();
  }

  // A port value's array from a shared tensor: copied out, then the buffer is released to
  // the pipeline (which reuses it only after this release).
  Status take_tensor(const nlohmann::json& descriptor, PortValue& out) {
    std::lock_guard<std::mutex> l(mapper_mu_);
    ASSIGN_OR_RETURN(SharedTensor t, mapper_.view(descriptor));
    const Status st = set_port_tensor(t, out);
    ASSIGN_OR_RETURN(nlohmann::json release, mapper_.release(t.buffer));
    RETURN_IF_ERROR(send(release));
    return st;
  }

 public:
  // A buffer the pipeline announces (its memfd came with the message).
  Status announce(const nlohmann::json& msg, std::vector<UniqueFd> fds) {
    std::lock_guard<std::mutex> l(mapper_mu_);
    return mapper_.add(msg, std::move(fds));
  }

 private:
  const int fd_;
  StageRunner& runner_;
  std::mutex mapper_mu_;
  TensorMapper mapper_{"worker inputs"};
  std::unique_ptr<TensorPool> outputs_;  // audio PCM to the pipeline
  const int32_t credits_;
  std::mutex send_mu_;  // one writer at a time on the socket
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, std::shared_ptr<CreditGate>> gates_;
  std::map<uint64_t, std::shared_ptr<Stream>> streams_;
  std::map<uint64_t, std::thread> threads_;
  std::vector<uint64_t> finished_;
  bool retiring_ = false;
};

}  // namespace

int run_worker(int fd) {
  auto hello = receive_message(fd, std::chrono::seconds(30));
  if (!hello.ok() || (*hello)["type"] != "hello") return 2;
  auto runner = start_from_hello(*hello);
  if (!runner.ok()) {
    (void)send_message(fd, {{"type", "error"}, {"message", runner.status().to_string()}});
    return 2;
  }
  WorkerLoop loop(fd, **runner, std::max(1, hello->value("credits", 16)));
  if (!loop.send({{"type", "ready"},
                  {"contract", (*hello)["contract"]},
                  {"pid", getpid()},
                  {"generation", hello->value("generation", 1)},
                  {"placement", "cpu"}})
           .ok())
    return 1;
  for (;;) {
    if (loop.drained()) return 0;  // retired and every request finished
    // While retiring, look up every 50 ms to notice the last request finishing.
    auto got =
        receive_message_with_fds(fd, loop.retiring() ? std::chrono::milliseconds(50) : kForever);
    Expected<nlohmann::json> msg = got.ok() ? Expected<nlohmann::json>(std::move(got->msg))
                                            : Expected<nlohmann::json>(got.status());
    if (!msg.ok()) {
      if (msg.status().code() == StatusCode::kDeadlineExceeded) continue;
      loop.stop_all();  // EOF: the pipeline is gone
      return msg.status().code() == StatusCode::kUnavailable ? 0 : 1;
    }
    try {  // a field of the wrong type is the pipeline's bug: stop, do not guess
      const std::string type = msg->value("type", "");
      const uint64_t epoch = msg->value("epoch", uint64_t{0});
      if (type == "announce") {
        if (!loop.announce(*msg, std::move(got->fds)).ok()) return 1;  // a broken pipeline
      } else if (type == "request")
        loop.start(*msg);
      else if (type == "input" || type == "input_end")
        loop.input(*msg, type == "input_end");
      else if (type == "ack")
        loop.ack(epoch, msg->value("n", 0));
      else if (type == "cancel")
        loop.cancel(epoch);
      else if (type == "release") {                     // the pipeline has copied an event's PCM
        if (!loop.release_output(*msg).ok()) return 1;  // a broken pipeline
      } else if (type == "retire")
        loop.retire();
      else
        return 1;
    } catch (const nlohmann::json::exception&) {
      return 1;
    }
  }
}

}  // namespace edge::pipeline
