#include "pipeline/graph/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <optional>
#include <random>
#include <thread>

#include <edge_build_info.h>

#include "core/process_rss.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/plan.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

// One request in flight: its thread runs the stages; the caller reads what reaches the
// graph's outputs from `queue` (bounded by stream_high_water while the request runs).
struct PipelineRuntime::Request {
  uint64_t epoch = 0;
  std::map<std::string, PortValue> inputs;
  std::optional<RequestParams> params;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<StageEvent> queue;
  int32_t high_water = 0;  // most events that waited at once
  bool finished = false;   // the end_of_request event is queued
  std::atomic<bool> cancelled{false};
  std::atomic<int> stage_index{-1};  // >= 0 once its stages have started
  std::thread thread;
};

namespace {

const Artifact* model_artifact(const StageSpec& s) {
  for (const Artifact& a : s.artifacts)
    if (a.role == "model") return &a;
  return nullptr;
}

uint64_t random_token() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

PipelineRuntime::PipelineRuntime(const PipelineSpec& spec, RamLedger& ledger,
                                 const PipelineRunOptions& o)
    : spec_(spec), ledger_(ledger), options_(o), token_(random_token()) {}

Status PipelineRuntime::start_stage(const StageSpec& s) {
  const PipelineRunOptions& o = options_;
  const StageKind& kind = *s.kind;
  if (!kind.runs_in(s.placement))
    return Status::unsupported(
        fmt::format("stage '{}': {} stages placed {} cannot run yet ({} can)", s.name, kind.name,
                    placement_name(s.placement), stage_kind_placements()));
  PipelinePlanOptions po;
  po.ctx = o.ctx;
  ASSIGN_OR_RETURN(StagePlan plan, plan_stage(spec_, s, po));
  ASSIGN_OR_RETURN(uint64_t id, ledger_.reserve(s.name, s.device, plan.reserved_bytes));
  auto st = std::make_unique<Started>();
  st->spec = &s;
  st->reservation = id;
  st->reserved_bytes = plan.reserved_bytes;
  stages_.push_back(std::move(st));  // released by the destructor from here on
  Started& started = *stages_.back();
  if (s.placement == Placement::kExternal) {
    ASSIGN_OR_RETURN(started.runner, kind.start_external(spec_, s, o));
    return check_rss(started);
  }
  const Artifact* model = model_artifact(s);
  if (!model) return Status::invalid_argument(fmt::format("stage '{}': no model artifact", s.name));
  if (s.placement == Placement::kWorker) {
    ASSIGN_OR_RETURN(started.runner, kind.start_in_worker(artifact_path(spec_, *model), s, o));
    return check_rss(started);
  }
  PipelineRunOptions here = o;
  here.compute_pool = compute_pool_for();
  ASSIGN_OR_RETURN(started.runner, kind.start(artifact_path(spec_, *model), s, here));
  return check_rss(started);
}

// The shared policy: one pool of n_threads for every in-process stage, callers taking turns.
// The split policy: each in-process model stage its own pool of n_threads / stages (at least
// one), so a talker and its decoder run as a two-stage pipeline on separate cores instead of
// alternating region by region over both (the turn-taking and the spinning between regions
// cost more than the per-stage parallelism gains on a 2-core box: docs/pipelines.md).
ThreadPool* PipelineRuntime::compute_pool_for() {
  const PipelineRunOptions& o = options_;
  const int n = o.n_threads > 0 ? o.n_threads : ThreadPool::default_threads();
  int stages = 0;
  for (const StageSpec& t : spec_.stages)
    if (t.placement == Placement::kInProcess && model_artifact(t)) ++stages;
  if (o.stage_pools == StagePools::kSplit && stages > 1) {
    const int each = std::max(1, n / stages);
    compute_pools_.push_back(std::make_unique<ThreadPool>(each, ThreadPool::Callers::kShared));
    return compute_pools_.back().get();
  }
  if (compute_pools_.empty())
    compute_pools_.push_back(std::make_unique<ThreadPool>(n, ThreadPool::Callers::kShared));
  return compute_pools_.front().get();
}

uint64_t PipelineRuntime::reservation_of(Started& st) {
  std::lock_guard<std::mutex> l(st.mu);
  return st.reservation;
}

Status PipelineRuntime::check_rss(Started& st) {
  const int64_t rss = st.runner->resident_bytes();
  st.rss_bytes = rss;
  const uint64_t id = reservation_of(st);
  return id ? ledger_.check_rss(id, rss) : Status();
}

// A stage whose process died is admitted again before its next generation starts.
Status PipelineRuntime::ensure_reserved(Started& st) {
  std::lock_guard<std::mutex> l(st.mu);
  if (st.reservation) return Status();
  ASSIGN_OR_RETURN(st.reservation,
                   ledger_.reserve(st.spec->name, st.spec->device, st.reserved_bytes));
  return Status();
}

void PipelineRuntime::release_if_dead(Started& st) {
  if (st.runner->running()) return;
  std::lock_guard<std::mutex> l(st.mu);
  if (st.reservation) (void)ledger_.release(st.reservation);
  st.reservation = 0;
  st.rss_bytes = 0;
}

Status PipelineRuntime::check_reservations() {
  Status first;
  for (auto& st : stages_) {
    Status s = check_rss(*st);
    if (first.ok()) first = s;
  }
  return first;
}

Expected<std::unique_ptr<PipelineRuntime>> PipelineRuntime::start(const PipelineSpec& spec,
                                                                  RamLedger& ledger,
                                                                  const PipelineRunOptions& o) {
  if (o.stream_high_water < 1)
    return Status::invalid_argument("stream high-water mark must be at least 1");
  std::unique_ptr<PipelineRuntime> rt(new PipelineRuntime(spec, ledger, o));
  // The copy of the spec inside rt is what the stages point into.
  rt->capacity_ = 4096;
  for (const StageSpec* s : rt->spec_.topological_order()) {
    RETURN_IF_ERROR(rt->start_stage(*s));
    rt->capacity_ = std::min(rt->capacity_, s->capacity);
  }
  return rt;
}

PipelineRuntime::~PipelineRuntime() {
  std::vector<std::shared_ptr<Request>> all;
  {
    std::lock_guard<std::mutex> l(mu_);
    closing_ = true;
    for (auto& [epoch, r] : requests_) all.push_back(r);
    requests_.clear();
  }
  for (auto& r : all) {
    r->cancelled = true;
    for (auto& st : stages_) st->runner->cancel(r->epoch);
    r->cv.notify_all();
  }
  for (auto& r : all)
    if (r->thread.joinable()) r->thread.join();
  for (auto it = stages_.rbegin(); it != stages_.rend(); ++it) {
    (*it)->runner.reset();
    if ((*it)->reservation) (void)ledger_.release((*it)->reservation);
  }
}

Expected<PipelineHandle> PipelineRuntime::submit(const std::map<std::string, PortValue>& inputs,
                                                 const RequestParams* params) {
  // A graph input may be left out only when every port it feeds is optional (a chat stage's
  // image, say); those ports then see an empty value.
  for (const Route& r : spec_.routes) {
    if (r.from.stage != "input" || inputs.count(r.from.port)) continue;
    const StageSpec* to = spec_.stage(r.to.stage);
    const Contract* c = to ? find_contract(to->contract) : nullptr;
    const PortSpec* port = c ? c->input(r.to.port) : nullptr;
    if (!port || port->required)
      return Status::invalid_argument(
          fmt::format("no value for graph input '{}' (route {})", r.from.port, r.str()));
  }
  auto req = std::make_shared<Request>();
  req->inputs = inputs;
  if (params) req->params = *params;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closing_) return Status::unavailable("the pipeline is shutting down");
    int32_t running = 0;
    for (const auto& [e, r] : requests_) {
      std::lock_guard<std::mutex> rl(r->mu);
      running += r->finished ? 0 : 1;
    }
    if (running >= capacity_)
      return Status::unavailable(fmt::format("pipeline '{}' is at capacity ({} requests in flight)",
                                             spec_.name, capacity_));
    req->epoch = epochs_.next();  // under mu_: epochs enter requests_ in order, none skipped
    requests_[req->epoch] = req;
    req->thread = std::thread([this, r = req.get()] { run_request(*r); });
  }
  return PipelineHandle{req->epoch, token_ ^ req->epoch};
}

