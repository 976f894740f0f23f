// Gemma-3 and Spark-style models: a repeating pattern of sliding-window and global layers
// (Gemma-3: 5 sliding + 1 global; Spark: 3 + 1, 21/7 over 28 layers), a RoPE theta and a
// rotary fraction per layer type, per-head QK RMSNorm, post-attention and post-FFN norms,
// GeGLU (gelu-tanh) MLP, embeddings scaled by sqrt(n_embd), tied output head, and
// attention scale 1/sqrt(query_pre_attn_scalar).
//
// GGUF keys: llama.cpp's gemma3 keys, plus (all optional, documented in docs/model.md):
//   <arch>.edge.sliding_pattern            u32  period P: layer i is global iff (i+1) % P == 0
//                                               (default 6 for gemma3, 4 for spark)
//   <arch>.edge.rope.freq_base_swa         f32  RoPE theta of sliding layers (default 10000)
//   <arch>.edge.rope.dimension_count_swa   u32  rotary dims of sliding layers (default head_dim)
//   <arch>.edge.query_pre_attn_scalar      f32  attention scale = 1/sqrt(this) (default head_dim)
//   <arch>.edge.activation                 str  "gelu_tanh" (default) or "silu"
// <arch>.rope.freq_base / .rope.dimension_count / .rope.scaling.* describe global layers.
// RMSNorm weights: GGUF stores 1+w (llama.cpp's converter adds 1); HF stores w, so the
// loader adds 1 for HF (hf_norms_plus_one).
#include <cmath>

#include "model/arch/common.h"
#include "model/arch/family.h"

