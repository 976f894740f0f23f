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
};

}  // namespace

Expected<const PortValue*> find_prompt(const std::string& stage,
                                       const std::map<std::string, PortValue>& inputs) {
  if (inputs.count("media"))
    return Status::unsupported(
        fmt::format("stage '{}': media input needs an encoder stage (not built yet)", stage));
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