std::shared_ptr<PipelineRuntime::Request> PipelineRuntime::find(const PipelineHandle& h) const {
  if ((h.token ^ h.epoch) != token_) return nullptr;
  std::lock_guard<std::mutex> l(mu_);
  auto it = requests_.find(h.epoch);
  return it == requests_.end() ? nullptr : it->second;
}

namespace {

Status stale(const PipelineHandle& h) {
  return Status::not_found(fmt::format(
      "stale handle: request epoch {} has ended and been read, or is not this pipeline's",
      h.epoch));
}

}  // namespace

Expected<StageEvent> PipelineRuntime::next(const PipelineHandle& h,
                                           std::chrono::milliseconds timeout) {
  std::shared_ptr<Request> r = find(h);
  if (!r) return stale(h);
  StageEvent e;
  {
    std::unique_lock<std::mutex> l(r->mu);
    if (!r->cv.wait_for(l, timeout, [&] { return !r->queue.empty(); }))
      return Status::deadline_exceeded(
          fmt::format("no event of request epoch {} within {} ms", h.epoch, timeout.count()));
    e = std::move(r->queue.front());
    r->queue.pop_front();
  }
  r->cv.notify_all();  // room in the queue: a stalled request goes on
  if (e.end_of_request) {
    {
      std::lock_guard<std::mutex> l(mu_);
      requests_.erase(h.epoch);  // the handle (and its copies) is stale from here on
    }
    if (r->thread.joinable()) r->thread.join();  // it has queued its last event
  }
  return e;
}

