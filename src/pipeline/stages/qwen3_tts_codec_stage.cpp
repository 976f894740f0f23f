// The audio.pcm@2 stage on the Qwen3-TTS 12 Hz codec decoder (model/qwen3_tts_codec_decoder.h):
// codes in as the talker makes them (frames of n_quantizers codes, flattened, in any split),
// 24 kHz PCM out frame by frame. The decoder is causal, so every whole frame that arrives is
// decoded at once and its samples are final: no window, no lookahead, and the PCM equals the
// whole-utterance decode. The model artifact is the tokenizer's model.safetensors (a pinned
// file); its config.json is read from the same folder. In process or in a worker (a worker
// picks this kind for audio.pcm@2; @1 is the WavTokenizer vocoder).
#include "pipeline/stages/qwen3_tts_codec_stage.h"

#include <fmt/format.h>

#include <filesystem>
#include <mutex>
#include <set>

#include "formats/hf_config.h"
#include "model/qwen3_tts_codec_decoder.h"
#include "pipeline/graph/executor.h"
#include "pipeline/graph/stage_kind.h"
#include "pipeline/stages/cancelled_epochs.h"
#include "pipeline/worker/worker.h"

namespace edge::pipeline {

namespace {

class Qwen3TtsCodecStageRunner final : public StageRunner {
 public:
  Qwen3TtsCodecStageRunner(std::string name, std::unique_ptr<Qwen3TtsCodec> c, int64_t bytes)
      : name_(std::move(name)), codec_(std::move(c)), bytes_(bytes) {}

  Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
             const std::function<void(StageEvent)>& emit) override {
    auto it = inputs.find("codes");
    if (it == inputs.end())
      return Status::invalid_argument(fmt::format("stage '{}': no codes", name_));
    std::atomic<bool> stop{false};
    auto ch = std::make_shared<Channel>(1);
    (void)ch->push(it->second, stop);
    ch->close();
    StageInputs in({{"codes", ch}}, stop);
    return run_streaming(epoch, in, nullptr, emit);
  }

  // Codes into a frame buffer; each whole frame through the stream as soon as it is complete.
  Status run_streaming(uint64_t epoch, StageInputs& in, const RequestParams*,
                       const std::function<void(StageEvent)>& emit) override {
    Qwen3TtsCodecStream stream(*codec_);
    const int64_t nq = codec_->n_quantizers();
    std::vector<int32_t> pending;  // codes of the frame not yet complete
    uint64_t seq = 0;
    auto send = [&](std::vector<float> pcm, bool terminal) {
      StageEvent e;
      e.epoch = epoch, e.seq = seq++, e.terminal = terminal, e.stage = name_, e.port = "pcm";
      e.value.samples = std::move(pcm);
      emit(std::move(e));
    };
    Status st;
    for (;;) {
      if (cancelled_.contains(epoch)) {
        st = Status::cancelled(fmt::format("stage '{}': cancelled", name_));
        break;
      }
      auto chunk = in.next("codes");
      if (!chunk.ok()) {
        st = chunk.status();
        break;
      }
      if (!*chunk) break;  // the utterance is complete
      const std::vector<int32_t>& codes = (*chunk)->tokens;
      pending.insert(pending.end(), codes.begin(), codes.end());
      const int64_t frames = static_cast<int64_t>(pending.size()) / nq;
      if (frames == 0) continue;
      Expected<std::vector<float>> pcm = Status();
      {
        std::lock_guard<std::mutex> l(decode_mu_);  // one decode at a time per codec
        pcm = stream.decode_frames(pending.data(), frames);
      }
      if (!pcm.ok()) {
        st = pcm.status().with_context("stage '" + name_ + "'");
        break;
      }
      pending.erase(pending.begin(), pending.begin() + frames * nq);
      send(std::move(*pcm), false);
    }
    cancelled_.forget(epoch);
    if (st.ok() && !pending.empty())
      st = Status::invalid_argument(fmt::format(
          "stage '{}': the codes ended {} codes into a frame of {}", name_, pending.size(), nq));
    if (!st.ok()) return st;
    send({}, true);
    return Status();
  }

  void cancel(uint64_t epoch) override {
    cancelled_.add(epoch);
  }

  // The mapped safetensors (an upper bound of what is resident) plus the F32 arrays made at
  // load, which the file's size bounds at F32.
  int64_t resident_bytes() const override { return bytes_; }

 private:
  std::string name_;
  std::unique_ptr<Qwen3TtsCodec> codec_;
  int64_t bytes_ = 0;
  std::mutex decode_mu_;
  CancelledEpochs cancelled_;
};

Expected<std::unique_ptr<StageRunner>> start_qwen3_tts_codec_stage(const std::string& model_path,
                                                                   const StageSpec& s,
                                                                   const PipelineRunOptions& o) {
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(model_path, ec);
  Qwen3TtsCodecOptions co;
  co.n_threads = o.n_threads;
  co.pool = o.compute_pool;  // the runtime's pool for this stage (PipelineRunOptions::stage_pools)
  ASSIGN_OR_RETURN(std::unique_ptr<Qwen3TtsCodec> c, Qwen3TtsCodec::load(hf_folder_of(model_path), co));
  // One frame decoded at start so that the first request's first audio does not pay for the
  // weights' first touch (the mapped file's pages, the kernels' first use).
  RETURN_IF_ERROR(c->decode(std::vector<int32_t>(static_cast<size_t>(c->n_quantizers()), 0))
                      .status()
                      .with_context("qwen3_tts_codec: warm-up frame"));
  const auto bytes = dir ? 0 : std::filesystem::file_size(model_path, ec);
  return std::unique_ptr<StageRunner>(
      new Qwen3TtsCodecStageRunner(s.name, std::move(c), ec ? 0 : static_cast<int64_t>(bytes)));
}

}  // namespace

extern const StageKind kQwen3TtsCodecKind{.name = "qwen3_tts_codec",
                                          .contract = "audio.pcm",
                                          .start = start_qwen3_tts_codec_stage,
                                          .start_in_worker = start_in_worker,
                                          .plan_reservation = nullptr,
                                          .streams_input = true,
                                          .min_version = 2,
                                          .max_version = 2};

}  // namespace edge::pipeline
