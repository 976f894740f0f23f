#include "pipeline/stages/audio_stage.h"

#include "kernels/api.h"
#include "model/arch/whisper_enc.h"
#include "pipeline/stages/encoder_stage.h"
#include "pipeline/worker/worker.h"

namespace edge::pipeline {
namespace {

class AudioStageRunner final : public EncoderStageRunner {
 public:
  AudioStageRunner(const std::string& name, AudioEncoderModel m, int threads, int64_t resident)
      : EncoderStageRunner(name, "pcm", threads, resident), model_(std::move(m)) {}

 private:
  Expected<std::vector<float>> encode(const PortValue& in, ThreadPool& pool,
                                      int64_t* rows) override {
    if (in.samples.empty()) return Status::invalid_argument("no PCM samples (16 kHz mono f32)");
    return encode_audio({select_kernels(), pool}, model_, in.samples.data(),
                        static_cast<int64_t>(in.samples.size()), rows);
  }
  AudioEncoderModel model_;
};

}  // namespace

Expected<int64_t> audio_stage_reservation(const std::string& projector_path) {
  ASSIGN_OR_RETURN(AudioFootprint fp, audio_encoder_footprint(projector_path));
  return static_cast<int64_t>(fp.weights_mapped + fp.weights_anon + fp.activations);
}

namespace {

Expected<std::unique_ptr<StageRunner>> start_audio_stage(const std::string& projector_path,
                                                         const StageSpec& s,
                                                         const PipelineRunOptions& o) {
  const int threads = o.n_threads > 0 ? o.n_threads : 2;
  ASSIGN_OR_RETURN(AudioEncoderModel m, load_audio_encoder(projector_path, threads));
  ASSIGN_OR_RETURN(int64_t resident, audio_stage_reservation(projector_path));
  return std::unique_ptr<StageRunner>(
      new AudioStageRunner(s.name, std::move(m), threads, resident));
}

}  // namespace

const StageKind kAudioEncoderKind{.name = "audio_encoder",
                                  .contract = "audio.encode",
                                  .start = start_audio_stage,
                                  .start_in_worker = start_in_worker,
                                  .plan_reservation = encoder_plan<audio_stage_reservation>};

}  // namespace edge::pipeline
