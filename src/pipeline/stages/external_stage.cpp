// The pipeline's side of an external stage (external.openai.text.v1 and .multimodal.v1):
// requests as SSE streams,
// cancellation, the backend's death and its next generation, retirement.
#include "pipeline/stages/external_stage.h"

#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "core/process_rss.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/stages/external_backend.h"
#include "pipeline/stages/external_request.h"

namespace edge::pipeline {

using nlohmann::json;

bool SseReader::feed(std::string_view bytes,
                     const std::function<bool(const std::string&)>& on_data) {
  for (char c : bytes) {
    if (c != '\n') {
      line_ += c;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.empty()) {  // a blank line ends the event
      if (has_data_) {
        std::string data;
        data.swap(data_);
        has_data_ = false;
        if (!on_data(data)) return false;
      }
    } else if (line_.rfind("data:", 0) == 0) {
      std::string_view v(line_);
      v.remove_prefix(5);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (has_data_) data_ += '\n';
      data_.append(v);
      has_data_ = true;
    }  // comments (":...") and other fields (event:, id:, retry:) carry nothing we use
    line_.clear();
  }
  return true;
}

namespace {

std::string string_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The token ids a chunk's choice carries, in either of the forms llama.cpp uses.
std::vector<int32_t> chunk_tokens(const json& choice) {
  std::vector<int32_t> ids;
  auto t = choice.find("tokens");
  if (t != choice.end() && t->is_array()) {
    for (const json& id : *t)
      if (id.is_number_integer()) ids.push_back(id.get<int32_t>());
    return ids;
  }
  auto lp = choice.find("logprobs");
  if (lp == choice.end() || !lp->is_object()) return ids;
  auto content = lp->find("content");
  if (content == lp->end() || !content->is_array()) return ids;
  for (const json& entry : *content) {
    auto id = entry.is_object() ? entry.find("id") : entry.end();
    if (id != entry.end() && id->is_number_integer()) ids.push_back(id->get<int32_t>());
  }
  return ids;
}

}  // namespace

Expected<CompletionDelta> parse_completion_chunk(const std::string& payload) {
  const json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::invalid_format("stream chunk is not a JSON object: " + payload.substr(0, 200));
  CompletionDelta d;
  if (auto e = j.find("error"); e != j.end()) {
    d.error = e->is_object() ? string_field(*e, "message") : e->dump();
    if (d.error.empty()) d.error = e->dump();
    return d;
  }
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array())
    return Status::invalid_format("stream chunk without choices: " + payload.substr(0, 200));
  if (choices->empty()) return d;  // e.g. a usage chunk
  const json& c = (*choices)[0];
  if (!c.is_object()) return Status::invalid_format("stream chunk choice is not an object");
  d.text = string_field(c, "text");
  if (auto delta = c.find("delta"); delta != c.end() && delta->is_object())  // a chat chunk
    d.text = string_field(*delta, "content");
  d.tokens = chunk_tokens(c);
  d.finish_reason = string_field(c, "finish_reason");
  return d;
}

namespace {

constexpr auto kStreamTimeout = std::chrono::minutes(10);  // as a worker's event timeout
constexpr auto kStopGrace = std::chrono::seconds(15);      // ours drains up to 10 s
constexpr auto kDeathWait = std::chrono::seconds(1);       // a dropped stream: did it die?
constexpr size_t kMaxErrorBody = 4096;
constexpr size_t kMaxEarlyCancels = 4096;

// The backend a request was sent to.
struct Lease {
  int port = 0;
  pid_t pid = -1;
  uint32_t generation = 0;
};

struct InFlight {
  std::atomic<bool> cancelled{false};
  httplib::Client* client = nullptr;  // while its request is being sent (flights_mu_)
};

// One request's stream: turns chunks into the stage's events, numbered per port.
struct Stream {
  std::string stage;
  uint64_t epoch = 0;
  uint32_t generation = 0;
  const std::function<void(StageEvent)>* emit = nullptr;
  uint64_t seq = 0;
  int http_status = 0;
  std::string error_body;  // of a non-200 answer
  bool ended = false;      // the terminal events are out
  Status failure;          // an error reported inside the stream, or an unreadable chunk
  SseReader sse;

