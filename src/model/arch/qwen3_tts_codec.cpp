// Qwen3-TTS 12 Hz codec decoder: hyper-parameters from config.json, the tensor schema under
// the published names, and weight binding. The forward pass is in
// qwen3_tts_codec_forward.cpp.
#include "model/arch/qwen3_tts_codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "kernels/api.h"

namespace edge {

namespace {

using json = nlohmann::json;

constexpr float kCodebookEps = 1e-5f;  // EuclideanCodebook: usage clamped below at this
constexpr float kSnakeEps = 1e-9f;     // SnakeBeta: 1 / (exp(beta) + this)

// An integer key of decoder_config in [lo, hi], or `def` when absent.
Expected<int64_t> int_key(const json& dc, const char* key, int64_t def, int64_t lo, int64_t hi) {
  if (!dc.contains(key)) return def;
  const json& v = dc[key];
  if (!v.is_number_integer())
    return Status::invalid_format(fmt::format("decoder_config.{}: not an integer", key));
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi)
    return Status::invalid_format(
        fmt::format("decoder_config.{} = {}: out of range [{}, {}]", key, x, lo, hi));
  return x;
}

Expected<float> float_key(const json& dc, const char* key, float def) {
  if (!dc.contains(key)) return def;
  if (!dc[key].is_number() || !(dc[key].get<double>() > 0))
    return Status::invalid_format(fmt::format("decoder_config.{}: not a positive number", key));
  return dc[key].get<float>();
}

Expected<std::vector<int32_t>> list_key(const json& dc, const char* key, std::vector<int32_t> def) {
  if (!dc.contains(key)) return def;
  const json& v = dc[key];
  if (!v.is_array() || v.empty())
    return Status::invalid_format(fmt::format("decoder_config.{}: not a non-empty list", key));
  std::vector<int32_t> out;
  for (const json& e : v) {
    if (!e.is_number_integer() || e.get<int64_t>() < 1 || e.get<int64_t>() > 64)
      return Status::invalid_format(
          fmt::format("decoder_config.{}: {} is not an integer in [1, 64]", key, e.dump()));
    out.push_back(e.get<int32_t>());
  }
  return out;
}

Status check_hparams(const Qwen3TtsCodecHparams& h) {
  if (h.codebook_dim % 2)
    return Status::invalid_format(
        fmt::format("decoder_config.codebook_dim = {}: must be even", h.codebook_dim));
  if (h.n_head % h.n_head_kv)
    return Status::invalid_format(fmt::format(
        "decoder_config.num_key_value_heads = {} does not divide num_attention_heads = {}",
        h.n_head_kv, h.n_head));
  if (h.head_dim % 2)
    return Status::invalid_format(
        fmt::format("decoder_config.head_dim = {}: must be even (RoPE)", h.head_dim));
  if ((h.decoder_dim >> h.upsample_rates.size()) < 1 ||
      (h.decoder_dim >> h.upsample_rates.size()) << h.upsample_rates.size() != h.decoder_dim)
    return Status::invalid_format(
        fmt::format("decoder_config.decoder_dim = {}: must halve {} times (one per upsample rate)",
                    h.decoder_dim, h.upsample_rates.size()));
  return Status();
}

}  // namespace

int64_t Qwen3TtsCodecHparams::samples_per_frame() const {
  int64_t n = 1;
  for (int32_t r : upsampling_ratios) n *= r;
  for (int32_t r : upsample_rates) n *= r;
  return n;
}

