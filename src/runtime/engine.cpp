// The engine's public calls: create, sessions, submit, reading streams, cancel, stats.
#include <fmt/format.h>

#include <atomic>
#include <thread>

#include "model/model_footprint.h"
#include "runtime/encoder_engine.h"
#include "runtime/engine_impl.h"
#include "runtime/media_splice.h"
#include "runtime/memory_plan.h"
#include "runtime/model_drafter.h"
#include "runtime/request_rules.h"

namespace edge {

namespace {

std::atomic<uint64_t> g_next_engine_id{1};

// EngineOptions::draft_source as a Drafter.
class SourceDrafter final : public Drafter {
 public:
  explicit SourceDrafter(const EngineOptions& o) : o_(o) {}
  std::vector<int32_t> draft(std::span<const int32_t> history, int32_t max_tokens) override {
    return o_.draft_source(std::vector<int32_t>(history.begin(), history.end()), max_tokens);
  }

 private:
  const EngineOptions& o_;
};

// Waiting requests beyond this are refused (503-style) instead of queueing without bound.
constexpr size_t kMaxWaiting = 256;

}  // namespace

namespace {

Expected<std::unique_ptr<Engine>> build_engine(const Model& model, std::unique_ptr<Model> owned,
                                               const EngineOptions& o) {
  if (model.config().encoder_only) return make_encoder_engine(model, std::move(owned), o);
  if (o.max_model_len <= 0) return Status::invalid_argument("max_model_len must be positive");
  if (o.max_seqs <= 0) return Status::invalid_argument("max_seqs must be positive");
  if (o.max_batched_tokens <= 0)
    return Status::invalid_argument("max_batched_tokens must be positive");
  if (o.stream_queue_limit <= 0)
    return Status::invalid_argument("stream_queue_limit must be positive");
  KvCacheOptions ko;
  ASSIGN_OR_RETURN(ko.settings.types, parse_kv_types(o.kv_type, o.kv_type_v));
  RETURN_IF_ERROR(check_kv_types(ko.settings.types, model.config().head_dim));
  ko.budget_bytes = o.kv_budget_bytes;
  ko.max_model_len = o.max_model_len;
  ko.max_step = o.max_batched_tokens;
  ko.max_seqs = o.max_seqs;
  ko.prefix_cache = o.prefix_cache;
  ko.state_checkpoints = o.state_checkpoints;
  if (o.max_model_len > (int64_t{1} << 26))
    return Status::invalid_argument(
        fmt::format("max_model_len {} exceeds {}", o.max_model_len, int64_t{1} << 26));
  if (!o.speculative.empty() && o.speculative != "ngram" && o.speculative != "draft")
    return Status::invalid_argument("unknown speculative drafter '" + o.speculative +
                                    "' (ngram, draft, or empty for none)");
  if ((o.speculative == "draft") != !o.draft_model.empty())
    return Status::invalid_argument(o.draft_model.empty()
                                        ? "speculative 'draft' needs a draft model (draft_model)"
                                        : "a draft model is given but speculative is not 'draft'");
  if (!o.speculative.empty() && (o.draft_max < 1 || o.draft_max > 16))
    return Status::invalid_argument(fmt::format("draft_max {} is outside [1, 16]", o.draft_max));
  ASSIGN_OR_RETURN(KvCache kv, KvCache::create(model.config(), ko));
  // Two engines over one model must not run regions on one pool at once: the first takes
  // the model's pool, a later one gets threads of its own.
  EnginePool pool;
  if (model.claim_pool()) {
    pool.claimed = &model;
  } else {
    pool.owned = std::make_unique<ThreadPool>(model.pool().size());
  }
  ThreadPool* threads = pool.owned ? pool.owned.get() : &model.pool();
  ASSIGN_OR_RETURN(ForwardPass pass, ForwardPass::create(model, o.max_batched_tokens, threads));
  // The draft model runs on the engine's threads, between its steps.
  std::unique_ptr<Model> draft;
  if (!o.draft_model.empty()) {
    LoadOptions lo;
    lo.pool = threads;
    lo.activations = o.activations;
    auto loaded = Model::load(o.draft_model, lo);
    if (!loaded)
      return Status(loaded.status().code(),
                    "draft model " + o.draft_model + ": " + loaded.status().message());
    draft = std::move(*loaded);
    RETURN_IF_ERROR(check_draft_model(model, *draft));
  }
  return std::unique_ptr<Engine>(new EngineImpl(model, std::move(owned), o, std::move(kv),
                                                std::move(pool), std::move(draft),
                                                std::move(pass)));
}

}  // namespace

Expected<std::unique_ptr<Engine>> Engine::create(const EngineOptions& o) {
  ASSIGN_OR_RETURN(const KvTypes types, parse_kv_types(o.kv_type, o.kv_type_v));
  // The memory plan runs first: a configuration that cannot fit is refused before any
  // weight is read, instead of being killed by the OOM killer half way through loading.
  ASSIGN_OR_RETURN(ModelFootprint footprint, read_model_footprint(o.model_path));
  PlanOptions po;
  std::optional<ModelFootprint> draft;
  if (!o.draft_model.empty()) {
    auto d = read_model_footprint(o.draft_model);
    if (!d)
      return Status(d.status().code(),
                    "draft model " + o.draft_model + ": " + d.status().message());
    draft = std::move(*d);
    po.draft = &*draft;
  }
  po.ctx = o.max_model_len;
  po.kv_budget_bytes = static_cast<int64_t>(o.kv_budget_bytes);
  po.kv_types = types;
  po.max_seqs = o.max_seqs;
  po.state_checkpoints = o.prefix_cache ? o.state_checkpoints : 0;
  po.draft_states = o.speculative.empty() ? 0 : int64_t{o.max_seqs} * (1 + o.draft_max);
  po.max_batched_tokens = o.max_batched_tokens;
  po.memory_limit = static_cast<int64_t>(o.memory_limit_bytes);
  po.n_threads = o.n_threads;
  ASSIGN_OR_RETURN(MemoryPlan plan,
                   make_memory_plan(footprint, po, read_memory_limit(po.memory_limit)));
  RETURN_IF_ERROR(admission_status(plan));
  LoadOptions lo;
  lo.n_threads = o.n_threads;
  lo.activations = o.activations;
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(o.model_path, lo));
  const Model& ref = *model;
  return build_engine(ref, std::move(model), o);
}