Status PipelineRuntime::cancel(const PipelineHandle& h) {
  std::shared_ptr<Request> r = find(h);
  if (!r) return stale(h);
  r->cancelled = true;
  if (r->stage_index >= 0)  // its stages run at once: each forgets an epoch it does not hold
    for (auto& st : stages_) st->runner->cancel(r->epoch);
  {
    // Nothing produced before the cancel is read after it (no audio after an abort):
    // only the end of the request is still to come.
    std::lock_guard<std::mutex> l(r->mu);
    std::erase_if(r->queue, [](const StageEvent& e) { return !e.end_of_request; });
  }
  r->cv.notify_all();
  return Status();
}

Expected<std::pair<int32_t, int32_t>> PipelineRuntime::stream_depth(const PipelineHandle& h) const {
  std::shared_ptr<Request> r = find(h);
  if (!r) return stale(h);
  std::lock_guard<std::mutex> l(r->mu);
  return std::make_pair(static_cast<int32_t>(r->queue.size()), r->high_water);
}

void PipelineRuntime::run_request(Request& r) {
  Status st = run_stages(r);
  if (st.ok() && r.cancelled) st = Status::cancelled("the request was cancelled");
  StageEvent end;
  end.epoch = r.epoch;
  end.terminal = true;
  end.end_of_request = true;
  end.error = st;
  {
    std::lock_guard<std::mutex> l(r.mu);
    r.queue.push_back(std::move(end));
    r.finished = true;
  }
  r.cv.notify_all();
}

// Queues an event for the caller; waits while the queue is at its high-water mark.
void PipelineRuntime::deliver(Request& r, StageEvent e) {
  std::unique_lock<std::mutex> l(r.mu);
  r.cv.wait(l, [&] {
    return r.cancelled || static_cast<int32_t>(r.queue.size()) < options_.stream_high_water;
  });
  if (r.cancelled) return;  // nobody wants it: only the end of the request is queued
  r.queue.push_back(std::move(e));
  r.high_water = std::max(r.high_water, static_cast<int32_t>(r.queue.size()));
  l.unlock();
  r.cv.notify_all();
}