Expected<Qwen3TtsCodecHparams> qwen3_tts_codec_hparams(const json& config) {
  const std::string type = config.contains("model_type") && config["model_type"].is_string()
                               ? config["model_type"].get<std::string>()
                               : "";
  if (type != kQwen3TtsCodecModelType)
    return Status::unsupported(
        fmt::format("config.json model_type '{}': not {}", type, kQwen3TtsCodecModelType));
  if (!config.contains("decoder_config") || !config["decoder_config"].is_object())
    return Status::invalid_format("config.json: no decoder_config object");
  const json& dc = config["decoder_config"];
  Qwen3TtsCodecHparams h;
  constexpr int64_t kBig = int64_t{1} << 20;
  ASSIGN_OR_RETURN(h.codebook_size, int_key(dc, "codebook_size", h.codebook_size, 1, kBig));
  ASSIGN_OR_RETURN(h.codebook_dim, int_key(dc, "codebook_dim", h.codebook_dim, 2, kBig));
  ASSIGN_OR_RETURN(h.n_quantizers, int_key(dc, "num_quantizers", h.n_quantizers, 2, 64));
  ASSIGN_OR_RETURN(h.latent_dim, int_key(dc, "latent_dim", h.latent_dim, 1, kBig));
  ASSIGN_OR_RETURN(h.hidden, int_key(dc, "hidden_size", h.hidden, 1, kBig));
  ASSIGN_OR_RETURN(h.n_head, int_key(dc, "num_attention_heads", h.n_head, 1, 1024));
  ASSIGN_OR_RETURN(h.n_head_kv, int_key(dc, "num_key_value_heads", h.n_head, 1, 1024));
  ASSIGN_OR_RETURN(h.head_dim, int_key(dc, "head_dim", h.hidden / h.n_head, 2, 1024));
  ASSIGN_OR_RETURN(h.n_ff, int_key(dc, "intermediate_size", h.n_ff, 1, kBig));
  ASSIGN_OR_RETURN(h.n_layer, int_key(dc, "num_hidden_layers", h.n_layer, 0, 1024));
  ASSIGN_OR_RETURN(int64_t window, int_key(dc, "sliding_window", h.sliding_window, 1, kBig));
  h.sliding_window = static_cast<int32_t>(window);
  ASSIGN_OR_RETURN(h.decoder_dim, int_key(dc, "decoder_dim", h.decoder_dim, 1, kBig));
  ASSIGN_OR_RETURN(h.rms_eps, float_key(dc, "rms_norm_eps", h.rms_eps));
  ASSIGN_OR_RETURN(h.rope_theta, float_key(dc, "rope_theta", h.rope_theta));
  ASSIGN_OR_RETURN(h.upsampling_ratios, list_key(dc, "upsampling_ratios", h.upsampling_ratios));
  ASSIGN_OR_RETURN(h.upsample_rates, list_key(dc, "upsample_rates", h.upsample_rates));
  ASSIGN_OR_RETURN(int64_t semantic, int_key(dc, "num_semantic_quantizers", 1, 1, 64));
  if (semantic != 1)  // Qwen's decoder splits the quantizer 1 + rest whatever this says
    return Status::unsupported(
        fmt::format("decoder_config.num_semantic_quantizers = {}: only 1", semantic));
  if (dc.contains("attention_bias") && dc["attention_bias"] != false)
    return Status::unsupported("decoder_config.attention_bias " + dc["attention_bias"].dump() +
                               ": only false");
  if (dc.contains("hidden_act") && dc["hidden_act"] != "silu")
    return Status::unsupported("decoder_config.hidden_act " + dc["hidden_act"].dump() +
                               ": only \"silu\"");
  if (config.contains("output_sample_rate") && config["output_sample_rate"] != 24000)
    return Status::unsupported("config.json output_sample_rate " +
                               config["output_sample_rate"].dump() + ": only 24000");
  RETURN_IF_ERROR(check_hparams(h));
  if (config.contains("decode_upsample_rate") &&
      config["decode_upsample_rate"] != h.samples_per_frame())
    return Status::invalid_format(
        fmt::format("config.json decode_upsample_rate = {}: the rates multiply to {}",
                    config["decode_upsample_rate"].dump(), h.samples_per_frame()));
  return h;
}