Expected<std::unique_ptr<Engine>> Engine::create(const Model& model, const EngineOptions& o) {
  return build_engine(model, nullptr, o);
}

EngineImpl::EngineImpl(const Model& model, std::unique_ptr<Model> owned,
                       const EngineOptions& options, KvCache kv, EnginePool pool,
                       std::unique_ptr<Model> draft, ForwardPass pass)
    : model_(&model),
      owned_model_(std::move(owned)),
      options_(options),
      engine_id_(g_next_engine_id.fetch_add(1)),
      pool_(std::move(pool)),
      draft_model_(std::move(draft)),
      kv_(std::move(kv)),
      pass_(std::move(pass)),
      scheduler_(SchedulerConfig{options.max_seqs, options.max_batched_tokens}, &kv_) {
  const KvLayout& l = kv_.layout();
  if (!options_.speculative.empty() && l.has_state())
    draft_states_.resize(static_cast<size_t>(kv_.storage().n_state_slots() * l.n_state_layers *
                                             (1 + options_.draft_max) * l.state_floats_per_layer));
  thread_ = std::thread([this] { loop(); });
}

EngineImpl::~EngineImpl() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  stream_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Expected<SessionId> EngineImpl::open_session() {
  std::lock_guard<std::mutex> lk(mu_);
  const SessionId s = next_session_++;
  sessions_.insert(s);
  return s;
}

Status EngineImpl::close_session(SessionId session) {
  std::unique_lock<std::mutex> lk(mu_);
  if (sessions_.erase(session) == 0)
    return Status::not_found(fmt::format("unknown session {}", session));
  for (auto it = requests_.begin(); it != requests_.end();) {
    EngineRequest& r = *it->second;
    if (r.session != session) {
      ++it;
      continue;
    }
    if (r.in_flight) {  // the loop drops it after its step
      r.cancel_requested = true;
      r.session = 0;
      ++it;
      continue;
    }
    if (!r.terminal_pushed) ++stats_.requests_cancelled;
    scheduler_.remove(&r.seq);
    it = requests_.erase(it);
  }
  work_cv_.notify_all();
  stream_cv_.notify_all();
  return Status::ok_status();
}

Status EngineImpl::validate(const GenerateRequest& req) const {
  const ModelConfig& c = model_->config();
  RETURN_IF_ERROR(validate_request(req, RequestLimits{c.n_vocab, options_.max_model_len}));
  if (req.pooling == Pooling::kRank)
    return Status::invalid_argument(
        "rank pooling needs a cross-encoder (a text encoder with a classification head); a "
        "decoder reranker scores its yes/no logits (score_ids)");
  if (!req.score_ids.empty() && req.pooling != Pooling::kLast)
    return Status::invalid_argument("score_ids come with last-position pooling");
  for (int32_t id : req.score_ids)
    if (id < 0 || id >= c.n_vocab)
      return Status::invalid_argument(
          fmt::format("score id {} is outside the vocabulary ({})", id, c.n_vocab));
  return validate_media(req, c.n_embd, options_.max_batched_tokens);
}

