#include "pipeline/stages/lm_stage.h"

#include <fmt/format.h>

#include <chrono>

#include "pipeline/stages/engine_stage.h"
#include "pipeline/worker/worker.h"

namespace edge::pipeline {

namespace {

// text.generate@1 on our engine, in this process: prompt tokens (or text, tokenised with
// the model's tokenizer) in; generated tokens and text out, one event per engine chunk.
class LmStageRunner final : public EngineStage {
 public:
  static Expected<std::unique_ptr<StageRunner>> start(const std::string& model_path,
                                                      const StageSpec& s,
                                                      const PipelineRunOptions& o) {
    auto r = std::unique_ptr<LmStageRunner>(new LmStageRunner(s.name, o.max_tokens));
    RETURN_IF_ERROR(r->load(model_path, s, o));
    r->media_begin_ = s.engine.media_begin;
    r->media_end_ = s.engine.media_end;
    return std::unique_ptr<StageRunner>(std::move(r));
  }

  Status run_with_params(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
                         const RequestParams* params,
                         const std::function<void(StageEvent)>& emit) override {
    ASSIGN_OR_RETURN(const PortValue* prompt, find_prompt(name_, inputs));
    GenerateRequest req;
    req.prompt = prompt->tokens;
    if (req.prompt.empty()) {
      const Tokenizer* tok = engine_->tokenizer();
      if (!tok)
        return Status::invalid_argument(
            fmt::format("stage '{}': text prompt but the model has no tokenizer", name_));
      req.prompt = tok->encode(prompt->text);
    }
    if (auto m = inputs.find("media"); m != inputs.end() && !m->second.embeddings.empty())
      RETURN_IF_ERROR(splice_media(m->second, &req));
    if (params)
      req.params = *params;
    else
      req.params.max_tokens = max_tokens_;  // greedy by default
    uint64_t seq = 0;
    return submit_and_drain(epoch, std::move(req), [&](const StreamChunk& c) {
      emit_chunk(name_, epoch, seq++, c, emit);
    });
  }

  Engine* engine() override { return engine_.get(); }

 private:
  LmStageRunner(std::string name, int32_t max_tokens)
      : EngineStage(std::move(name)), max_tokens_(max_tokens) {}

  // The media rows [rows, n_embd] before the prompt's text: after its first token when that
  // is the model's BOS, between the stage's media_begin and media_end texts, one placeholder
  // position per row (the engine takes the rows there; their hash keys the prefix cache).
  Status splice_media(const PortValue& m, GenerateRequest* req) const {
    const int64_t n_embd = model_->config().n_embd;
    if (m.rows <= 0 || static_cast<int64_t>(m.embeddings.size()) != m.rows * n_embd)
      return Status::invalid_argument(fmt::format(
          "stage '{}': media of {} values in {} rows is not rows of the model's width {}", name_,
          m.embeddings.size(), m.rows, n_embd));
    const Tokenizer* tok = engine_->tokenizer();
    if (!tok && !(media_begin_.empty() && media_end_.empty()))
      return Status::invalid_argument(
          fmt::format("stage '{}': media_begin/media_end need the model's tokenizer", name_));
    const std::vector<int32_t> text = std::move(req->prompt);
    size_t at = 0;
    req->prompt.clear();
    if (tok && !text.empty() && text[0] == tok->bos_id()) req->prompt.push_back(text[at++]);
    auto add_text = [&](const std::string& t) {
      if (t.empty()) return;
      const std::vector<int32_t> ids = tok->encode(t, /*add_special=*/false);
      req->prompt.insert(req->prompt.end(), ids.begin(), ids.end());
    };
    add_text(media_begin_);
    MediaEmbedding e;
    e.position = static_cast<int64_t>(req->prompt.size());
    e.n_tokens = m.rows;
    e.rows = std::make_shared<const std::vector<float>>(m.embeddings);
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the rows' bytes
    const auto* bytes = reinterpret_cast<const uint8_t*>(m.embeddings.data());
    for (size_t i = 0; i < m.embeddings.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    e.hash = h;
    req->prompt.insert(req->prompt.end(), static_cast<size_t>(m.rows), 0);  // placeholders
    add_text(media_end_);
    req->prompt.insert(req->prompt.end(), text.begin() + static_cast<int64_t>(at), text.end());
    req->media.push_back(std::move(e));
    return Status();
  }

  // Engine chunk -> one event on each of the ports "tokens" and "text", same seq.
  static void emit_chunk(const std::string& stage, uint64_t epoch, uint64_t seq,
                         const StreamChunk& c, const std::function<void(StageEvent)>& emit) {
    const bool terminal = c.kind != ChunkKind::kTokens;
    for (const char* port : {"tokens", "text"}) {
      StageEvent e;
      e.epoch = epoch, e.seq = seq, e.terminal = terminal, e.stage = stage, e.port = port;
      if (std::string(port) == "tokens")
        e.value.tokens = c.tokens;
      else
        e.value.text = c.text;
      if (c.kind == ChunkKind::kError || c.kind == ChunkKind::kCancelled) e.error = c.error;
      e.finish_reason = c.finish_reason;
      emit(std::move(e));
    }
  }

  int32_t max_tokens_;
  std::string media_begin_, media_end_;  // StageSpec::engine's
};

}  // namespace

Expected<const PortValue*> find_prompt(const std::string& stage,
                                       const std::map<std::string, PortValue>& inputs) {
  auto it = inputs.find("prompt");
  if (it == inputs.end())
    return Status::invalid_argument(fmt::format("stage '{}': no prompt", stage));
  return &it->second;
}

const StageKind kLmKind{.name = "lm",
                        .contract = "text.generate",
                        .start = LmStageRunner::start,
                        .start_in_worker = start_in_worker,
                        .plan_reservation = engine_stage_reservation};

}  // namespace edge::pipeline
