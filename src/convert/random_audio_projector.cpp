// write_random_audio_projector: a Whisper-style audio encoder and projector (ultravox or
// qwen2a) with deterministic random weights, as an mmproj GGUF.
#include "convert/random_audio_projector.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "convert/random_model_internal.h"
#include "formats/gguf.h"

namespace edge {

namespace {

// Values that keep activations O(1) through the encoder: norm weights near 1 (layer
// norms "ln1"/"ln2"/"post_ln", the projector's RMS norms "norm_*"), small biases and
// positions, matrices ~N(0, 1/fan_in).
random_model::Tensor random_tensor(const TensorSpec& s, uint64_t seed) {
  random_model::Tensor t = random_model::seeded_tensor(s, seed);
  const bool is_bias = s.name.ends_with(".bias");
  const bool is_norm = s.name.find(".ln") != std::string::npos ||
                       s.name.find("post_ln") != std::string::npos ||
                       s.name.find(".norm_") != std::string::npos;
  if (is_norm && !is_bias) {
    t.mean = 1.0f;
    t.stddev = 0.1f;
  } else if (is_bias || s.name == "a.position_embd.weight") {
    t.stddev = 0.1f;
  } else {
    t.stddev = 1.0f / std::sqrt(static_cast<float>(random_model::fan_in(s.shape)));
  }
  return t;
}

}  // namespace

Status write_random_audio_projector(const RandomAudioProjectorOptions& o, const std::string& path) {
  if (o.dtype != DType::F32 && o.dtype != DType::F16 && o.dtype != DType::BF16 &&
      o.dtype != DType::Q8_0)
    return Status::invalid_argument(fmt::format(
        "random audio projector: weight type {} (f32, f16, bf16 or q8_0)", dtype_name(o.dtype)));
  if (o.n_embd <= 0 || o.n_ff <= 0 || o.n_head <= 0 || o.n_layer <= 0 || o.n_mel <= 0 ||
      o.n_ctx <= 0 || o.n_out <= 0 || o.stack <= 0 || o.n_mm_ff <= 0 || o.n_embd % o.n_head ||
      o.n_mm_ff % 2)
    return Status::invalid_argument(
        "random audio projector: sizes must be positive, heads | n_embd, the MLP width even");
  WhisperEncHparams h;
  h.projector = o.projector;
  h.n_embd = o.n_embd;
  h.n_ff = o.n_ff;
  h.n_head = o.n_head;
  h.n_layer = o.n_layer;
  h.n_mel = o.n_mel;
  h.n_ctx = o.n_ctx;
  h.n_out = o.n_out;
  h.stack = o.stack;
  h.n_mm_ff = o.n_mm_ff;
  GgufWriter w;
  write_whisper_enc_hparams(
      h, fmt::format("edge-random-{}-audio", audio_projector_name(o.projector)), w);
  w.set_u32("general.file_type", random_model::gguf_file_type(o.dtype));
  const TensorSchema schema = whisper_enc_schema(h);
  for (const TensorSpec& s : schema.specs()) {
    const random_model::Tensor t = random_tensor(s, o.seed);
    // As llama.cpp's converter: vectors, [E, 1] bias columns and positions stay F32; the
    // 3-D convolution kernels are not block-quantised (F16 there).
    const bool keep_f32 = s.shape.size() == 1 || (s.shape.size() == 2 && s.shape[1] == 1) ||
                          s.name == "a.position_embd.weight";
    DType dt = keep_f32 ? DType::F32 : o.dtype;
    if (dt == DType::Q8_0 && (s.shape.size() != 2 || s.shape.back() % 32)) dt = DType::F16;
    RETURN_IF_ERROR(random_model::add_generated_tensor(w, t, dt, "random audio projector"));
  }
  return w.write(path, 32);
}

}  // namespace edge