Status PipelineRuntime::run_stage(Request& r, Started& st, StageInputs& in,
                                  const std::map<std::string, std::shared_ptr<Channel>>& channels) {
  const std::string& name = st.spec->name;
  auto emit = [&](StageEvent e) {
    for (const Route& route : spec_.routes) {
      if (route.from.stage != e.stage || route.from.port != e.port) continue;
      if (route.to.stage == "output") {
        StageEvent out = e;
        out.port = route.to.port;
        deliver(r, std::move(out));
      } else if (!e.value.empty()) {
        (void)channels.at(route.to.str())->push(e.value, r.cancelled);
      }
    }
  };
  Status ran = ensure_reserved(st);
  if (ran.ok() && r.cancelled) ran = Status::cancelled("the request was cancelled");
  if (ran.ok()) {
    // The client's settings go to the stages that generate text.
    const bool text = st.spec->contract.name == "text.generate" || st.spec->contract.name == "chat.generate";
    const RequestParams* params = text && r.params ? &*r.params : nullptr;
    ran = st.runner->run_streaming(r.epoch, in, params, emit);
    if (!ran.ok()) release_if_dead(st);  // a dead process holds no memory
  }
  // A failed stage fails the request: the stages before it stop too instead of producing
  // for nobody (the end of the request waits for every stage).
  if (!ran.ok() && ran.code() != StatusCode::kCancelled)
    for (auto& other : stages_)
      if (other.get() != &st) other->runner->cancel(r.epoch);
  if (ran.ok()) ran = check_rss(st);  // held to its reservation while it runs, not only at start
  in.abandon_all();                   // what still comes in is not wanted any more
  for (const Route& route : spec_.routes)
    if (route.from.stage == name && route.to.stage != "output")
      channels.at(route.to.str())
          ->close(ran.ok() ? Status() : Status::cancelled(fmt::format("stage '{}' failed", name)));
  return ran;
}

Status PipelineRuntime::run_stages(Request& r) {
  // One bounded channel per route into a stage; the graph's inputs are already whole.
  constexpr int32_t kChannelChunks = 16;
  std::map<std::string, std::shared_ptr<Channel>> channels;  // by "stage.port" (the route's end)
  for (const Route& route : spec_.routes) {
    if (route.to.stage == "output") continue;
    auto ch = std::make_shared<Channel>(kChannelChunks);
    if (route.from.stage == "input") {
      auto given = r.inputs.find(route.from.port);  // absent: an optional port (submit)
      if (given != r.inputs.end()) (void)ch->push(given->second, r.cancelled);
      ch->close();
    }
    channels[route.to.str()] = ch;
  }
  std::vector<StageInputs> inputs;
  for (const auto& st : stages_) {
    std::map<std::string, std::shared_ptr<Channel>> ports;
    for (const Route& route : spec_.routes)
      if (route.to.stage == st->spec->name) ports[route.to.port] = channels.at(route.to.str());
    inputs.emplace_back(std::move(ports), r.cancelled);
  }
  r.stage_index = 0;  // every stage may be running from here on
  std::vector<Status> results(stages_.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < stages_.size(); ++i)
    threads.emplace_back([&, i] { results[i] = run_stage(r, *stages_[i], inputs[i], channels); });
  results[0] = run_stage(r, *stages_[0], inputs[0], channels);  // the first on this thread
  for (auto& t : threads) t.join();
  // The root cause: the first failure that is not a stage giving up after another failed.
  Status first_cancel;
  for (const Status& s : results) {
    if (s.ok()) continue;
    if (s.code() != StatusCode::kCancelled) return s;
    if (first_cancel.ok()) first_cancel = s;
  }
  return first_cancel;
}

Status PipelineRuntime::run(const std::map<std::string, PortValue>& inputs,
                            const std::function<void(const StageEvent&)>& on_output) {
  ASSIGN_OR_RETURN(PipelineHandle h, submit(inputs));
  for (;;) {
    auto e = next(h, std::chrono::hours(1));
    if (!e) {
      (void)cancel(h);
      return e.status();
    }
    if (e->end_of_request) return e->error;
    on_output(*e);
  }
}

Status PipelineRuntime::retire_stage(const std::string& stage) {
  for (auto& st : stages_)
    if (st->spec->name == stage) return st->runner->retire();
  return Status::not_found(fmt::format("pipeline '{}' has no stage '{}'", spec_.name, stage));
}

const StageSpec* PipelineRuntime::text_stage() const {
  for (const Route& r : spec_.routes)
    if (r.to.stage == "output" && r.to.port == "text") return spec_.stage(r.from.stage);
  return nullptr;
}

Engine* PipelineRuntime::text_engine() const {
  const StageSpec* s = text_stage();
  for (const auto& st : stages_)
    if (s && st->spec == s) return st->runner->engine();
  return nullptr;
}