json qwen3_tts_codec_config(const Qwen3TtsCodecHparams& h) {
  json dc = {{"attention_bias", false},
             {"attention_dropout", 0.0},
             {"codebook_dim", h.codebook_dim},
             {"codebook_size", h.codebook_size},
             {"decoder_dim", h.decoder_dim},
             {"head_dim", h.head_dim},
             {"hidden_act", "silu"},
             {"hidden_size", h.hidden},
             {"intermediate_size", h.n_ff},
             {"latent_dim", h.latent_dim},
             {"layer_scale_initial_scale", 0.01},
             {"max_position_embeddings", 8000},
             {"num_attention_heads", h.n_head},
             {"num_hidden_layers", h.n_layer},
             {"num_key_value_heads", h.n_head_kv},
             {"num_quantizers", h.n_quantizers},
             {"num_semantic_quantizers", 1},
             {"rms_norm_eps", h.rms_eps},
             {"rope_theta", h.rope_theta},
             {"sliding_window", h.sliding_window},
             {"upsample_rates", h.upsample_rates},
             {"upsampling_ratios", h.upsampling_ratios},
             {"vector_quantization_hidden_dimension", h.codebook_dim}};
  return {{"architectures", {"Qwen3TTSTokenizerV2Model"}},
          {"model_type", kQwen3TtsCodecModelType},
          {"encoder_valid_num_quantizers", h.n_quantizers},
          {"input_sample_rate", h.sample_rate},
          {"output_sample_rate", h.sample_rate},
          {"decode_upsample_rate", h.samples_per_frame()},
          {"encode_downsample_rate", h.samples_per_frame()},
          {"decoder_config", dc}};
}

namespace {

// Published names, PyTorch shapes.
void quantizer_schema(const Qwen3TtsCodecHparams& h, TensorSchema& s) {
  const int64_t vq = h.vq_dim();
  for (const char* part : {"rvq_first", "rvq_rest"}) {
    const std::string p = fmt::format("decoder.quantizer.{}.", part);
    s.require(p + "output_proj.weight", {h.codebook_dim, vq, 1});
    s.optional(p + "input_proj.weight", {vq, h.codebook_dim, 1});
    const int64_t n = std::string(part) == "rvq_first" ? 1 : h.n_quantizers - 1;
    for (int64_t i = 0; i < n; ++i) {
      const std::string c = fmt::format("{}vq.layers.{}._codebook.", p, i);
      s.require(c + "embedding_sum", {h.codebook_size, vq});
      s.require(c + "cluster_usage", {h.codebook_size});
    }
  }
}

void transformer_schema(const Qwen3TtsCodecHparams& h, TensorSchema& s) {
  const std::string t = "decoder.pre_transformer.";
  s.require(t + "input_proj.weight", {h.hidden, h.latent_dim});
  s.require(t + "input_proj.bias", {h.hidden});
  s.require(t + "output_proj.weight", {h.latent_dim, h.hidden});
  s.require(t + "output_proj.bias", {h.latent_dim});
  s.require(t + "norm.weight", {h.hidden});
  const int64_t q = h.n_head * h.head_dim, kv = h.n_head_kv * h.head_dim;
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = fmt::format("{}layers.{}.", t, l);
    s.require(p + "input_layernorm.weight", {h.hidden});
    s.require(p + "post_attention_layernorm.weight", {h.hidden});
    s.require(p + "self_attn.q_proj.weight", {q, h.hidden});
    s.require(p + "self_attn.k_proj.weight", {kv, h.hidden});
    s.require(p + "self_attn.v_proj.weight", {kv, h.hidden});
    s.require(p + "self_attn.o_proj.weight", {h.hidden, q});
    s.require(p + "self_attn_layer_scale.scale", {h.hidden});
    s.require(p + "mlp.gate_proj.weight", {h.n_ff, h.hidden});
    s.require(p + "mlp.up_proj.weight", {h.n_ff, h.hidden});
    s.require(p + "mlp.down_proj.weight", {h.hidden, h.n_ff});
    s.require(p + "mlp_layer_scale.scale", {h.hidden});
  }
}

void conv_schema(TensorSchema& s, const std::string& p, int64_t c_out, int64_t c_in, int64_t k) {
  s.require(p + "weight", {c_out, c_in, k});
  s.require(p + "bias", {c_out});
}

void snake_schema(TensorSchema& s, const std::string& p, int64_t c) {
  s.require(p + "alpha", {c});
  s.require(p + "beta", {c});
}

