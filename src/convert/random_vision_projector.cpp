// write_random_vision_projector: a SigLIP/CLIP vision encoder and projector (gemma3 or
// mlp) with deterministic random weights, as an mmproj GGUF.
#include "convert/random_vision_projector.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "convert/random_model_internal.h"
#include "core/half.h"
#include "formats/gguf.h"

namespace edge {

namespace {

// Norm weights near 1, small biases and positions, matrices ~N(0, 1/fan_in): activations
// stay O(1) through the encoder.
random_model::Tensor random_tensor(const TensorSpec& s, uint64_t seed) {
  random_model::Tensor t = random_model::seeded_tensor(s, seed);
  const bool bias = s.name.ends_with(".bias");
  const bool norm =
      s.name.find("ln") != std::string::npos || s.name.find("norm") != std::string::npos;
  const int64_t fan_in = s.name == "mm.input_projection.weight"
                             ? s.shape[0]  // stored [E, D]: E inputs
                             : random_model::fan_in(s.shape);
  if (norm && !bias) {
    t.mean = 1.0f;
    t.stddev = 0.1f;
  } else if (bias || s.name == "v.position_embd.weight" || s.name == "v.class_embd") {
    t.stddev = 0.1f;
  } else {
    t.stddev = 1.0f / std::sqrt(static_cast<float>(fan_in));
  }
  return t;
}

DType tensor_dtype(const TensorSpec& s, DType want) {
  // As llama.cpp's converter: vectors and positions stay F32; the 4-D patch kernel is not
  // block-quantised.
  if (s.shape.size() == 1 || s.name == "v.position_embd.weight") return DType::F32;
  if (s.shape.size() != 2 && want == DType::Q8_0) return DType::F16;
  return want;
}

}  // namespace

Status write_random_vision_projector(const RandomVisionProjectorOptions& o,
                                     const std::string& path) {
  if (o.dtype != DType::F32 && o.dtype != DType::F16 && o.dtype != DType::BF16 &&
      o.dtype != DType::Q8_0)
    return Status::invalid_argument(fmt::format(
        "random vision projector: weight type {} (f32, f16, bf16 or q8_0)", dtype_name(o.dtype)));
  ClipVisionHparams h;
  h.projector = o.projector;
  h.image_size = o.image_size;
  h.patch_size = o.patch_size;
  h.n_embd = o.n_embd;
  h.n_ff = o.n_ff;
  h.n_head = o.n_head;
  h.n_layer = o.n_layer;
  h.n_out = o.n_out;
  h.n_mm_ff = o.n_mm_ff;
  h.pool = o.projector == VisionProjector::kGemma3 ? o.pool : 1;
  h.use_gelu = o.projector == VisionProjector::kGemma3;  // SigLIP: GELU; CLIP: quick GELU
  h.class_embd = o.class_embd && o.projector == VisionProjector::kMlp;
  h.pre_ln = h.class_embd;
  // LLaVA's converter keeps the blocks up to the feature layer and says which: mtmd then
  // runs all of them too (without the key it runs one fewer).
  if (o.projector == VisionProjector::kMlp)
    h.feature_layer = o.feature_layer > 0 ? o.feature_layer : o.n_layer;
  h.post_ln = o.projector == VisionProjector::kGemma3;
  if (o.projector == VisionProjector::kMlp)  // CLIP's constants
    for (int c = 0; c < 3; ++c) {
      h.mean[c] = std::array<float, 3>{0.48145466f, 0.4578275f, 0.40821073f}[c];
      h.std[c] = std::array<float, 3>{0.26862954f, 0.26130258f, 0.27577711f}[c];
    }
  if (o.image_size <= 0 || o.patch_size <= 0 || o.n_embd <= 0 || o.n_ff <= 0 || o.n_head <= 0 ||
      o.n_layer <= 0 || o.n_out <= 0 || o.n_mm_ff <= 0 || o.pool <= 0 || o.n_embd % o.n_head ||
      o.image_size % o.patch_size || h.patches_per_side() % h.pool || o.feature_layer < 0 ||
      o.feature_layer > o.n_layer)
    return Status::invalid_argument(
        "random vision projector: sizes must be positive, heads | n_embd, patch | image size, pool "
        "| patches per side, feature layer <= layers");
  GgufWriter w;
  write_clip_vision_hparams(
      h, fmt::format("edge-random-{}-vision", vision_projector_name(o.projector)), w);
  w.set_u32("general.file_type", random_model::gguf_file_type(o.dtype));
  const TensorSchema schema = clip_vision_schema(h);
  for (const TensorSpec& s : schema.specs()) {
    const random_model::Tensor t = random_tensor(s, o.seed);
    const DType dt = tensor_dtype(s, o.dtype);
    if (dt == DType::Q8_0 && s.shape.back() % 32)
      return Status::invalid_argument(
          fmt::format("random vision projector: {} rows of {} values are not whole Q8_0 "
                      "blocks of 32",
                      s.name, s.shape.back()));
    RETURN_IF_ERROR(random_model::add_generated_tensor(w, t, dt, "random vision projector"));
  }
  return w.write(path);
}

}  // namespace edge