  void emit_pair(const std::string& text, const std::vector<int32_t>& tokens, bool terminal,
                 const Status& error, const std::string& finish_reason = "") {
    for (const char* port : {"tokens", "text"}) {
      StageEvent e;
      e.epoch = epoch, e.seq = seq, e.terminal = terminal, e.worker_generation = generation;
      e.stage = stage, e.port = port, e.error = error, e.finish_reason = finish_reason;
      if (std::string_view(port) == "tokens")
        e.value.tokens = tokens;
      else
        e.value.text = text;
      (*emit)(std::move(e));
    }
    ++seq;
    ended = ended || terminal;
  }

  bool on_data(const std::string& payload) {
    if (ended) return true;  // [DONE] or a usage chunk after the finish
    if (payload == "[DONE]") {
      emit_pair("", {}, true, Status());
      return true;
    }
    auto d = parse_completion_chunk(payload);
    if (!d.ok()) {
      failure = d.status();
      return false;
    }
    if (!d->error.empty()) {
      failure = Status::internal("the backend reported: " + d->error);
      return false;
    }
    const bool finished = !d->finish_reason.empty();
    if (finished || !d->text.empty() || !d->tokens.empty())
      emit_pair(d->text, d->tokens, finished, Status(), d->finish_reason);
    return true;
  }

  // Ends the request in error: terminal events carrying it (unless the end is already out).
  Status end_with(Status st) {
    if (!ended) emit_pair("", {}, true, st);
    return st;
  }
};

class ExternalStageRunner final : public StageRunner {
 public:
  ExternalStageRunner(const StageSpec& s, BackendLaunch launch, int32_t max_tokens)
      : name_(s.name),
        device_(s.device),
        policy_(s.placement_policy),
        launch_(std::move(launch)),
        request_{s.name, launch_.flavour, max_tokens, !launch_.projector.empty()} {}
  ~ExternalStageRunner() override {
    std::lock_guard<std::mutex> l(mu_);
    if (backend_) backend_->stop(kStopGrace);
  }

  Status start() {
    std::lock_guard<std::mutex> l(mu_);
    return spawn_locked();
  }

  Status run_with_params(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
                         const RequestParams* params,
                         const std::function<void(StageEvent)>& emit) override {
    ASSIGN_OR_RETURN(ExternalRequest out, external_request(request_, inputs, params));
    ASSIGN_OR_RETURN(Lease b, lease());
    std::shared_ptr<InFlight> f = enter(epoch);
    Stream s;
    s.stage = name_, s.epoch = epoch, s.generation = b.generation, s.emit = &emit;
    const httplib::Error err = send(b, std::move(out), *f, s);
    leave(epoch);
    if (s.ended && s.failure.ok()) return Status();  // all out, even if cancelled since
    if (f->cancelled)
      return s.end_with(Status::cancelled(
          fmt::format("stage '{}': request epoch {} was cancelled", name_, epoch)));
    if (s.http_status != 0 && s.http_status != 200) return s.end_with(http_error(s, epoch));
    if (!s.failure.ok())
      return s.end_with(s.failure.with_context(
          fmt::format("stage '{}': request epoch {} (external pid {})", name_, epoch, b.pid)));
    return s.end_with(backend_lost(b, epoch, httplib::to_string(err)));
  }

  void cancel(uint64_t epoch) override {
    std::lock_guard<std::mutex> l(flights_mu_);
    auto it = flights_.find(epoch);
    if (it == flights_.end()) {
      if (cancelled_early_.size() < kMaxEarlyCancels) cancelled_early_.insert(epoch);
      return;
    }
    it->second->cancelled = true;
    if (it->second->client) it->second->client->stop();  // the blocked read returns now
  }

  // Ours drains on SIGTERM: the streams in flight finish; the next request starts the next
  // generation.
  Status retire() override {
    std::lock_guard<std::mutex> l(mu_);
    if (backend_) backend_->stop(kStopGrace);
    backend_.reset();
    return Status();
  }