std::string StageRunner::backend_version() const { return std::string("edge-infer ") + EDGE_BUILD_COMMIT; }

namespace {

// The artifacts a started stage was verified against (plan_stage checks every hash first).
nlohmann::json verified_artifacts(const PipelineSpec& p, const StageSpec& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const Artifact& a : s.artifacts) {
    nlohmann::json j = {{"role", a.role}, {"path", artifact_path(p, a)}, {"sha256", a.sha256},
                        {"verified", a.pinned()}};
    if (!a.symbol.empty()) j["symbol"] = a.symbol;
    out.push_back(std::move(j));
  }
  return out;
}

// What the state says when a stage runs elsewhere than its file asked (placement_policy
// prefer; under require it would not have started): "" when it runs where it was asked.
std::string placement_note(const StageSpec& s, const std::string& actual) {
  const std::string wanted = device_class_name(s.device);
  if (wanted == actual || (s.device != DeviceClass::kCpu && actual == "gpu")) return "";
  return fmt::format("requested {}, runs on {} (placement_policy {})", wanted, actual,
                     placement_policy_name(s.placement_policy));
}

}  // namespace

nlohmann::json PipelineRuntime::state_json() const {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& st : stages_)
    stages.push_back(
        {{"stage", st->spec->name},
         {"placement_actual", st->runner ? st->runner->placement() : "not started"},
         {"requested_device", device_class_name(st->spec->device)},
         {"placement_policy", placement_policy_name(st->spec->placement_policy)},
         {"actual_device", st->runner ? st->runner->actual_device() : "not started"},
         {"placement_note", st->runner ? placement_note(*st->spec, st->runner->actual_device()) : ""},
         {"backend_version", st->runner ? st->runner->backend_version() : ""},
         {"artifacts", verified_artifacts(spec_, *st->spec)},
         {"reserved_bytes", st->reserved_bytes},
         {"worker_generation", st->runner ? st->runner->generation() : 0},
         {"loaded_rss_bytes", st->rss_bytes.load()},
         {"transport", st->runner ? st->runner->transport_stats() : nlohmann::json()}});
  return {{"pipeline", spec_.name},
          {"epochs_issued", epochs_.issued()},
          {"ledger", ledger_.to_json()},
          {"stages", stages}};
}

std::string PipelineRuntime::metrics_text() const {
  std::string out =
      "# HELP edge_stage_reserved_bytes Host RAM reserved for a pipeline stage on the ledger.\n"
      "# TYPE edge_stage_reserved_bytes gauge\n";
  std::string rss =
      "# HELP edge_stage_resident_bytes Resident bytes a stage was last measured at.\n"
      "# TYPE edge_stage_resident_bytes gauge\n";
  std::string gen =
      "# HELP edge_stage_generation Generation of the process serving a stage (0: in process).\n"
      "# TYPE edge_stage_generation gauge\n";
  const std::vector<Reservation> held = ledger_.reservations();
  for (const auto& st : stages_) {
    int64_t bytes = 0;
    const uint64_t id = reservation_of(*st);
    for (const Reservation& r : held)
      if (r.id == id) bytes = r.bytes;
    const std::string labels =
        fmt::format("stage=\"{}\",device=\"{}\",placement=\"{}\"", st->spec->name,
                    device_class_name(st->spec->device), placement_name(st->spec->placement));
    out += fmt::format("edge_stage_reserved_bytes{{{}}} {}\n", labels, bytes);
    rss += fmt::format("edge_stage_resident_bytes{{{}}} {}\n", labels, st->rss_bytes.load());
    gen += fmt::format("edge_stage_generation{{{}}} {}\n", labels,
                       st->runner ? st->runner->generation() : 0);
  }
  out += rss + gen;
  out += fmt::format(
      "# TYPE edge_ledger_limit_bytes gauge\nedge_ledger_limit_bytes {}\n"
      "# TYPE edge_ledger_reserved_bytes gauge\nedge_ledger_reserved_bytes {}\n"
      "# TYPE edge_pipeline_epochs_total counter\nedge_pipeline_epochs_total {}\n",
      ledger_.limit(), ledger_.reserved(), epochs_.issued());
  return out;
}

}  // namespace edge::pipeline