void upsample_schema(const Qwen3TtsCodecHparams& h, TensorSchema& s) {
  const int64_t c = h.latent_dim;
  for (size_t i = 0; i < h.upsampling_ratios.size(); ++i) {
    const std::string p = fmt::format("decoder.upsample.{}.", i);
    // ConvTranspose1d kernels are [c_in, c_out, k].
    conv_schema(s, p + "0.conv.", c, c, h.upsampling_ratios[i]);
    conv_schema(s, p + "1.dwconv.conv.", c, 1, 7);
    s.require(p + "1.norm.weight", {c});
    s.require(p + "1.norm.bias", {c});
    s.require(p + "1.pwconv1.weight", {4 * c, c});
    s.require(p + "1.pwconv1.bias", {4 * c});
    s.require(p + "1.pwconv2.weight", {c, 4 * c});
    s.require(p + "1.pwconv2.bias", {c});
    s.require(p + "1.gamma", {c});
  }
}

void decoder_schema_part(const Qwen3TtsCodecHparams& h, TensorSchema& s) {
  conv_schema(s, "decoder.decoder.0.conv.", h.decoder_dim, h.latent_dim, 7);
  const int nb = static_cast<int>(h.upsample_rates.size());
  for (int b = 0; b < nb; ++b) {
    const std::string p = fmt::format("decoder.decoder.{}.block.", b + 1);
    const int64_t in = h.block_out(b - 1), out = h.block_out(b);
    snake_schema(s, p + "0.", in);
    s.require(p + "1.conv.weight", {in, out, 2 * h.upsample_rates[b]});  // [c_in, c_out, k]
    s.require(p + "1.conv.bias", {out});
    for (int r = 0; r < 3; ++r) {
      const std::string u = fmt::format("{}{}.", p, r + 2);
      snake_schema(s, u + "act1.", out);
      conv_schema(s, u + "conv1.conv.", out, out, 7);
      snake_schema(s, u + "act2.", out);
      conv_schema(s, u + "conv2.conv.", out, out, 1);
    }
  }
  snake_schema(s, fmt::format("decoder.decoder.{}.", nb + 1), h.block_out(nb - 1));
  conv_schema(s, fmt::format("decoder.decoder.{}.conv.", nb + 2), 1, h.block_out(nb - 1), 7);
}

}  // namespace

TensorSchema qwen3_tts_codec_schema(const Qwen3TtsCodecHparams& h) {
  TensorSchema s;
  quantizer_schema(h, s);
  conv_schema(s, "decoder.pre_conv.conv.", h.latent_dim, h.codebook_dim, 3);
  transformer_schema(h, s);
  upsample_schema(h, s);
  decoder_schema_part(h, s);
  return s;
}