  int64_t resident_bytes() const override {
    std::lock_guard<std::mutex> l(mu_);
    return backend_ ? read_rss_tree(backend_->pid()).anon_file() : 0;
  }
  std::string placement() const override {
    std::lock_guard<std::mutex> l(mu_);
    return backend_ ? fmt::format("external pid {}: {}", backend_->pid(), backend_->proof())
                    : "external (not running)";
  }
  // False once the backend has gone (reaped here); the next run() starts another.
  bool running() const override {
    std::lock_guard<std::mutex> l(mu_);
    return backend_ && backend_->running();
  }
  uint32_t generation() const override {
    std::lock_guard<std::mutex> l(mu_);
    return generation_;
  }

 private:
  // Every generation's placement is checked against the file's: a stage that requires an
  // igpu or npu and whose backend reports the cpu, or fewer layers offloaded than it has,
  // does not serve (its backend is stopped), naming both.
  Status spawn_locked() {
    auto b = BackendProcess::start(launch_, ++generation_);
    if (!b.ok()) return b.status();
    const std::string actual = device_of_proof((*b)->proof());
    if (device_ != DeviceClass::kCpu && actual != "gpu" && policy_ == PlacementPolicy::kRequire) {
      const std::string proof = (*b)->proof();
      const int pid = (*b)->pid();
      (*b)->stop(kStopGrace);
      return Status::unsupported(fmt::format(
          "stage '{}': requested placement {}, but the backend (pid {}) reports {} "
          "(placement_policy require; prefer would run it there and record the difference)",
          name_, device_class_name(device_), pid, proof));
    }
    backend_ = std::move(*b);
    return Status();
  }

  std::string backend_version() const override {
    std::lock_guard<std::mutex> l(mu_);
    return backend_ ? backend_->version() : "not running";
  }

  std::string actual_device() const override {
    std::lock_guard<std::mutex> l(mu_);
    return backend_ ? device_of_proof(backend_->proof()) : "not running";
  }

  // The running backend; a new generation when the last one has gone.
  Expected<Lease> lease() {
    std::lock_guard<std::mutex> l(mu_);
    if (backend_ && !backend_->running()) backend_.reset();  // died between requests
    if (!backend_) RETURN_IF_ERROR(spawn_locked());
    return Lease{backend_->port(), backend_->pid(), backend_->generation()};
  }

  std::shared_ptr<InFlight> enter(uint64_t epoch) {
    auto f = std::make_shared<InFlight>();
    std::lock_guard<std::mutex> l(flights_mu_);
    if (cancelled_early_.erase(epoch)) f->cancelled = true;
    flights_[epoch] = f;
    return f;
  }
  void leave(uint64_t epoch) {
    std::lock_guard<std::mutex> l(flights_mu_);
    flights_.erase(epoch);
  }

  // The request, its answer streamed into `s`. Cancellable through f.client.
  httplib::Error send(const Lease& b, ExternalRequest out, InFlight& f, Stream& s) {
    httplib::Client cli("127.0.0.1", b.port);
    cli.set_connection_timeout(5, 0);
    cli.set_read_timeout(std::chrono::duration_cast<std::chrono::seconds>(kStreamTimeout).count(),
                         0);
    cli.set_keep_alive(false);
    {
      std::lock_guard<std::mutex> l(flights_mu_);
      if (f.cancelled) return httplib::Error::Canceled;
      f.client = &cli;
    }
    httplib::Request req;
    req.method = "POST";
    req.path = std::move(out.path);
    req.headers = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
    req.body = std::move(out.body);
    req.response_handler = [&](const httplib::Response& r) {
      s.http_status = r.status;
      return !f.cancelled;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      if (f.cancelled) return false;
      if (s.http_status != 200) {
        const size_t room = kMaxErrorBody - std::min(kMaxErrorBody, s.error_body.size());
        s.error_body.append(data, std::min(n, room));
        return true;
      }
      // Checked per event too: one read may hold the rest of the stream.
      return s.sse.feed(std::string_view(data, n), [&](const std::string& payload) {
        return !f.cancelled && s.on_data(payload);
      });
    };
    const httplib::Result r = cli.send(req);
    std::lock_guard<std::mutex> l(flights_mu_);
    f.client = nullptr;
    return r.error();
  }

  Status http_error(const Stream& s, uint64_t epoch) const {
    std::string why = s.error_body;
    const json j = json::parse(s.error_body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_object())
      why = string_field(j["error"], "message");
    const std::string msg = fmt::format(
        "stage '{}': the external backend answered HTTP {} to "
        "request epoch {}: {}",
        name_, s.http_status, epoch, why);
    return s.http_status >= 500 ? Status::unavailable(msg) : Status::invalid_argument(msg);
  }

