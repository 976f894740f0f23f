#include "pipeline/graph/graph_engine.h"

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "model/model.h"
#include "model/model_footprint.h"
#include "pipeline/graph/artifact.h"
#include "runtime/request_rules.h"

namespace edge::pipeline {

namespace {

std::atomic<uint64_t> g_next_engine_id{1u << 20};  // apart from the engines' own ids

class GraphEngine final : public Engine {
 public:
  GraphEngine(PipelineRuntime& graph, std::string stage, std::string chat_input, ModelConfig config,
              std::unique_ptr<Tokenizer> tok, EngineOptions o)
      : graph_(graph),
        stage_(std::move(stage)),
        chat_input_(std::move(chat_input)),
        config_(std::move(config)),
        tokenizer_(std::move(tok)),
        options_(std::move(o)),
        id_(g_next_engine_id++) {}

  Expected<SessionId> open_session() override {
    std::lock_guard<std::mutex> l(mu_);
    sessions_.insert(++last_session_);
    return last_session_;
  }

  Status close_session(SessionId session) override {
    std::vector<PipelineHandle> live;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!sessions_.erase(session)) return Status::not_found("unknown session");
      for (auto it = requests_.begin(); it != requests_.end();) {
        if (it->second.session != session) {
          ++it;
          continue;
        }
        live.push_back(it->second.handle);
        it = requests_.erase(it);
      }
    }
    for (const PipelineHandle& h : live) drop(h);
    return Status();
  }