Expected<RequestHandle> EngineImpl::submit(SessionId session, GenerateRequest req) {
  RETURN_IF_ERROR(validate(req));
  std::lock_guard<std::mutex> lk(mu_);
  if (stop_) return Status::unavailable("the engine is shutting down");
  if (!sessions_.count(session))
    return Status::not_found(fmt::format("unknown session {}", session));
  if (scheduler_.n_waiting() >= kMaxWaiting)
    return Status::unavailable(fmt::format(
        "{} requests are already waiting for KV cache space; retry later", scheduler_.n_waiting()));
  auto r = std::make_unique<EngineRequest>(req.params, req.params.stop);
  r->session = session;
  r->id = next_request_++;
  r->seq.id = r->id;
  r->seq.n_prompt = static_cast<int64_t>(req.prompt.size());
  r->seq.tokens = std::move(req.prompt);
  r->media = std::move(req.media);
  splice_media(r->media, &r->seq);
  r->pooling = req.pooling;
  r->score_ids = std::move(req.score_ids);
  // Mean and first-position pooling read every position's hidden state: none may come
  // from the prefix cache (which keeps K/V, not hidden states).
  r->seq.reuse_prefix = req.pooling != Pooling::kMean && req.pooling != Pooling::kCls;
  if (model_->tokenizer() != nullptr) r->decoder.emplace(*model_->tokenizer());
  // Guided and logprob requests decode plainly (a guide's state follows each sampled token;
  // logprobs are reported per sampled position).
  // A draft model cannot read media positions.
  if (!options_.speculative.empty() && req.pooling == Pooling::kNone && !r->params.guide &&
      r->params.logprobs < 0 && (!draft_model_ || r->media.empty())) {
    if (options_.draft_source)
      r->drafter = std::make_unique<SourceDrafter>(options_);
    else if (draft_model_)
      r->drafter = std::make_unique<ModelDrafter>(*draft_model_, *model_, options_.max_model_len,
                                                  kv_.layout().settings.types);
    else
      r->drafter = std::make_unique<NgramDrafter>();
    r->draft_control = DraftController(options_.draft_max);
  }
  scheduler_.add(&r->seq);
  stats_.prompt_tokens += static_cast<uint64_t>(r->seq.n_prompt);
  const RequestHandle h{engine_id_, session, r->id};
  requests_.emplace(r->id, std::move(r));
  work_cv_.notify_all();
  return h;
}

Expected<EngineRequest*> EngineImpl::find(const RequestHandle& h) {
  if (h.engine_id != engine_id_)
    return Status::invalid_argument("the request handle belongs to another engine");
  auto it = requests_.find(h.request);
  if (it == requests_.end() || it->second->session != h.session || !sessions_.count(h.session))
    return Status::not_found(
        fmt::format("unknown, finished or closed request {} (session {})", h.request, h.session));
  return it->second.get();
}

Expected<StreamChunk> EngineImpl::next(const RequestHandle& h, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  ASSIGN_OR_RETURN(EngineRequest * r, find(h));
  const uint64_t id = h.request;
  const bool ready = stream_cv_.wait_for(lk, timeout, [&] {
    auto it = requests_.find(id);
    return stop_ || it == requests_.end() || !it->second->queue.empty();
  });
  auto it = requests_.find(id);
  if (it == requests_.end()) return Status::not_found(fmt::format("request {} was closed", id));
  r = it->second.get();
  if (r->queue.empty()) {
    if (stop_) return Status::unavailable("the engine is shutting down");
    (void)ready;
    return Status::deadline_exceeded(
        fmt::format("no output from request {} within {} ms", id, timeout.count()));
  }
  StreamChunk c = std::move(r->queue.front());
  r->queue.pop_front();
  if (c.kind != ChunkKind::kTokens) {
    requests_.erase(it);  // retired: the handle is no longer valid
  } else if (r->seq.paused && static_cast<int32_t>(r->queue.size()) < options_.stream_queue_limit) {
    r->seq.paused = false;
    work_cv_.notify_all();
  }
  return c;
}

Status EngineImpl::cancel(const RequestHandle& h) {
  std::lock_guard<std::mutex> lk(mu_);
  ASSIGN_OR_RETURN(EngineRequest * r, find(h));
  if (r->terminal_pushed) return Status::ok_status();
  r->cancel_requested = true;
  if (!r->in_flight) finish(*r, ChunkKind::kCancelled, "cancelled");
  work_cv_.notify_all();
  stream_cv_.notify_all();
  return Status::ok_status();
}

bool Engine::wait_for_stats(const std::function<bool(const EngineStats&)>& done,
                            std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done(stats())) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool EngineImpl::wait_for_stats(const std::function<bool(const EngineStats&)>& done,
                                std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  return stream_cv_.wait_for(lk, timeout, [&] { return done(stats_locked()); });
}

EngineStats EngineImpl::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_locked();
}

EngineStats EngineImpl::stats_locked() const {
  EngineStats s = stats_;
  s.kv_blocks_total = kv_.blocks_total();
  s.kv_blocks_used = kv_.blocks_used();
  s.kv_bytes = kv_.bytes();
  s.running = static_cast<int64_t>(scheduler_.n_running());
  s.waiting = static_cast<int64_t>(scheduler_.n_waiting());
  s.paused = 0;
  for (const auto& [id, r] : requests_) s.paused += r->seq.paused ? 1 : 0;
  s.preemptions = scheduler_.preemptions();
  s.state_checkpoint_saves = kv_.state_checkpoint_saves();
  s.state_checkpoint_restores = kv_.state_checkpoint_restores();
  s.state_checkpoints_kept = kv_.state_checkpoints().n_saved();
  return s;
}

}  // namespace edge