  // The stream ended without finishing: the backend died (reaped; the next request starts
  // generation + 1), or the connection alone failed.
  Status backend_lost(const Lease& b, uint64_t epoch, const std::string& transport) {
    std::lock_guard<std::mutex> l(mu_);
    if (backend_ && backend_->generation() == b.generation && backend_->wait_exit(kDeathWait)) {
      const Status st = Status::unavailable(fmt::format(
          "stage '{}': external backend pid {} (generation {}) ended during request epoch {} "
          "({}); last output:\n{}",
          name_, b.pid, b.generation, epoch, backend_->exit_description(),
          backend_->output_tail(10)));
      backend_.reset();
      return st;
    }
    return Status::unavailable(fmt::format(
        "stage '{}': the stream from external backend pid {} (generation {}) ended before "
        "request epoch {} finished: {}",
        name_, b.pid, b.generation, epoch, transport));
  }

  const std::string name_;
  const DeviceClass device_;
  const PlacementPolicy policy_;
  const BackendLaunch launch_;
  const ExternalRequestSettings request_;
  mutable std::mutex mu_;  // the backend: lease, death, retirement, measurements
  std::unique_ptr<BackendProcess> backend_;
  uint32_t generation_ = 0;
  std::mutex flights_mu_;
  std::map<uint64_t, std::shared_ptr<InFlight>> flights_;
  std::set<uint64_t> cancelled_early_;  // cancel() before run(): refused when it comes
};

const Artifact* artifact_with_role(const StageSpec& s, const std::string& role) {
  for (const Artifact& a : s.artifacts)
    if (a.role == role) return &a;
  return nullptr;
}

}  // namespace

Expected<std::unique_ptr<StageRunner>> start_external_stage(const PipelineSpec& p,
                                                            const StageSpec& s,
                                                            const PipelineRunOptions& o) {
  const bool media = s.backend == kOpenAiMultimodalBackend;
  if (s.backend != kOpenAiTextBackend && !media)
    return Status::unsupported(fmt::format(
        "stage '{}': external backend '{}' is not built ({} and {} are)", s.name, s.backend,
        kOpenAiTextBackend, kOpenAiMultimodalBackend));
  const ContractRef served = media ? ContractRef{"chat.generate", 1} : ContractRef{"text.generate", 1};
  if (s.contract != served)
    return Status::unsupported(fmt::format("stage '{}': {} serves {}, not {}", s.name, s.backend,
                                           served.str(), s.contract.str()));
  const Artifact* server = artifact_with_role(s, "server");
  const Artifact* model = artifact_with_role(s, "model");
  const Artifact* projector = artifact_with_role(s, "projector");
  if (!server || !model || (media && !projector))
    return Status::invalid_argument(fmt::format(
        "stage '{}': an {} stage needs a 'server' artifact (the binary), a 'model' artifact{}",
        s.name, s.backend, media ? " and a 'projector' artifact (the media encoders, --mmproj)" : ""));
  if (projector && !media)
    return Status::invalid_argument(fmt::format(
        "stage '{}': a 'projector' artifact needs backend {}", s.name, kOpenAiMultimodalBackend));
  BackendLaunch l;
  l.stage = s.name;
  l.binary = artifact_path(p, *server);
  l.model = artifact_path(p, *model);
  if (projector) l.projector = artifact_path(p, *projector);
  auto flavour = server_flavour(s.server_flavour, l.binary);
  if (!flavour.ok()) return flavour.status().with_context("stage '" + s.name + "'");
  l.flavour = *flavour;
  l.ctx = s.engine.ctx > 0 ? s.engine.ctx : o.ctx;
  l.threads = o.n_threads;
  l.capacity = s.capacity;
  l.engine = s.engine;
  l.extra_args = s.server_args;
  auto r = std::make_unique<ExternalStageRunner>(s, std::move(l), o.max_tokens);
  RETURN_IF_ERROR(r->start());
  return std::unique_ptr<StageRunner>(std::move(r));
}

const StageKind kExternalKind{.name = "external", .start_external = start_external_stage};

}  // namespace edge::pipeline