  Expected<RequestHandle> submit(SessionId session, GenerateRequest req) override {
    RETURN_IF_ERROR(check(req));
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!sessions_.count(session)) return Status::not_found("unknown session");
    }
    const int64_t n_prompt = static_cast<int64_t>(req.prompt.size());
    std::map<std::string, PortValue> inputs;
    if (!req.chat.empty() && forwards_chat())
      inputs[chat_input_].text = std::move(req.chat);  // the backend renders it
    else
      inputs["prompt"].tokens = std::move(req.prompt);
    ASSIGN_OR_RETURN(PipelineHandle ph, graph_.submit(inputs, &req.params));
    std::lock_guard<std::mutex> l(mu_);
    const uint64_t id = ++last_request_;
    requests_[id] = Live{session, ph, n_prompt};
    stats_.prompt_tokens += static_cast<uint64_t>(n_prompt);
    return RequestHandle{id_, session, id};
  }

  Expected<StreamChunk> next(const RequestHandle& h, std::chrono::milliseconds timeout) override {
    Live* r = nullptr;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = h.engine_id == id_ ? requests_.find(h.request) : requests_.end();
      if (it == requests_.end())
        return Status::not_found("unknown or finished request (a handle of another engine?)");
      r = &it->second;  // entries stay put until this request's last chunk (map nodes)
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    StreamChunk chunk;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      auto e = graph_.next(r->handle, std::max(left, std::chrono::milliseconds(0)));
      if (!e) return e.status();
      if (e->end_of_request) return finish(h.request, *r, e->error);
      if (!e->finish_reason.empty()) r->finish_reason = e->finish_reason;
      // A chunk is one text event, with the token ids that came just before it.
      if (e->port == "tokens") {
        r->tokens.insert(r->tokens.end(), e->value.tokens.begin(), e->value.tokens.end());
        continue;
      }
      if (e->port != "text" || (e->value.text.empty() && r->tokens.empty())) continue;
      chunk.kind = ChunkKind::kTokens;
      chunk.text = std::move(e->value.text);
      chunk.tokens.swap(r->tokens);
      r->completion_tokens += static_cast<int64_t>(chunk.tokens.size());
      return chunk;
    }
  }

  Status cancel(const RequestHandle& h) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = h.engine_id == id_ ? requests_.find(h.request) : requests_.end();
    if (it == requests_.end()) return Status::not_found("unknown or finished request");
    return graph_.cancel(it->second.handle);
  }

  EngineStats stats() const override {
    std::lock_guard<std::mutex> l(mu_);
    EngineStats s = stats_;
    s.running = static_cast<int64_t>(requests_.size());
    return s;
  }
  const ModelConfig& config() const override { return config_; }
  const Tokenizer* tokenizer() const override { return tokenizer_.get(); }
  const EngineOptions& options() const override { return options_; }
  bool forwards_chat() const override { return !chat_input_.empty(); }

 private:
  struct Live {
    SessionId session = 0;
    PipelineHandle handle;
    int64_t prompt_tokens = 0, completion_tokens = 0;
    std::vector<int32_t> tokens;  // ids waiting for their text event
    std::string finish_reason;
  };

  // What the engine would refuse (the runtime's rules), refused here before the graph sees
  // it; logprobs cannot cross the process boundary at all.
  Status check(const GenerateRequest& req) const {
    if (req.pooling != Pooling::kNone)
      return Status::unsupported(fmt::format(
          "embeddings: stage '{}' runs in another process, which returns text only", stage_));
    if (req.params.guide)
      return Status::unsupported(fmt::format(
          "constrained output (response_format, grammar): stage '{}' runs in another process, "
          "where the guide cannot follow",
          stage_));
    if (req.params.logprobs >= 0)
      return Status::unsupported(fmt::format(
          "logprobs: stage '{}' runs in another process, which does not report them", stage_));
    return validate_request(req, RequestLimits{config_.n_vocab, options_.max_model_len});
  }

  // The request's terminal chunk; the handle is retired.
  StreamChunk finish(uint64_t id, Live& r, const Status& error) {
    StreamChunk c;
    c.tokens.swap(r.tokens);
    r.completion_tokens += static_cast<int64_t>(c.tokens.size());
    c.prompt_tokens = r.prompt_tokens;
    c.completion_tokens = r.completion_tokens;
    if (error.ok()) {
      c.kind = ChunkKind::kDone;
      c.finish_reason = r.finish_reason.empty() ? "stop" : r.finish_reason;
    } else {
      c.kind = error.code() == StatusCode::kCancelled ? ChunkKind::kCancelled : ChunkKind::kError;
      c.error = error;
    }
    std::lock_guard<std::mutex> l(mu_);
    stats_.generated_tokens += static_cast<uint64_t>(r.completion_tokens);
    ++(c.kind == ChunkKind::kCancelled ? stats_.requests_cancelled : stats_.requests_finished);
    requests_.erase(id);
    return c;
  }

  // A request nobody will read any more: cancelled, then read to its end (which frees it).
  void drop(const PipelineHandle& h) {
    (void)graph_.cancel(h);
    for (;;) {
      auto e = graph_.next(h, std::chrono::seconds(30));
      if (!e || e->end_of_request) return;
    }
  }

  PipelineRuntime& graph_;
  const std::string stage_;
  const std::string chat_input_;  // the graph input routed to the stage's "chat" port, if any
  const ModelConfig config_;
  const std::unique_ptr<Tokenizer> tokenizer_;
  const EngineOptions options_;
  const uint64_t id_;
  mutable std::mutex mu_;
  std::set<SessionId> sessions_;
  std::map<uint64_t, Live> requests_;
  SessionId last_session_ = 0;
  uint64_t last_request_ = 0;
  EngineStats stats_;
};

}  // namespace

Expected<std::unique_ptr<Engine>> make_graph_engine(PipelineRuntime& graph) {
  const StageSpec* s = graph.text_stage();
  if (!s) return Status::invalid_argument("the pipeline routes nothing to output.text");
  const Artifact* model = nullptr;
  for (const Artifact& a : s->artifacts)
    if (a.role == "model") model = &a;
  if (!model)
    return Status::invalid_argument(
        fmt::format("stage '{}' feeds output.text but names no model artifact", s->name));
  const std::string path = artifact_path(graph.spec(), *model);
  ASSIGN_OR_RETURN(ModelFootprint fp, read_model_footprint(path));
  ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, load_model_tokenizer(path));
  EngineOptions o;
  o.model_path = path;
  o.max_model_len = s->engine.ctx > 0 ? s->engine.ctx : graph.options().ctx;
  o.max_seqs = s->capacity;
  o.max_batched_tokens = s->engine.max_batched_tokens;
  o.kv_type = s->engine.kv_type;
  o.kv_type_v = s->engine.kv_type_v;
  std::string chat_input;
  for (const Route& r : graph.spec().routes)
    if (r.from.stage == "input" && r.to.stage == s->name && r.to.port == "chat") chat_input = r.from.port;
  return std::unique_ptr<Engine>(
      new GraphEngine(graph, s->name, chat_input, fp.config, std::move(tok), std::move(o)));
}

}  // namespace edge::pipeline
