// GPT-OSS (gpt-oss-20b, gpt-oss-120b): attention with biases on q/k/v/o and a learned sink
// logit per head (it joins each softmax's denominator), layers alternating sliding window
// (even layers, window 128) and full attention, one YaRN RoPE for all layers (NeoX pairs);
// a mixture of experts whose router has a bias, whose k selected logits get the softmax
// (not all experts'), and whose experts have biases and the clamped SwiGLU
// (g = min(gate, 7), u = clamp(up, -7, 7): g * sigmoid(1.702 g) * (u + 1)). llama.cpp's GGUF
// conventions: architecture "gpt-oss", the FFN's pre-norm named post_attention_norm.
//
// Hugging Face checkpoints (model_type gpt_oss) load too: their fused expert tensors are
// rebuilt as GGUF's stacks at load (gpt_oss_hf.cpp).
#include <cmath>

#include "formats/gguf.h"
#include "model/arch/common.h"
#include "model/arch/family.h"
#include "model/arch/gpt_oss_hf.h"

namespace edge {

namespace {

constexpr float kSwiGluLimit = 7.0f;

Status gpt_oss_rope(const GgufFile& f, const std::string& arch, ModelConfig* c) {
  const std::string scaling = f.get_string_or(arch + ".rope.scaling.type", "none");
  if (scaling != "yarn") return Status();
  YarnParams& y = c->yarn;
  y.factor = static_cast<float>(f.get_float_or(arch + ".rope.scaling.factor", 1.0));
  y.original_ctx =
      static_cast<float>(f.get_int_or(arch + ".rope.scaling.original_context_length", 4096));
  y.beta_fast = static_cast<float>(f.get_float_or(arch + ".rope.scaling.yarn_beta_fast", 32.0));
  y.beta_slow = static_cast<float>(f.get_float_or(arch + ".rope.scaling.yarn_beta_slow", 1.0));
  y.attn_factor = static_cast<float>(f.get_float_or(arch + ".rope.scaling.yarn_attn_factor", 1.0));
  if (!(y.factor >= 1.0f) || !(y.original_ctx > 0.0f))
    return Status::invalid_format(arch + ": YaRN factor " + std::to_string(y.factor) +
                                  " / original context " + std::to_string(y.original_ctx));
  const LayerConfig& l = c->layers[0];
  c->rope_freq_factors = yarn_rope(y, l.rotary_dim, l.rope_theta, &c->rope_mscale);
  c->sliding_rope_scaled = true;
  return Status();
}

// What every GPT-OSS model has beyond the family traits.
void gpt_oss_facts(ModelConfig* c) {
  c->swiglu_limit = kSwiGluLimit;
  c->attn_out_bias = true;
  c->attn_sinks = true;
  c->ffn_norm_name = "post_attention_norm";
}

Expected<ModelConfig> gpt_oss_from_gguf(const GgufFile& f, const std::string& arch) {
  ModelConfig c;
  c.arch = "gpt-oss";
  RETURN_IF_ERROR(gguf_common_hparams(f, arch, &c));
  c.rope_style = RopeStyle::kNeox;
  c.act = Activation::kSwiGluClamped;
  c.qkv_bias = true;
  gpt_oss_facts(&c);
  c.tied_embeddings = f.tensors().find("output.weight") == nullptr;
  const int64_t window = f.get_int_or(arch + ".attention.sliding_window", 128);
  if (window <= 0 || window > (int64_t{1} << 30))
    return Status::invalid_format(arch + ".attention.sliding_window = " + std::to_string(window));
  for (int32_t l = 0; l < c.n_layer; l += 2) {  // even layers slide
    c.layers[static_cast<size_t>(l)].sliding = true;
    c.layers[static_cast<size_t>(l)].window = static_cast<int32_t>(window);
  }
  RETURN_IF_ERROR(gpt_oss_rope(f, arch, &c));
  RETURN_IF_ERROR(gguf_moe_hparams(f, arch, /*norm_default=*/false, /*first_moe_layer=*/0, &c));
  c.moe.gating = ExpertGating::kSoftmaxSelected;
  c.moe.router_bias = true;
  c.moe.expert_bias = true;
  return c;
}

// config.json's rope_scaling: YaRN (GPT-OSS's: factor 32 over an original 4096, beta 32 / 1,
// "truncate": false), or none.
Status gpt_oss_hf_rope(const nlohmann::json& j, ModelConfig* c) {
  auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return Status();
  if (!it->is_object()) return Status::invalid_format("config.json: 'rope_scaling' must be an object");
  const std::string type = it->value("rope_type", it->value("type", std::string("default")));
  if (type == "default") return Status();
  if (type != "yarn")
    return Status::unsupported("config.json: gpt_oss rope_scaling type '" + type + "' (yarn only)");
  YarnParams& y = c->yarn;
  ASSIGN_OR_RETURN(double factor, json_float(*it, "factor", 1.0));
  ASSIGN_OR_RETURN(int64_t initial, json_int(j, "initial_context_length", 4096));
  ASSIGN_OR_RETURN(double orig, json_float(*it, "original_max_position_embeddings",
                                           static_cast<double>(initial)));
  ASSIGN_OR_RETURN(double fast, json_float(*it, "beta_fast", 32.0));
  ASSIGN_OR_RETURN(double slow, json_float(*it, "beta_slow", 1.0));
  ASSIGN_OR_RETURN(y.truncate, json_bool(*it, "truncate", true));
  y.factor = static_cast<float>(factor);
  y.original_ctx = static_cast<float>(orig);
  y.beta_fast = static_cast<float>(fast);
  y.beta_slow = static_cast<float>(slow);
  if (!(y.factor >= 1.0f) || !(y.original_ctx > 0.0f))
    return Status::invalid_format("config.json: YaRN factor " + std::to_string(factor) +
                                  " / original context " + std::to_string(orig));
  const LayerConfig& l = c->layers[0];
  c->rope_freq_factors = yarn_rope(y, l.rotary_dim, l.rope_theta, &c->rope_mscale);
  c->sliding_rope_scaled = true;
  return Status();
}

// layer_types ("sliding_attention" / "full_attention" per layer) with sliding_window, or
// even layers sliding as the release has them.
Status gpt_oss_hf_layers(const nlohmann::json& j, ModelConfig* c) {
  ASSIGN_OR_RETURN(int64_t window, json_int(j, "sliding_window", 128));
  if (window <= 0 || window > (int64_t{1} << 30))
    return Status::invalid_format("config.json: sliding_window = " + std::to_string(window));
  auto it = j.find("layer_types");
  const bool listed = it != j.end() && !it->is_null();
  if (listed && (!it->is_array() || it->size() != static_cast<size_t>(c->n_layer)))
    return Status::invalid_format("config.json: layer_types must list the " +
                                  std::to_string(c->n_layer) + " layers");
  for (int32_t l = 0; l < c->n_layer; ++l) {
    bool sliding = l % 2 == 0;
    if (listed) {
      const nlohmann::json& t = (*it)[static_cast<size_t>(l)];
      if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
        return Status::invalid_format("config.json: layer_types[" + std::to_string(l) +
                                      "] must be sliding_attention or full_attention");
      sliding = t == "sliding_attention";
    }
    c->layers[static_cast<size_t>(l)].sliding = sliding;
    if (sliding) c->layers[static_cast<size_t>(l)].window = static_cast<int32_t>(window);
  }
  return Status();
}

Expected<ModelConfig> gpt_oss_from_hf(const nlohmann::json& j) {
  ModelConfig c;
  c.arch = "gpt-oss";
  nlohmann::json common = j;  // YaRN is read below: hf_common_hparams takes linear and llama3
  common.erase("rope_scaling");
  RETURN_IF_ERROR(hf_common_hparams(common, /*tied_default=*/false, &c));
  c.rope_style = RopeStyle::kNeox;
  c.act = Activation::kSwiGluClamped;
  ASSIGN_OR_RETURN(c.qkv_bias, json_bool(j, "attention_bias", true));
  gpt_oss_facts(&c);
  c.attn_out_bias = c.qkv_bias;
  ASSIGN_OR_RETURN(double limit, json_float(j, "swiglu_limit", kSwiGluLimit));
  if (!(limit > 0.0)) return Status::invalid_format("config.json: swiglu_limit must be positive");
  c.swiglu_limit = static_cast<float>(limit);
  RETURN_IF_ERROR(gpt_oss_hf_layers(j, &c));
  RETURN_IF_ERROR(gpt_oss_hf_rope(j, &c));
  RETURN_IF_ERROR(hf_moe_hparams(j, /*norm_default=*/false, &c));
  c.moe.gating = ExpertGating::kSoftmaxSelected;
  c.moe.router_bias = true;
  c.moe.expert_bias = true;
  return c;
}

TensorSchema gpt_oss_schema(const ModelConfig& c) {
  TensorSchema s = decoder_schema(c);
  for (int l = 0; l < c.n_layer; ++l) {
    s.require(layer_name(l, "attn_q", "bias"), {c.q_dim()});   // [n_head*head_dim]
    s.require(layer_name(l, "attn_k", "bias"), {c.kv_dim()});  // [n_head_kv*head_dim]
    s.require(layer_name(l, "attn_v", "bias"), {c.kv_dim()});
  }
  return s;
}

void gpt_oss_gguf_extras(const ModelConfig& c, GgufWriter* w) {
  const std::string& a = c.arch;
  for (const LayerConfig& l : c.layers)
    if (l.sliding) {
      w->set_u32(a + ".attention.sliding_window", static_cast<uint32_t>(l.window));
      break;
    }
  if (c.yarn.factor > 1.0f) {
    w->set_string(a + ".rope.scaling.type", "yarn");
    w->set_f32(a + ".rope.scaling.factor", c.yarn.factor);
    w->set_u32(a + ".rope.scaling.original_context_length",
               static_cast<uint32_t>(c.yarn.original_ctx));
  }
}

}  // namespace

const ArchFamily& gpt_oss_family() {
  static const ArchFamily f = [] {
    ArchFamily a;
    a.name = "gpt-oss";
    a.gguf_archs = {"gpt-oss"};
    a.hf_model_types = {"gpt_oss"};
    a.from_gguf = gpt_oss_from_gguf;
    a.from_hf = gpt_oss_from_hf;
    a.hf_tensor_name = gpt_oss_hf::tensor_name;
    a.hf_name_of = gpt_oss_hf::name_of;
    a.hf_config_extras = gpt_oss_hf::config_extras;
    a.hf_derive = gpt_oss_hf::derive_experts;
    a.hf_derives = gpt_oss_hf::is_expert_tensor;
    a.hf_fused_experts = true;
    a.schema = gpt_oss_schema;
    a.gguf_extras = gpt_oss_gguf_extras;
    a.made_up = gpt_oss_facts;
    a.variants = {{.arch = "gpt-oss",
                   .hf_class = "GptOssForCausalLM",
                   .hf_model_type = "gpt_oss",
                   .norm_eps = 1e-5f,
                   .rope_theta = 150000.0f,
                   .sliding_period = 2,
                   .sliding_rope_theta = 0.0f,
                   .yarn_factor = 32.0f,
                   .yarn_original_ctx = 4096.0f,
                   .sliding_window = 128}};
    a.act = Activation::kSwiGluClamped;
    a.qkv_bias = true;
    a.moe.n_expert = 8;  // a made-up model's defaults (gpt-oss-20b: 32 experts, 4 used)
    a.moe.n_expert_used = 2;
    a.moe.gating = ExpertGating::kSoftmaxSelected;
    a.moe.router_bias = true;
    a.moe.expert_bias = true;
    return a;
  }();
  return f;
}

}  // namespace edge
