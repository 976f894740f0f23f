#include "pipeline/stages/vision_stage.h"

#include <fmt/format.h>

#include "core/thread_pool.h"
#include "formats/image.h"
#include "kernels/api.h"
#include "model/arch/clip_vision.h"
#include "pipeline/stages/encoder_stage.h"
#include "pipeline/worker/worker.h"

namespace edge::pipeline {

namespace {

class VisionStageRunner final : public EncoderStageRunner {
 public:
  VisionStageRunner(const std::string& name, std::unique_ptr<VisionEncoderModel> m, int threads,
                    int64_t resident)
      : EncoderStageRunner(name, "image", threads, resident), model_(std::move(m)) {}

 private:
  Expected<std::vector<float>> encode(const PortValue& in, ThreadPool& pool,
                                      int64_t* rows) override {
    if (in.width <= 0 || in.height <= 0 ||
        static_cast<int64_t>(in.pixels.size()) != in.width * in.height * 3)
      return Status::invalid_argument(
          fmt::format("image of {} bytes is not {}x{}x3", in.pixels.size(), in.width, in.height));
    const ClipVisionHparams& h = model_->hparams;
    RgbImage img;
    img.width = in.width;
    img.height = in.height;
    img.rgb = in.pixels;
    const std::vector<float> px = clip_vision_pixels(h, img);
    *rows = h.n_tokens();
    return clip_vision_forward({select_kernels(), pool}, h, model_->weights, px.data());
  }
  std::unique_ptr<VisionEncoderModel> model_;
};

}  // namespace

Expected<int64_t> vision_stage_reservation(const std::string& projector_path) {
  ASSIGN_OR_RETURN(VisionFootprint fp, vision_encoder_footprint(projector_path));
  return static_cast<int64_t>(fp.weights_mapped + fp.weights_anon + fp.activations);
}

namespace {

Expected<std::unique_ptr<StageRunner>> start_vision_stage(const std::string& projector_path,
                                                          const StageSpec& s,
                                                          const PipelineRunOptions& o) {
  ASSIGN_OR_RETURN(auto m, load_vision_encoder(projector_path, o.n_threads > 0 ? o.n_threads : 2));
  const int64_t resident = static_cast<int64_t>(m->weight_bytes);
  return std::unique_ptr<StageRunner>(
      new VisionStageRunner(s.name, std::move(m), o.n_threads > 0 ? o.n_threads : 2, resident));
}

}  // namespace

const StageKind kVisionEncoderKind{.name = "vision_encoder",
                                   .contract = "vision.encode",
                                   .start = start_vision_stage,
                                   .start_in_worker = start_in_worker,
                                   .plan_reservation = encoder_plan<vision_stage_reservation>};

}  // namespace edge::pipeline
