// The speech.codes@3 stage on the Qwen3-TTS talker and code predictor
// (model/arch/qwen3_tts_talker.h): text, an optional voice (one of the checkpoint's named
// speakers; "" speaks with its first speaker, or with none for a Base checkpoint) and an
// optional language ("" or "auto": the model decides) in; each frame of 16 codes on port
// "codes" as soon as the code predictor has filled it, so the codec decoder starts on the
// first frame while the talker computes the next.
//
// The model artifact is the checkpoint's model.safetensors (a pinned file); config.json and
// the tokenizer are read from the same folder. The talker runs one utterance at a time (its
// thread pool runs one region at a time); a second request waits for the first. Sampling
// is Qwen's (temperature 0.9, top-k 50, repetition penalty 1.05 on codebook 0) with a fixed
// seed: the same text gives the same codes. The talker's KV cache is the stage's
// (engine.kv_type, engine.kv_budget_bytes; frames are cut to what the budget holds).
#include "pipeline/stages/qwen3_tts_talker_stage.h"

#include <fmt/format.h>

#include <filesystem>
#include <mutex>
#include <set>

#include "formats/hf_config.h"
#include "model/arch/qwen3_tts_talker.h"
#include "pipeline/graph/executor.h"
#include "pipeline/stages/cancelled_epochs.h"

namespace edge::pipeline {

namespace {

namespace fs = std::filesystem;

// Frames an utterance may take: generous for speech (8 frames, 0.64 s, per text token,
// about twice a normal speaking rate, plus 2 s), so a model that never says "end" still
// stops, and the KV cache it needs is bounded by the text.
int64_t frame_cap(int64_t text_tokens) {
  return 25 + 8 * text_tokens;
}

class Qwen3TtsTalkerStageRunner final : public StageRunner {
 public:
  Qwen3TtsTalkerStageRunner(std::string name, std::unique_ptr<Qwen3TtsTalker> t,
                            const EngineSettings& e, int64_t ctx, KvType kv)
      : name_(std::move(name)), talker_(std::move(t)), settings_(e), ctx_(ctx), kv_type_(kv) {}

  Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
             const std::function<void(StageEvent)>& emit) override {
    auto text = inputs.find("text");
    if (text == inputs.end() || text->second.text.empty())
      return Status::invalid_argument(fmt::format("stage '{}': no text", name_));
    ASSIGN_OR_RETURN(const std::string speaker, speaker_of(inputs));
    ASSIGN_OR_RETURN(const std::string language, language_of(inputs));
    Qwen3TtsGenerateOptions o;
    o.seed = 1;
    o.kv_type = kv_type_;
    o.kv_budget_bytes = settings_.kv_budget_bytes;
    const int64_t n_text =
        static_cast<int64_t>(talker_->tokenizer()->encode(text->second.text, false).size());
    // The prompt takes about n_text + 12 positions; frames get the rest of the context.
    const int64_t room = ctx_ - n_text - 16;
    if (room < 1)
      return Status::invalid_argument(fmt::format(
          "stage '{}': the text is too long ({} tokens; the stage's context is {})", name_,
          n_text, ctx_));
    o.max_frames = static_cast<int32_t>(std::min(room, frame_cap(n_text)));
    uint64_t seq = 0;
    o.on_frame = [&](std::span<const int32_t> frame) {
      if (cancelled_.contains(epoch)) return false;
      StageEvent e;
      e.epoch = epoch, e.seq = seq++, e.stage = name_, e.port = "codes";
      e.value.tokens.assign(frame.begin(), frame.end());
      emit(std::move(e));
      return true;
    };
    Expected<Qwen3TtsFrames> frames = Status();
    {
      std::lock_guard<std::mutex> l(generate_mu_);
      active_kv_ = talker_->kv_bytes(kv_type_, n_text + 16 + o.max_frames);
      frames = talker_->generate(text->second.text, speaker, language, o);
      active_kv_ = 0;
    }
    cancelled_.forget(epoch);
    if (!frames.ok()) return frames.status().with_context("stage '" + name_ + "'");
    StageEvent end;
    end.epoch = epoch, end.seq = seq, end.terminal = true, end.stage = name_, end.port = "codes";
    end.finish_reason = frames->stopped ? "stop" : "length";
    emit(std::move(end));
    return Status();
  }

  void cancel(uint64_t epoch) override {
    cancelled_.add(epoch);
  }

  // The packed matrices (anonymous) plus the KV cache of the utterance being spoken.
  int64_t resident_bytes() const override { return talker_->packed_bytes() + active_kv_; }

 private:
  // A named speaker of the checkpoint, or its first one ("" for a checkpoint without any).
  Expected<std::string> speaker_of(const std::map<std::string, PortValue>& inputs) const {
    const auto& speakers = talker_->config().speakers;
    auto v = inputs.find("voice");
    if (v == inputs.end() || v->second.text.empty())
      return speakers.empty() ? std::string() : speakers.front().name;
    if (talker_->config().find_speaker(v->second.text)) return v->second.text;
    std::vector<std::string> names;
    for (const Qwen3TtsSpeaker& s : speakers) names.push_back(s.name);
    return Status::invalid_argument(fmt::format(
        "stage '{}': voice '{}' is not a speaker of this model ({})", name_, v->second.text,
        names.empty() ? "it has none" : join_with_and(names)));
  }

