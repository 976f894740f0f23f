// The text encoder's engine (encoder_engine.h): sessions, a waiting queue, one loop thread
// that batches requests of one pooling into a bert_encode call, one final chunk each.
#include "runtime/encoder_engine.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "runtime/request_rules.h"

namespace edge {

namespace {

// Ids of encoder engines live apart from the decoder engines' (engine.cpp counts from 1),
// so a handle of one kind is never taken for the other's.
std::atomic<uint64_t> g_next_encoder_id{uint64_t{1} << 62};
constexpr size_t kMaxWaiting = 1024;  // requests queued at once (one /v1/embeddings may send many)

EncoderPooling encoder_pooling(Pooling p) {
  switch (p) {
    case Pooling::kCls:
      return EncoderPooling::kCls;
    case Pooling::kLast:
      return EncoderPooling::kLast;
    case Pooling::kRank:
      return EncoderPooling::kRank;
    default:
      return EncoderPooling::kMean;
  }
}

struct EncoderRequest {
  SessionId session = 0;
  std::vector<int32_t> prompt;
  Pooling pooling = Pooling::kMean;
  std::deque<StreamChunk> queue;
  bool in_flight = false, done = false;
};

class EncoderEngine final : public Engine {
 public:
  EncoderEngine(const Model& model, std::unique_ptr<Model> owned, const EngineOptions& o)
      : model_(&model), owned_(std::move(owned)), options_(o), id_(g_next_encoder_id.fetch_add(1)) {
    if (model.claim_pool()) {
      claimed_ = true;
    } else {
      own_pool_ = std::make_unique<ThreadPool>(model.pool().size());
    }
    thread_ = std::thread([this] { loop(); });
  }
  ~EncoderEngine() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    stream_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (claimed_) model_->release_pool();
  }

  Expected<SessionId> open_session() override {
    std::lock_guard<std::mutex> lk(mu_);
    sessions_.insert(next_session_);
    return next_session_++;
  }

  Status close_session(SessionId s) override {
    std::lock_guard<std::mutex> lk(mu_);
    if (!sessions_.erase(s)) return Status::not_found(fmt::format("unknown session {}", s));
    for (auto it = requests_.begin(); it != requests_.end();) {
      EncoderRequest& r = it->second;
      if (r.session != s) {
        ++it;
        continue;
      }
      if (!r.done) ++stats_.requests_cancelled;
      if (r.in_flight) {  // the loop drops it after its step
        r.session = 0;
        r.done = true;
        ++it;
      } else {
        it = requests_.erase(it);
      }
    }
    stream_cv_.notify_all();
    return Status();
  }

  Expected<RequestHandle> submit(SessionId session, GenerateRequest req) override {
    RETURN_IF_ERROR(validate(req));
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) return Status::unavailable("the engine is shutting down");
    if (!sessions_.count(session)) return Status::not_found(fmt::format("unknown session {}", session));
    if (waiting_.size() >= kMaxWaiting)
      return Status::unavailable(
          fmt::format("{} embedding requests are already waiting; retry later", waiting_.size()));
    const uint64_t id = next_request_++;
    EncoderRequest& r = requests_[id];
    r.session = session;
    r.prompt = std::move(req.prompt);
    r.pooling = req.pooling;
    stats_.prompt_tokens += r.prompt.size();
    waiting_.push_back(id);
    work_cv_.notify_all();
    return RequestHandle{id_, session, id};
  }

  Expected<StreamChunk> next(const RequestHandle& h, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lk(mu_);
    RETURN_IF_ERROR(find(h).status());
    const uint64_t id = h.request;
    stream_cv_.wait_for(lk, timeout, [&] {
      auto it = requests_.find(id);
      return stop_ || it == requests_.end() || !it->second.queue.empty();
    });
    auto it = requests_.find(id);
    if (it == requests_.end()) return Status::not_found(fmt::format("request {} was closed", id));
    if (it->second.queue.empty()) {
      if (stop_) return Status::unavailable("the engine is shutting down");
      return Status::deadline_exceeded(
          fmt::format("no output from request {} within {} ms", id, timeout.count()));
    }
    StreamChunk c = std::move(it->second.queue.front());
    requests_.erase(it);  // one chunk, always terminal: the handle retires
    return c;
  }

