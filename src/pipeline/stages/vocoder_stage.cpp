#include "pipeline/stages/vocoder_stage.h"

#include <fmt/format.h>

#include <filesystem>
#include <mutex>
#include <set>

#include "core/process_rss.h"
#include "model/vocoder.h"
#include "pipeline/stages/cancelled_epochs.h"
#include "pipeline/worker/worker.h"

namespace edge::pipeline {

namespace {

class VocoderStageRunner final : public StageRunner {
 public:
  VocoderStageRunner(std::string name, std::unique_ptr<Vocoder> v, VocoderStreamOptions so,
                     int64_t file_bytes)
      : name_(std::move(name)),
        vocoder_(std::move(v)),
        stream_options_(so),
        file_bytes_(file_bytes) {}

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

  // Codes chunk by chunk into the stream; PCM out as soon as it is final.
  Status run_streaming(uint64_t epoch, StageInputs& in, const RequestParams*,
                       const std::function<void(StageEvent)>& emit) override {
    ASSIGN_OR_RETURN(VocoderStream stream, VocoderStream::create(*vocoder_, stream_options_));
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
      if (codes.empty()) continue;
      std::vector<float> pcm;
      {
        std::lock_guard<std::mutex> l(decode_mu_);  // one decode at a time per vocoder
        auto out = stream.decode_chunk(codes.data(), static_cast<int64_t>(codes.size()));
        if (!out.ok()) {
          st = out.status().with_context("stage '" + name_ + "'");
          break;
        }
        pcm = std::move(*out);
      }
      if (!pcm.empty()) send(std::move(pcm), false);
    }
    cancelled_.forget(epoch);
    if (!st.ok()) return st;
    std::vector<float> rest;
    {
      std::lock_guard<std::mutex> l(decode_mu_);
      ASSIGN_OR_RETURN(rest, stream.finish());
    }
    send(std::move(rest), true);
    return Status();
  }

  void cancel(uint64_t epoch) override {
    cancelled_.add(epoch);
  }

  // The weights are the mapped file (an upper bound of what is resident) plus the
  // vocoder's own arrays, which the file's size bounds too at F32.
  int64_t resident_bytes() const override { return file_bytes_; }

 private:
  std::string name_;
  std::unique_ptr<Vocoder> vocoder_;
  VocoderStreamOptions stream_options_;
  int64_t file_bytes_ = 0;
  std::mutex decode_mu_;
  CancelledEpochs cancelled_;
};

Expected<std::unique_ptr<StageRunner>> start_vocoder_stage(const std::string& model_path,
                                                           const StageSpec& s,
                                                           const PipelineRunOptions& o) {
  VocoderOptions vo;
  vo.n_threads = o.n_threads;
  ASSIGN_OR_RETURN(std::unique_ptr<Vocoder> v, Vocoder::load(model_path, vo));
  VocoderStreamOptions so;
  so.window = s.vocoder.window;
  so.context = s.vocoder.context;
  so.lookahead = s.vocoder.lookahead;
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(model_path, ec);
  return std::unique_ptr<StageRunner>(
      new VocoderStageRunner(s.name, std::move(v), so, ec ? 0 : static_cast<int64_t>(bytes)));
}

}  // namespace

const StageKind kVocoderKind{.name = "vocoder",
                             .contract = "audio.pcm",
                             .start = start_vocoder_stage,
                             .start_in_worker = start_in_worker,
                             .streams_input = true,
                             .max_version = 1};

}  // namespace edge::pipeline