namespace edge {

namespace {

void set_pattern(ModelConfig* c, const std::vector<bool>& sliding, int32_t window,
                 float theta_swa, int32_t rotary_swa) {
  for (int32_t i = 0; i < c->n_layer; ++i) {
    LayerConfig& l = c->layers[i];
    if (!sliding[i]) continue;
    l.sliding = true;
    l.window = window;
    l.rope_theta = theta_swa;
    l.rotary_dim = rotary_swa;
    l.rope_scale = 1.0f;  // linear scaling applies to global layers only
  }
}

// The variant's period when a file names none (the variants' table, gemma3_family()).
int64_t default_period(const std::string& arch) {
  return gemma3_family().variant(arch)->sliding_period;
}

std::vector<bool> periodic_pattern(int32_t n_layer, int64_t period) {
  std::vector<bool> s(static_cast<size_t>(n_layer));
  for (int32_t i = 0; i < n_layer; ++i) s[i] = period > 0 && (i + 1) % period != 0;
  return s;
}

Expected<ModelConfig> gemma3_from_gguf(const GgufFile& f, const std::string& arch) {
  ModelConfig c;
  c.arch = arch == "gemma3" ? "gemma3" : "spark";
  RETURN_IF_ERROR(gguf_common_hparams(f, arch, &c));
  c.rope_style = RopeStyle::kNeox;
  c.qk_norm = c.post_norms = c.scale_embeddings = true;
  c.tied_embeddings = f.tensors().find("output.weight") == nullptr;
  for (const char* cap : {".final_logit_softcapping", ".attn_logit_softcapping"})
    if (f.get_float_or(arch + cap, 0.0) > 0.0)
      return Status::unsupported(f.path() + ": " + arch + cap + " (logit soft-capping) is not supported");
  const std::string act = f.get_string_or(arch + ".edge.activation", "gelu_tanh");
  if (act != "gelu_tanh" && act != "silu")
    return Status::unsupported(f.path() + ": " + arch + ".edge.activation '" + act + "'");
  c.act = act == "silu" ? Activation::kSwiGlu : Activation::kGeGlu;
  const double qpas = f.get_float_or(arch + ".edge.query_pre_attn_scalar", c.head_dim);
  if (!(qpas > 0)) return Status::invalid_format(arch + ".edge.query_pre_attn_scalar must be positive");
  c.attn_scale = static_cast<float>(1.0 / std::sqrt(qpas));
  const int64_t window = f.get_int_or(arch + ".attention.sliding_window", 0);
  const int64_t period = f.get_int_or(arch + ".edge.sliding_pattern", default_period(c.arch));
  if (window > 0)
    set_pattern(&c, periodic_pattern(c.n_layer, period), static_cast<int32_t>(window),
                static_cast<float>(f.get_float_or(arch + ".edge.rope.freq_base_swa", 10000.0)),
                static_cast<int32_t>(f.get_int_or(arch + ".edge.rope.dimension_count_swa", c.head_dim)));
  return c;
}

// Sliding flags from layer_types ("sliding_attention"/"full_attention") or the older
// sliding_window_pattern period.
Expected<std::vector<bool>> hf_layer_pattern(const nlohmann::json& j, int32_t n_layer,
                                             int64_t default_period) {
  auto it = j.find("layer_types");
  if (it != j.end() && it->is_array()) {
    if (static_cast<int32_t>(it->size()) != n_layer)
      return Status::invalid_format("config.json: layer_types has " + std::to_string(it->size()) +
                                    " entries for " + std::to_string(n_layer) + " layers");
    std::vector<bool> s;
    for (const auto& t : *it) {
      if (!t.is_string()) return Status::invalid_format("config.json: layer_types must be strings");
      s.push_back(t.get<std::string>() == "sliding_attention");
    }
    return s;
  }
  ASSIGN_OR_RETURN(int64_t period, json_int(j, "sliding_window_pattern", default_period));
  return periodic_pattern(n_layer, period);
}

// Gemma3TextConfig's defaults: multimodal checkpoints list only the fields that differ
// (gemma-3-4b's text_config has no num_attention_heads, head_dim, vocab_size, ...).
nlohmann::json with_gemma3_defaults(const nlohmann::json& j) {
  nlohmann::json d = {
      {"vocab_size", 262208},        {"hidden_size", 2304},          {"intermediate_size", 9216},
      {"num_hidden_layers", 26},     {"num_attention_heads", 8},     {"num_key_value_heads", 4},
      {"head_dim", 256},             {"rms_norm_eps", 1e-6},         {"rope_theta", 1000000.0},
      {"rope_local_base_freq", 10000.0}, {"query_pre_attn_scalar", 256}, {"sliding_window", 4096},
      {"max_position_embeddings", 131072}, {"sliding_window_pattern", 6},
  };
  for (auto it = j.begin(); it != j.end(); ++it) d[it.key()] = it.value();
  return d;
}

Expected<ModelConfig> gemma3_from_hf(const nlohmann::json& in) {
  ModelConfig c;
  const std::string type = in.value("model_type", std::string());
  const nlohmann::json j = type.rfind("gemma3", 0) == 0 ? with_gemma3_defaults(in) : in;
  c.arch = type.rfind("gemma3", 0) == 0 ? "gemma3" : "spark";
  RETURN_IF_ERROR(hf_common_hparams(j, /*tied_default=*/true, &c));
  c.rope_style = RopeStyle::kNeox;
  c.qk_norm = c.post_norms = c.scale_embeddings = true;
  const std::string act = j.value("hidden_activation", std::string("gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh" && act != "gelu" && act != "silu")
    return Status::unsupported("config.json: hidden_activation '" + act + "'");
  c.act = act == "silu" ? Activation::kSwiGlu : Activation::kGeGlu;
  // Gemma-2 style logit soft-capping is not implemented: refuse rather than run it wrong.
  for (const char* cap : {"final_logit_softcapping", "attn_logit_softcapping"})
    if (j.contains(cap) && !j[cap].is_null())
      return Status::unsupported(std::string("config.json: ") + cap + " is not supported");
  ASSIGN_OR_RETURN(double qpas, json_float(j, "query_pre_attn_scalar", c.head_dim));
  if (!(qpas > 0)) return Status::invalid_format("config.json: query_pre_attn_scalar must be positive");
  c.attn_scale = static_cast<float>(1.0 / std::sqrt(qpas));
  ASSIGN_OR_RETURN(int64_t window, json_int(j, "sliding_window", 0));
  ASSIGN_OR_RETURN(double theta_swa, json_float(j, "rope_local_base_freq", 10000.0));
  ASSIGN_OR_RETURN(double partial_swa, json_float(j, "local_partial_rotary_factor", 1.0));
  ASSIGN_OR_RETURN(std::vector<bool> sliding,
                   hf_layer_pattern(j, c.n_layer, default_period(c.arch)));
  if (window > 0)
    set_pattern(&c, sliding, static_cast<int32_t>(window), static_cast<float>(theta_swa),
                static_cast<int32_t>(std::lround(c.head_dim * partial_swa)) & ~1);
  return c;
}

TensorSchema gemma3_schema(const ModelConfig& c) {
  TensorSchema s = decoder_schema(c);
  for (int l = 0; l < c.n_layer; ++l) {
    s.require(layer_name(l, "attn_q_norm"), {c.head_dim});         // [head_dim]
    s.require(layer_name(l, "attn_k_norm"), {c.head_dim});         // [head_dim]
    s.require(layer_name(l, "post_attention_norm"), {c.n_embd});   // [n_embd]
    s.require(layer_name(l, "post_ffw_norm"), {c.n_embd});         // [n_embd]
  }
  return s;
}

std::string gemma3_hf_name(const std::string& hf) { return hf_decoder_tensor_name(hf, true); }
std::string gemma3_hf_name_of(const std::string& canonical) {
  return hf_decoder_name_of(canonical, true);
}

// What gemma3_from_hf reads beyond the common fields, from a config: the attention scale,
// the sliding layers' window, theta and rotary fraction, and the layer types.
void gemma3_hf_config_extras(const ModelConfig& c, nlohmann::json* j) {
  const LayerConfig* global = &c.layers[0];
  const LayerConfig* local = nullptr;
  for (const LayerConfig& l : c.layers) (l.sliding ? local : global) = &l;
  nlohmann::json& o = *j;
  o["hidden_activation"] = c.act == Activation::kSwiGlu ? "silu" : "gelu_pytorch_tanh";
  o["query_pre_attn_scalar"] = 1.0f / (c.attn_scale * c.attn_scale);
  o["sliding_window"] = local ? local->window : 0;
  o["rope_local_base_freq"] = local ? local->rope_theta : 10000.0f;
  o["partial_rotary_factor"] = static_cast<double>(global->rotary_dim) / c.head_dim;
  o["local_partial_rotary_factor"] =
      local ? static_cast<double>(local->rotary_dim) / c.head_dim : 1.0;
  nlohmann::json types = nlohmann::json::array();
  for (const LayerConfig& l : c.layers)
    types.push_back(l.sliding ? "sliding_attention" : "full_attention");
  o["layer_types"] = types;
  o["final_logit_softcapping"] = nullptr;
  o["attn_logit_softcapping"] = nullptr;
}

}  // namespace

const ArchFamily& gemma3_family() {
  static const ArchFamily f = [] {
    ArchFamily a;
    a.name = "gemma3";
    a.gguf_archs = {"gemma3", "spark", "spark2_5"};
    a.hf_model_types = {"gemma3", "gemma3_text", "spark", "spark2_5"};
    a.from_gguf = gemma3_from_gguf;
    a.from_hf = gemma3_from_hf;
    a.schema = gemma3_schema;
    a.hf_tensor_name = gemma3_hf_name;
    a.hf_norms_plus_one = true;
    a.variants = {{.arch = "gemma3",
                   .hf_class = "Gemma3ForCausalLM",
                   .hf_model_type = "gemma3_text",
                   .norm_eps = 1e-6f,
                   .rope_theta = 1e6f,
                   .sliding_period = 6},
                  {.arch = "spark",
                   .hf_class = "SparkForCausalLM",
                   .hf_model_type = "spark",
                   .norm_eps = 1e-6f,
                   .rope_theta = 1e6f,
                   .rotary_divisor = 4,
                   .sliding_period = 4}};
    a.hf_name_of = gemma3_hf_name_of;
    a.hf_config_extras = gemma3_hf_config_extras;
    a.act = Activation::kGeGlu;
    a.qk_norm = a.post_norms = a.scale_embeddings = a.tied_by_default = true;
    a.gguf_sliding_pattern = true;
    return a;
  }();
  return f;
}

}  // namespace edge