namespace {

struct Binder {
  const TensorSet& t;
  const TensorView& get(const std::string& name) const {
    const TensorView* v = t.find(name);
    CHECK_MSG(v, name.c_str());
    return *v;
  }
  std::vector<float> vec(const std::string& name) const {
    const TensorView& v = get(name);
    std::vector<float> out(static_cast<size_t>(v.numel()));
    reference_kernels().convert_row(v.dtype, v.data, v.numel(), out.data());
    return out;
  }
  // A 3-D kernel [a, b, k] seen as the 2-D matrix [a, b * k] (same bytes).
  TensorView flat(const std::string& name) const {
    TensorView v = get(name);
    if (v.shape.size() == 3) v.shape = {v.shape[0], v.shape[1] * v.shape[2]};
    return v;
  }
  Qwen3TtsCodecWeights::Conv conv(const std::string& p, int64_t dilation = 1) const {
    Qwen3TtsCodecWeights::Conv c;
    const TensorView& w = get(p + "weight");
    c.c_out = w.shape[0];
    c.c_in = w.shape[1];
    c.k = w.shape[2];
    c.dilation = dilation;
    c.w = flat(p + "weight");
    c.bias = vec(p + "bias");
    if (c.k > 1) c.taps_major = taps_major(w);
    return c;
  }
  // Conv kernel w [c_out, c_in, k] -> the same elements (the file's type) as [c_out][k][c_in]:
  // an im2col row is then the k input rows it reads, each copied whole.
  static std::vector<uint8_t> taps_major(const TensorView& w) {
    const int64_t c_out = w.shape[0], c_in = w.shape[1], k = w.shape[2];
    const size_t es = static_cast<size_t>(w.nbytes / static_cast<uint64_t>(w.numel()));
    std::vector<uint8_t> out(static_cast<size_t>(w.nbytes));
    for (int64_t co = 0; co < c_out; ++co)
      for (int64_t ci = 0; ci < c_in; ++ci)
        for (int64_t j = 0; j < k; ++j)
          std::memcpy(out.data() + static_cast<size_t>((co * k + j) * c_in + ci) * es,
                      w.data + static_cast<size_t>((co * c_in + ci) * k + j) * es, es);
    return out;
  }
  Qwen3TtsCodecWeights::Snake snake(const std::string& p) const {
    Qwen3TtsCodecWeights::Snake s;
    s.alpha = vec(p + "alpha");
    s.inv_beta = vec(p + "beta");
    for (float& a : s.alpha) a = std::exp(a);
    for (float& b : s.inv_beta) b = 1.0f / (std::exp(b) + kSnakeEps);
    return s;
  }
  // ConvTranspose1d kernel w [c_in, c_out, k] -> rows (m, co), columns (p, ci) holding
  // w[ci][co][m + p * stride]: output i * stride + m reads input i - p through tap p.
  Qwen3TtsCodecWeights::TransConv trans_conv(const std::string& p, int64_t stride) const {
    Qwen3TtsCodecWeights::TransConv tc;
    const std::vector<float> w = vec(p + "weight");
    const TensorView& v = get(p + "weight");
    tc.c_in = v.shape[0];
    tc.c_out = v.shape[1];
    tc.stride = stride;
    tc.taps = v.shape[2] / stride;
    const int64_t k = v.shape[2], cols = tc.taps * tc.c_in;
    tc.w.assign(static_cast<size_t>(stride * tc.c_out * cols), 0.0f);
    for (int64_t m = 0; m < stride; ++m)
      for (int64_t co = 0; co < tc.c_out; ++co)
        for (int64_t tap = 0; tap < tc.taps; ++tap)
          for (int64_t ci = 0; ci < tc.c_in; ++ci)
            tc.w[(m * tc.c_out + co) * cols + tap * tc.c_in + ci] =
                w[(ci * tc.c_out + co) * k + m + tap * stride];
    tc.bias = vec(p + "bias");
    return tc;
  }
};

void bind_quantizer(const Qwen3TtsCodecHparams& h, const Binder& b, Qwen3TtsCodecWeights& w) {
  const int64_t rows = h.codebook_size, vq = h.vq_dim();
  w.codebooks.resize(static_cast<size_t>(h.n_quantizers * rows * vq));
  for (int64_t q = 0; q < h.n_quantizers; ++q) {
    const std::string p =
        q == 0 ? "decoder.quantizer.rvq_first.vq.layers.0._codebook."
               : fmt::format("decoder.quantizer.rvq_rest.vq.layers.{}._codebook.", q - 1);
    const std::vector<float> sum = b.vec(p + "embedding_sum"), usage = b.vec(p + "cluster_usage");
    float* dst = w.codebooks.data() + q * rows * vq;
    for (int64_t r = 0; r < rows; ++r) {
      const float u = std::max(usage[r], kCodebookEps);
      for (int64_t j = 0; j < vq; ++j) dst[r * vq + j] = sum[r * vq + j] / u;
    }
  }
  w.proj_first = b.flat("decoder.quantizer.rvq_first.output_proj.weight");
  w.proj_rest = b.flat("decoder.quantizer.rvq_rest.output_proj.weight");
}

void bind_transformer(const Qwen3TtsCodecHparams& h, const Binder& b, Qwen3TtsCodecWeights& w) {
  const std::string t = "decoder.pre_transformer.";
  w.input_proj = b.get(t + "input_proj.weight");
  w.input_proj_b = b.vec(t + "input_proj.bias");
  w.output_proj = b.get(t + "output_proj.weight");
  w.output_proj_b = b.vec(t + "output_proj.bias");
  w.final_norm = b.vec(t + "norm.weight");
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = fmt::format("{}layers.{}.", t, l);
    Qwen3TtsCodecWeights::Layer L;
    L.attn_norm = b.vec(p + "input_layernorm.weight");
    L.ffn_norm = b.vec(p + "post_attention_layernorm.weight");
    L.wq = b.get(p + "self_attn.q_proj.weight");
    L.wk = b.get(p + "self_attn.k_proj.weight");
    L.wv = b.get(p + "self_attn.v_proj.weight");
    L.wo = b.get(p + "self_attn.o_proj.weight");
    L.attn_scale = b.vec(p + "self_attn_layer_scale.scale");
    L.gate = b.get(p + "mlp.gate_proj.weight");
    L.up = b.get(p + "mlp.up_proj.weight");
    L.down = b.get(p + "mlp.down_proj.weight");
    L.ffn_scale = b.vec(p + "mlp_layer_scale.scale");
    w.layers.push_back(std::move(L));
  }
}

