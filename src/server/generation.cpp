#include "server/generation.h"

namespace edge::server {

std::optional<ApiError> Generation::start(Engine& engine, const std::vector<int32_t>& prompt,
                                          const CommonRequest& req, const OutputSetup& setup,
                                          ServerMetrics& metrics, Clock::time_point arrived,
                                          std::unique_ptr<Generation>& out,
                                          const std::vector<MediaEmbedding>& media,
                                          const std::string& chat) {
  auto session = engine.open_session();
  if (!session) return api_error_from_status(session.status());
  std::unique_ptr<Generation> g(new Generation(engine, *session, metrics, arrived));
  for (int32_t i = 0; i < req.n; ++i) {
    GenerateRequest r;
    r.prompt = prompt;
    r.params = params_for_choice(req, i);
    r.media = media;
    r.chat = chat;
    auto h = engine.submit(*session, std::move(r));
    if (!h) return api_error_from_status(h.status());  // ~Generation cancels the others
    ChoiceOutput output(setup.split_reasoning, setup.reasoning_open, setup.tools, setup.harmony,
                        setup.harmony_prefix);
    g->choices_.push_back(Choice{*h, std::move(output), false, arrived, 0});
  }
  metrics.on_prompt_tokens(static_cast<int64_t>(prompt.size()) * req.n);
  g->usage_.prompt_tokens = static_cast<int64_t>(prompt.size());
  out = std::move(g);
  return std::nullopt;
}

Generation::~Generation() {
  if (closed_) return;
  // Closing the session cancels its live requests and frees their KV at once.
  (void)engine_.close_session(session_);
}

void Generation::cancel() {
  if (closed_) return;
  bool live = false;
  for (auto& c : choices_) live |= !c.done;
  if (live) metrics_.on_cancelled();
  (void)engine_.close_session(session_);
  closed_ = true;
}

void Generation::record_tokens(Choice& c, size_t n) {
  if (n == 0) return;
  const auto now = Clock::now();
  if (!first_token_seen_) {
    first_token_seen_ = true;
    metrics_.on_ttft(std::chrono::duration<double>(now - arrived_).count());
  } else if (c.last_token != arrived_) {
    // One observation per token: a chunk of k tokens spreads its wait over k.
    const double per =
        std::chrono::duration<double>(now - c.last_token).count() / static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) metrics_.on_inter_token(per);
  }
  c.last_token = now;
  metrics_.on_generated_tokens(static_cast<int64_t>(n));
}

Generation::Poll Generation::on_chunk(int index, StreamChunk chunk, ChoiceEvent& ev) {
  Choice& c = choices_[static_cast<size_t>(index)];
  ev = ChoiceEvent{};
  ev.choice = index;
  if (chunk.kind == ChunkKind::kError || chunk.kind == ChunkKind::kCancelled) {
    c.done = true;
    error_ = chunk.kind == ChunkKind::kError
                 ? api_error_from_status(chunk.error)
                 : api_error_from_status(Status::unavailable("the request was cancelled"));
    return Poll::kError;
  }
  record_tokens(c, chunk.tokens.size());
  c.n_tokens += static_cast<int64_t>(chunk.tokens.size());
  ev.tokens = std::move(chunk.tokens);
  if (!chunk.text.empty()) ev.delta = c.output.push(chunk.text);
  ev.logprobs = std::move(chunk.logprobs);
  if (chunk.kind == ChunkKind::kDone) {
    OutputDelta tail = c.output.finish();
    ev.delta.content += tail.content;
    ev.delta.reasoning += tail.reasoning;
    for (auto& call : tail.calls) ev.delta.calls.push_back(std::move(call));
    ev.finish_reason = chunk.finish_reason.empty() ? "stop" : chunk.finish_reason;
    if (c.output.tool_calls_seen() > 0 && ev.finish_reason == "stop")
      ev.finish_reason = "tool_calls";
    c.done = true;
    usage_.completion_tokens += chunk.completion_tokens > 0 ? chunk.completion_tokens : c.n_tokens;
    if (chunk.prompt_tokens > 0) usage_.prompt_tokens = chunk.prompt_tokens;
    usage_.cached_tokens = std::max(usage_.cached_tokens, chunk.cached_prompt_tokens);
    usage_.accepted_prediction_tokens += chunk.spec_accepted;
    usage_.rejected_prediction_tokens += chunk.spec_drafted - chunk.spec_accepted;
  }
  return Poll::kEvent;
}

Generation::Poll Generation::poll(ChoiceEvent& ev, std::chrono::milliseconds timeout) {
  if (closed_) return Poll::kDone;
  if (lifecycle_ && lifecycle_->past_drain_deadline()) {
    cancel();
    error_ = api_error_from_status(
        Status::unavailable("the server is shutting down: the request was cancelled"));
    return Poll::kError;
  }
  std::vector<size_t> live;
  for (size_t k = 0; k < choices_.size(); ++k) {
    const size_t i = (cursor_ + k) % choices_.size();
    if (!choices_[i].done) live.push_back(i);
  }
  if (live.empty()) return Poll::kDone;
  // Several choices share the wait; each gets a slice so none starves the others.
  const auto slice =
      std::max(std::chrono::milliseconds(1), timeout / static_cast<int>(live.size()));
  for (size_t i : live) {
    auto chunk = engine_.next(choices_[i].handle, slice);
    if (!chunk) {
      if (chunk.status().code() == StatusCode::kDeadlineExceeded) continue;
      choices_[i].done = true;
      error_ = api_error_from_status(chunk.status());
      return Poll::kError;
    }
    cursor_ = i + 1;
    return on_chunk(static_cast<int>(i), std::move(*chunk), ev);
  }
  return Poll::kIdle;
}

std::optional<ApiError> collect_all(Generation& g, std::vector<ChoiceResult>& out,
                                    const std::function<bool()>& client_gone) {
  out.assign(static_cast<size_t>(g.n_choices()), ChoiceResult{});
  while (true) {
    if (client_gone && client_gone()) {
      g.cancel();
      ApiError e;
      e.http_status = 499;  // nginx's "client closed request": nobody reads it
      e.message = "the client closed the connection";
      e.code = "client_closed";
      return e;
    }
    ChoiceEvent ev;
    switch (g.poll(ev, std::chrono::milliseconds(50))) {
      case Generation::Poll::kDone:
        return std::nullopt;
      case Generation::Poll::kError:
        return g.error();
      case Generation::Poll::kIdle:
        continue;
      case Generation::Poll::kEvent:
        break;
    }
    ChoiceResult& r = out[static_cast<size_t>(ev.choice)];
    r.content += ev.delta.content;
    r.reasoning += ev.delta.reasoning;
    for (auto& c : ev.delta.calls) r.calls.push_back(std::move(c));
    for (auto& lp : ev.logprobs) r.logprobs.push_back(std::move(lp));
    r.tokens.insert(r.tokens.end(), ev.tokens.begin(), ev.tokens.end());
    if (!ev.finish_reason.empty()) r.finish_reason = ev.finish_reason;
  }
}

}  // namespace edge::server
