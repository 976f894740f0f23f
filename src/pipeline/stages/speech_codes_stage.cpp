#include "pipeline/stages/speech_codes_stage.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "pipeline/stages/engine_stage.h"
#include "pipeline/stages/outetts/outetts_guide.h"

namespace edge::pipeline {

namespace {

// OuteTTS's recommended sampling (temperature 0.4, repetition penalty 1.1), seeded: the same
// text gives the same codes, so a request repeated after a failure is comparable.
SamplingParams speech_sampling() {
  SamplingParams p;
  p.temperature = 0.4f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  p.repeat_penalty = 1.1f;
  p.seed = 1;
  return p;
}

class SpeechCodesRunner final : public EngineStage {
 public:
  static Expected<std::unique_ptr<StageRunner>> start(const std::string& model_path,
                                                      const StageSpec& s,
                                                      const PipelineRunOptions& o) {
    auto r = std::unique_ptr<SpeechCodesRunner>(new SpeechCodesRunner(s.name));
    RETURN_IF_ERROR(r->load(model_path, s, o));
    const Tokenizer* tok = r->engine_->tokenizer();
    if (!tok)
      return Status::invalid_argument(
          fmt::format("stage '{}': the model has no tokenizer", s.name));
    auto vocab = find_outetts_vocab(*tok);
    if (!vocab)
      return vocab.status().with_context(fmt::format("stage '{}' ({})", s.name, model_path));
    r->vocab_ = *vocab;
    return std::unique_ptr<StageRunner>(std::move(r));
  }

  Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
             const std::function<void(StageEvent)>& emit) override {
    auto it = inputs.find("text");
    if (it == inputs.end())
      return Status::invalid_argument(fmt::format("stage '{}': no text", name_));
    std::optional<Speaker> speaker;
    auto voice = inputs.find("voice");
    if (voice != inputs.end() && !voice->second.text.empty()) {
      ASSIGN_OR_RETURN(speaker, read_speaker(voice->second.text));
    }
    ASSIGN_OR_RETURN(GenerateRequest req,
                     build_request(it->second.text, speaker ? &*speaker : nullptr));
    uint64_t seq = 0;
    return submit_and_drain(epoch, std::move(req),
                            [&](const StreamChunk& c) { emit_codes(epoch, &seq, c, emit); });
  }

 private:
  explicit SpeechCodesRunner(std::string name) : EngineStage(std::move(name)) {}

  // A speaker profile whose codes this model has.
  Expected<Speaker> read_speaker(const std::string& json) const {
    auto sp = parse_speaker_json(json);
    if (!sp) return sp.status().with_context(fmt::format("stage '{}': voice", name_));
    for (const SpeakerWord& w : sp->words)
      for (int32_t c : w.codes)
        if (c < 0 || c >= vocab_.n_codes)
          return Status::invalid_argument(fmt::format(
              "stage '{}': voice: code {} of word '{}' is not one of the model's {} codes", name_,
              c, w.word, vocab_.n_codes));
    return sp;
  }

  // The OuteTTS prompt of `text` (spoken by `speaker`, when given) and the guide over its words.
  Expected<GenerateRequest> build_request(const std::string& text, const Speaker* speaker) const {
    const std::vector<std::string> words = normalize_tts_text(text);
    if (words.empty())
      return Status::invalid_argument(
          fmt::format("stage '{}': nothing to speak in the text", name_));
    const Tokenizer& tok = *engine_->tokenizer();
    GenerateRequest req;
    req.prompt = tok.encode(outetts_prompt(vocab_.version, words, speaker), /*add_special=*/true);
    std::vector<std::vector<int32_t>> word_ids;
    for (const std::string& w : words) word_ids.push_back(tok.encode(w, /*add_special=*/false));
    auto guide = std::make_shared<OuteTtsGuide>(vocab_, std::move(word_ids),
                                                tok.encode("\n", /*add_special=*/false));
    const int64_t ctx = engine_->options().max_model_len;
    const int64_t room = ctx - static_cast<int64_t>(req.prompt.size()) - 1;
    if (room < 16)
      return Status::invalid_argument(fmt::format(
          "stage '{}': the text is too long ({} prompt tokens; the stage's context is {})", name_,
          req.prompt.size(), ctx));
    req.params.sampling = speech_sampling();
    req.params.max_tokens = static_cast<int32_t>(std::min<int64_t>(room, guide->max_tokens()));
    req.params.stop_ids = {vocab_.audio_end};
    req.params.guide = std::move(guide);
    return req;
  }

  // Engine chunk -> a code event: only code tokens pass, as code indices; a chunk with
  // none is dropped unless it is the terminal one.
  void emit_codes(uint64_t epoch, uint64_t* seq, const StreamChunk& c,
                  const std::function<void(StageEvent)>& emit) const {
    StageEvent e;
    e.epoch = epoch, e.terminal = c.kind != ChunkKind::kTokens, e.stage = name_, e.port = "codes";
    for (int32_t id : c.tokens)
      if (vocab_.is_code(id)) e.value.tokens.push_back(id - vocab_.code0);
    if (c.kind == ChunkKind::kError || c.kind == ChunkKind::kCancelled) e.error = c.error;
    e.finish_reason = c.finish_reason;
    if (e.terminal || !e.value.tokens.empty()) {
      e.seq = (*seq)++;
      emit(std::move(e));
    }
  }

  OuteTtsVocab vocab_;
};

}  // namespace

const StageKind kSpeechCodesKind{.name = "speech_codes",
                                 .contract = "speech.codes",
                                 .start = SpeechCodesRunner::start,
                                 .plan_reservation = engine_stage_reservation,
                                 .max_version = 2};

}  // namespace edge::pipeline