  Expected<std::string> language_of(const std::map<std::string, PortValue>& inputs) const {
    auto l = inputs.find("language");
    if (l == inputs.end() || l->second.text.empty() || l->second.text == "auto") return std::string("auto");
    if (talker_->config().find_language(l->second.text)) return l->second.text;
    std::vector<std::string> names = {"auto"};
    for (const Qwen3TtsLanguage& x : talker_->config().languages) names.push_back(x.name);
    return Status::invalid_argument(fmt::format("stage '{}': language '{}' is not one of {}",
                                                name_, l->second.text, join_with_and(names)));
  }

  std::string name_;
  std::unique_ptr<Qwen3TtsTalker> talker_;
  EngineSettings settings_;
  int64_t ctx_ = 4096;
  KvType kv_type_ = KvType::kF16;
  std::atomic<int64_t> active_kv_{0};
  std::mutex generate_mu_;
  CancelledEpochs cancelled_;
};

Expected<std::unique_ptr<StageRunner>> start_qwen3_tts_talker_stage(const std::string& model_path,
                                                                    const StageSpec& s,
                                                                    const PipelineRunOptions& o) {
  KvType kv = KvType::kF16;
  if (!parse_kv_type(s.engine.kv_type, &kv))
    return Status::invalid_argument(
        fmt::format("stage '{}': kv_type '{}' is not a KV type", s.name, s.engine.kv_type));
  Qwen3TtsLoadOptions lo;
  lo.n_threads = o.n_threads;
  lo.pool = o.compute_pool;  // the runtime's pool for this stage (PipelineRunOptions::stage_pools)
  ASSIGN_OR_RETURN(std::unique_ptr<Qwen3TtsTalker> t,
                   Qwen3TtsTalker::load(hf_folder_of(model_path), lo));
  if (!t->tokenizer())
    return Status::invalid_argument(fmt::format(
        "stage '{}': {} has no tokenizer (vocab.json + merges.txt)", s.name, model_path));
  // Two frames spoken at start, so that the first request's first audio does not pay for
  // the first use of the kernels, scratch buffers and pool threads.
  Qwen3TtsGenerateOptions warm;
  warm.max_frames = 2;
  warm.kv_type = kv;
  RETURN_IF_ERROR(t->generate("a", "", "", warm).status().with_context(
      fmt::format("stage '{}': warm-up", s.name)));
  const int64_t ctx = s.engine.ctx > 0 ? s.engine.ctx : o.ctx;
  return std::unique_ptr<StageRunner>(
      new Qwen3TtsTalkerStageRunner(s.name, std::move(t), s.engine, ctx, kv));
}

// The file's bytes bound the packed weights (packing only shrinks BF16/F32 matrices), plus
// the KV of one utterance at the stage's context and the activations of a pass.
Expected<PlannedBytes> plan_qwen3_tts_talker(const StageSpec& s, const Artifact&,
                                             const std::string& model_path,
                                             const PipelinePlanOptions& o) {
  std::error_code ec;
  const auto bytes = fs::file_size(model_path, ec);
  if (ec) return Status::not_found(fmt::format("stage '{}': {}: {}", s.name, model_path, ec.message()));
  const int64_t ctx = s.engine.ctx > 0 ? s.engine.ctx : o.ctx;
  KvType kv_type = KvType::kF16;
  if (!parse_kv_type(s.engine.kv_type, &kv_type))
    return Status::invalid_argument(
        fmt::format("stage '{}': kv_type '{}' is not a KV type", s.name, s.engine.kv_type));
  const std::string dir = hf_folder_of(model_path);
  ASSIGN_OR_RETURN(nlohmann::json j, read_json_file((fs::path(dir) / "config.json").string()));
  auto c = qwen3_tts_config_from_hf(j);
  if (!c) return c.status().with_context(fmt::format("stage '{}': {}", s.name, dir));
  const int64_t per_position = 2 * c->talker.n_layer *
                               kv_row_bytes(kv_type, c->talker.n_head_kv, c->talker.head_dim);
  const int64_t kv = s.engine.kv_budget_bytes > 0 ? s.engine.kv_budget_bytes
                                                  : (ctx + 15) / 16 * 16 * per_position;
  return PlannedBytes{static_cast<int64_t>(bytes) + kv + (64 << 20),
                      fmt::format("{} + talker KV at ctx {} + 64 MiB activations",
                                  fs::path(model_path).filename().string(), ctx)};
}

}  // namespace

extern const StageKind kQwen3TtsTalkerKind{.name = "qwen3_tts_talker",
                                           .contract = "speech.codes",
                                           .start = start_qwen3_tts_talker_stage,
                                           .plan_reservation = plan_qwen3_tts_talker,
                                           .min_version = 3,
                                           .max_version = 3};

}  // namespace edge::pipeline