  Status cancel(const RequestHandle& h) override {
    std::lock_guard<std::mutex> lk(mu_);
    ASSIGN_OR_RETURN(EncoderRequest * r, find(h));
    if (r->done) return Status();
    r->done = true;
    ++stats_.requests_cancelled;
    StreamChunk c;
    c.kind = ChunkKind::kCancelled;
    c.finish_reason = "cancelled";
    r->queue.push_back(std::move(c));
    stream_cv_.notify_all();
    return Status();
  }

  EngineStats stats() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return stats_locked();
  }
  bool wait_for_stats(const std::function<bool(const EngineStats&)>& done,
                      std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lk(mu_);
    return stream_cv_.wait_for(lk, timeout, [&] { return done(stats_locked()); });
  }
  const ModelConfig& config() const override { return model_->config(); }
  const Tokenizer* tokenizer() const override { return model_->tokenizer(); }
  const EngineOptions& options() const override { return options_; }

 private:
  Status validate(const GenerateRequest& req) const;
  Expected<EncoderRequest*> find(const RequestHandle& h);
  EngineStats stats_locked() const;
  void loop();
  // Takes the next batch off the queue (mu_ held): ids in order, all of one pooling.
  std::vector<uint64_t> take_batch();
  void run_batch(std::unique_lock<std::mutex>& lk, const std::vector<uint64_t>& ids);

  const Model* model_;
  std::unique_ptr<Model> owned_;
  EngineOptions options_;
  uint64_t id_;
  bool claimed_ = false;
  std::unique_ptr<ThreadPool> own_pool_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, stream_cv_;
  bool stop_ = false;
  uint64_t next_session_ = 1, next_request_ = 1;
  std::set<SessionId> sessions_;
  std::map<uint64_t, EncoderRequest> requests_;
  std::deque<uint64_t> waiting_;
  int64_t running_ = 0;
  EngineStats stats_;
  std::thread thread_;
};

Status EncoderEngine::validate(const GenerateRequest& req) const {
  const ModelConfig& c = model_->config();
  if (req.pooling == Pooling::kNone)
    return Status::invalid_argument(fmt::format(
        "'{}' is a text encoder: it serves embeddings and reranking, not generation", c.arch));
  if (!req.media.empty()) return Status::invalid_argument("a text encoder takes no media");
  if (!req.score_ids.empty())
    return Status::invalid_argument("score ids are for a decoder reranker; this model has a classification head");
  if (req.pooling == Pooling::kRank && !model_->encoder_hparams()->cls_head)
    return Status::invalid_argument(
        fmt::format("'{}' has no classification head (cls.weight): it cannot rank", c.arch));
  const int64_t n = static_cast<int64_t>(req.prompt.size());
  if (n == 0) return Status::invalid_argument("empty prompt");
  for (int32_t t : req.prompt)
    if (t < 0 || t >= c.n_vocab)
      return Status::invalid_argument(fmt::format("token id {} is outside the vocabulary ({})", t, c.n_vocab));
  const BertHparams& h = *model_->encoder_hparams();
  int64_t limit = std::min<int64_t>(options_.max_batched_tokens, options_.max_model_len);
  if (!h.nomic) limit = std::min(limit, h.n_ctx_train);
  if (n > limit)
    return Status::invalid_argument(fmt::format(
        "input of {} tokens is longer than the {} this encoder runs at once (its positions {}, "
        "max_batched_tokens {}, max_model_len {})",
        n, limit, h.n_ctx_train, options_.max_batched_tokens, options_.max_model_len));
  return Status();
}

Expected<EncoderRequest*> EncoderEngine::find(const RequestHandle& h) {
  if (h.engine_id != id_) return Status::invalid_argument("the request handle belongs to another engine");
  auto it = requests_.find(h.request);
  if (it == requests_.end() || it->second.session != h.session || !sessions_.count(h.session))
    return Status::not_found(
        fmt::format("unknown, finished or closed request {} (session {})", h.request, h.session));
  return &it->second;
}