void bind_upsample(const Qwen3TtsCodecHparams& h, const Binder& b, Qwen3TtsCodecWeights& w) {
  for (size_t i = 0; i < h.upsampling_ratios.size(); ++i) {
    const std::string p = fmt::format("decoder.upsample.{}.", i);
    w.upsample.push_back(b.trans_conv(p + "0.conv.", h.upsampling_ratios[i]));
    Qwen3TtsCodecWeights::ConvNext c;
    c.dw_w = b.vec(p + "1.dwconv.conv.weight");
    c.dw_b = b.vec(p + "1.dwconv.conv.bias");
    c.norm_w = b.vec(p + "1.norm.weight");
    c.norm_b = b.vec(p + "1.norm.bias");
    c.pw1 = b.get(p + "1.pwconv1.weight");
    c.pw1_b = b.vec(p + "1.pwconv1.bias");
    c.pw2 = b.get(p + "1.pwconv2.weight");
    c.pw2_b = b.vec(p + "1.pwconv2.bias");
    c.gamma = b.vec(p + "1.gamma");
    w.convnext.push_back(std::move(c));
  }
}

void bind_decoder(const Qwen3TtsCodecHparams& h, const Binder& b, Qwen3TtsCodecWeights& w) {
  w.dec_in = b.conv("decoder.decoder.0.conv.");
  const int nb = static_cast<int>(h.upsample_rates.size());
  static constexpr int64_t kDilations[3] = {1, 3, 9};
  for (int i = 0; i < nb; ++i) {
    const std::string p = fmt::format("decoder.decoder.{}.block.", i + 1);
    Qwen3TtsCodecWeights::Block blk;
    blk.act = b.snake(p + "0.");
    blk.up = b.trans_conv(p + "1.conv.", h.upsample_rates[i]);
    for (int r = 0; r < 3; ++r) {
      const std::string u = fmt::format("{}{}.", p, r + 2);
      blk.res[r].act1 = b.snake(u + "act1.");
      blk.res[r].conv1 = b.conv(u + "conv1.conv.", kDilations[r]);
      blk.res[r].act2 = b.snake(u + "act2.");
      blk.res[r].conv2 = b.conv(u + "conv2.conv.");
    }
    w.blocks.push_back(std::move(blk));
  }
  w.act_out = b.snake(fmt::format("decoder.decoder.{}.", nb + 1));
  w.conv_out = b.conv(fmt::format("decoder.decoder.{}.conv.", nb + 2));
}

}  // namespace

Expected<Qwen3TtsCodecWeights> bind_qwen3_tts_codec_weights(const Qwen3TtsCodecHparams& h,
                                                            const TensorSet& tensors) {
  const Binder b{tensors};
  Qwen3TtsCodecWeights w;
  bind_quantizer(h, b, w);
  w.pre_conv = b.conv("decoder.pre_conv.conv.");
  bind_transformer(h, b, w);
  bind_upsample(h, b, w);
  bind_decoder(h, b, w);
  return w;
}

}  // namespace edge
