// write_random_qwen3_tts_codec: the 12 Hz codec decoder's HF directory with random weights.
#include "convert/random_qwen3_tts_codec.h"

#include <cmath>
#include <filesystem>

#include "convert/random_model_internal.h"
#include "core/mapped_file.h"
#include "formats/safetensors.h"

namespace edge {

namespace {

bool ends_with(const std::string& s, const char* tail) {
  return s.ends_with(tail);
}

// Scales that keep activations O(1) through ~20 residual additions so the output is mostly
// not clamped: norms near 1, layer scales and gammas small, snake parameters near exp(0) = 1,
// kernels ~N(0, 1/fan_in) (residual branches' last convs smaller), positive usages.
random_model::Tensor make_tensor(const TensorSpec& s, uint64_t seed, const std::string& out_conv) {
  random_model::Tensor t = random_model::seeded_tensor(s, seed);
  const std::string& n = s.name;
  const float fan =
      static_cast<float>(s.shape.size() == 3 && n.find(".block.1.") != std::string::npos
                             ? s.shape[0] * 2  // transposed: c_in x 2 taps
                         : n.find("upsample.") != std::string::npos && ends_with(n, "0.conv.weight")
                             ? s.shape[0]  // transposed, 1 tap
                             : random_model::fan_in(s.shape));
  if (ends_with(n, "cluster_usage")) {
    t.mean = 2.0f;
    t.stddev = 0.3f;
  } else if (ends_with(n, "embedding_sum")) {
    t.stddev = 2.0f;
  } else if (ends_with(n, "layernorm.weight") || ends_with(n, "norm.weight")) {
    t.mean = 1.0f;
    t.stddev = 0.1f;
  } else if (ends_with(n, ".scale") || ends_with(n, ".gamma")) {
    t.mean = 0.1f;
    t.stddev = 0.02f;
  } else if (ends_with(n, ".alpha") || ends_with(n, ".beta") || ends_with(n, ".bias")) {
    t.stddev = 0.1f;
  } else if (n == out_conv) {  // most samples inside [-1, 1], where nothing is clamped
    t.stddev = 0.1f / std::sqrt(fan);
  } else if (n.find("conv2.conv.weight") != std::string::npos) {
    t.stddev = 0.3f / std::sqrt(fan);
  } else {
    t.stddev = 1.0f / std::sqrt(fan);
  }
  return t;
}

Status write_json(const std::string& path, const nlohmann::json& j) {
  const std::string text = j.dump(2);
  return write_file(path, text.data(), text.size());
}

}  // namespace

Qwen3TtsCodecHparams small_qwen3_tts_codec_hparams() {
  Qwen3TtsCodecHparams h;
  h.codebook_size = 64;
  h.codebook_dim = 32;
  h.latent_dim = 32;
  h.hidden = 32;
  h.n_head = 4;
  h.n_head_kv = 2;
  h.head_dim = 8;
  h.n_ff = 48;
  h.n_layer = 2;
  h.sliding_window = 4;
  h.decoder_dim = 64;
  return h;
}

Status write_random_qwen3_tts_codec(const RandomQwen3TtsCodecOptions& o, const std::string& dir) {
  if (o.dtype != DType::F32 && o.dtype != DType::F16 && o.dtype != DType::BF16)
    return Status::invalid_argument(std::string("random Qwen3-TTS codec: weight type ") +
                                    dtype_name(o.dtype) + " (f32, f16 or bf16)");
  const nlohmann::json config = qwen3_tts_codec_config(o.hp);
  ASSIGN_OR_RETURN(Qwen3TtsCodecHparams h, qwen3_tts_codec_hparams(config));  // validates
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::io_error(dir + ": " + ec.message());
  const std::string out_conv =
      "decoder.decoder." + std::to_string(h.upsample_rates.size() + 2) + ".conv.weight";
  std::vector<std::vector<uint8_t>> buffers;  // the bytes stay alive until written
  std::vector<TensorView> views;
  const TensorSchema schema = qwen3_tts_codec_schema(h);
  buffers.reserve(schema.specs().size());
  for (const TensorSpec& s : schema.specs()) {
    std::vector<float> v = make_tensor(s, o.seed, out_conv).generate();
    if (ends_with(s.name, "cluster_usage"))
      for (float& x : v) x = std::fabs(x) + 0.1f;
    // Vectors and the quantizer's codebooks stay F32, as Qwen's checkpoints keep them.
    const bool f32 = s.shape.size() == 1 || s.name.find("_codebook.") != std::string::npos;
    const DType dt = f32 ? DType::F32 : o.dtype;
    buffers.push_back(random_model::encode(v, dt));
    TensorView view;
    view.name = s.name;
    view.dtype = dt;
    view.shape = s.shape;
    view.data = buffers.back().data();
    view.nbytes = buffers.back().size();
    views.push_back(std::move(view));
  }
  const std::string base = (std::filesystem::path(dir) / "").string();
  RETURN_IF_ERROR(write_json(base + "config.json", config));
  return write_safetensors(base + "model.safetensors", views,
                           {{"format", "pt"}, {"edge.generator", "random-qwen3-tts-codec"}});
}

}  // namespace edge