EngineStats EncoderEngine::stats_locked() const {
  EngineStats s = stats_;
  s.running = running_;
  s.waiting = static_cast<int64_t>(waiting_.size());
  return s;
}

std::vector<uint64_t> EncoderEngine::take_batch() {
  std::vector<uint64_t> ids;
  int64_t tokens = 0;
  Pooling pooling = Pooling::kNone;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    auto r = requests_.find(*it);
    if (r == requests_.end() || r->second.done) {  // cancelled or closed while waiting
      it = waiting_.erase(it);
      continue;
    }
    const int64_t n = static_cast<int64_t>(r->second.prompt.size());
    if (ids.empty()) pooling = r->second.pooling;
    if (r->second.pooling != pooling) break;  // one pooling per step; the rest wait in order
    if (!ids.empty() && (tokens + n > options_.max_batched_tokens ||
                         static_cast<int32_t>(ids.size()) >= options_.max_seqs))
      break;
    tokens += n;
    ids.push_back(*it);
    it = waiting_.erase(it);
  }
  return ids;
}

void EncoderEngine::run_batch(std::unique_lock<std::mutex>& lk, const std::vector<uint64_t>& ids) {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  for (uint64_t id : ids) {
    EncoderRequest& r = requests_.at(id);
    r.in_flight = true;
    tokens.insert(tokens.end(), r.prompt.begin(), r.prompt.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  const Pooling pooling = requests_.at(ids[0]).pooling;
  running_ = static_cast<int64_t>(ids.size());
  lk.unlock();  // the requests' prompts are copied; cancel and close only mark them
  const ModelConfig& c = model_->config();
  ThreadPool& pool = own_pool_ ? *own_pool_ : model_->pool();
  const BertExec ex{model_->kernels(), pool};
  std::vector<float> out = bert_encode(ex, c, *model_->encoder_hparams(), *model_->encoder_weights(),
                                       tokens, offsets, encoder_pooling(pooling));
  lk.lock();
  running_ = 0;
  const int64_t width = pooling == Pooling::kRank ? 1 : c.n_embd;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = requests_.find(ids[i]);
    if (it == requests_.end()) continue;
    EncoderRequest& r = it->second;
    r.in_flight = false;
    if (r.done) {  // cancelled in flight: its kCancelled chunk is queued, or its session closed
      if (r.session == 0) requests_.erase(it);
      continue;
    }
    StreamChunk ch;
    ch.kind = ChunkKind::kDone;
    ch.finish_reason = "embedding";
    const float* row = out.data() + static_cast<int64_t>(i) * width;
    if (pooling == Pooling::kRank) {
      ch.scores.assign(row, row + 1);
    } else {
      ch.embedding.assign(row, row + width);
    }
    ch.prompt_tokens = static_cast<int64_t>(r.prompt.size());
    r.done = true;
    r.queue.push_back(std::move(ch));
    ++stats_.requests_finished;
  }
  stream_cv_.notify_all();
}

void EncoderEngine::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    work_cv_.wait(lk, [&] { return stop_ || !waiting_.empty(); });
    if (stop_) return;
    const std::vector<uint64_t> ids = take_batch();
    if (!ids.empty()) run_batch(lk, ids);
  }
}

}  // namespace

Expected<std::unique_ptr<Engine>> make_encoder_engine(const Model& model, std::unique_ptr<Model> owned,
                                                      const EngineOptions& o) {
  if (!model.config().encoder_only || !model.encoder_weights())
    return Status::invalid_argument(
        fmt::format("'{}' is not a text encoder", model.config().arch));
  if (o.max_seqs <= 0) return Status::invalid_argument("max_seqs must be positive");
  if (o.max_batched_tokens <= 0) return Status::invalid_argument("max_batched_tokens must be positive");
  if (o.max_model_len <= 0) return Status::invalid_argument("max_model_len must be positive");
  return std::unique_ptr<Engine>(new EncoderEngine(model, std::move(owned), o));
}

}  // namespace edge
