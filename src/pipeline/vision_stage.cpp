#include "pipeline/vision_stage.h"

#include <fmt/format.h>

#include <mutex>

#include "core/thread_pool.h"
#include "formats/image.h"
#include "kernels/api.h"
#include "model/arch/clip_vision.h"

namespace edge::pipeline {

namespace {

class VisionStageRunner final : public StageRunner {
 public:
  VisionStageRunner(std::string name, std::unique_ptr<VisionEncoderModel> m, int threads,
                    int64_t resident)
      : name_(std::move(name)),
        model_(std::move(m)),
        pool_(std::max(1, threads)),
        resident_(resident) {}

  Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
             const std::function<void(StageEvent)>& emit) override {
    auto it = inputs.find("image");
    if (it == inputs.end() || it->second.pixels.empty())
      return Status::invalid_argument(fmt::format("stage '{}': no image", name_));
    const PortValue& in = it->second;
    if (in.width <= 0 || in.height <= 0 ||
        static_cast<int64_t>(in.pixels.size()) != in.width * in.height * 3)
      return Status::invalid_argument(fmt::format("stage '{}': image of {} bytes is not {}x{}x3",
                                                  name_, in.pixels.size(), in.width, in.height));
    const ClipVisionHparams& h = model_->hparams;
    RgbImage img;
    img.width = in.width;
    img.height = in.height;
    img.rgb = in.pixels;
    const std::vector<float> px = clip_vision_pixels(h, img);
    StageEvent e;
    {
      std::lock_guard<std::mutex> l(encode_mu_);  // one encode at a time on the stage's pool
      if (cancelled(epoch)) return Status::cancelled(fmt::format("stage '{}': cancelled", name_));
      e.value.embeddings =
          clip_vision_forward({select_kernels(), pool_}, h, model_->weights, px.data());
    }
    e.value.rows = h.n_tokens();
    e.epoch = epoch, e.seq = 0, e.terminal = true, e.stage = name_, e.port = "embeddings";
    emit(std::move(e));
    return Status();
  }

  void cancel(uint64_t epoch) override {
    std::lock_guard<std::mutex> l(mu_);
    cancelled_ = epoch;
  }
  int64_t resident_bytes() const override { return resident_; }

 private:
  bool cancelled(uint64_t epoch) {
    std::lock_guard<std::mutex> l(mu_);
    return cancelled_ == epoch;
  }
  std::string name_;
  std::unique_ptr<VisionEncoderModel> model_;
  ThreadPool pool_;
  int64_t resident_ = 0;
  std::mutex encode_mu_, mu_;
  uint64_t cancelled_ = 0;
};

}  // namespace

Expected<int64_t> vision_stage_reservation(const std::string& projector_path) {
  ASSIGN_OR_RETURN(VisionFootprint fp, vision_encoder_footprint(projector_path));
  return static_cast<int64_t>(fp.weights_mapped + fp.weights_anon + fp.activations);
}

Expected<std::unique_ptr<StageRunner>> start_vision_stage(const std::string& projector_path,
                                                          const StageSpec& s,
                                                          const PipelineRunOptions& o) {
  ASSIGN_OR_RETURN(auto m, load_vision_encoder(projector_path, o.n_threads > 0 ? o.n_threads : 2));
  const int64_t resident = static_cast<int64_t>(m->weight_bytes);
  return std::unique_ptr<StageRunner>(
      new VisionStageRunner(s.name, std::move(m), o.n_threads > 0 ? o.n_threads : 2, resident));
}

}  // namespace edge::pipeline
