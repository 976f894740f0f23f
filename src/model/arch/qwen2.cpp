// Qwen2 / Qwen2.5: Llama-style blocks with biases on the q, k and v projections; NeoX RoPE
// in both GGUF and HF layouts.
#include "model/arch/common.h"
#include "model/arch/family.h"

namespace edge {

namespace {

Expected<ModelConfig> qwen2_from_gguf(const GgufFile& f, const std::string& arch) {
  ModelConfig c;
  c.arch = "qwen2";
  RETURN_IF_ERROR(gguf_common_hparams(f, arch, &c));
  c.rope_style = RopeStyle::kNeox;
  c.qkv_bias = true;
  c.tied_embeddings = f.tensors().find("output.weight") == nullptr;
  return c;
}

Expected<ModelConfig> qwen2_from_hf(const nlohmann::json& j) {
  ModelConfig c;
  c.arch = "qwen2";
  RETURN_IF_ERROR(hf_common_hparams(j, /*tied_default=*/false, &c));
  c.rope_style = RopeStyle::kNeox;
  c.qkv_bias = true;
  // Qwen2 configs carry sliding_window but use_sliding_window is false in released models.
  ASSIGN_OR_RETURN(bool use_swa, json_bool(j, "use_sliding_window", false));
  ASSIGN_OR_RETURN(int64_t window, json_int(j, "sliding_window", 0));
  ASSIGN_OR_RETURN(int64_t max_swa, json_int(j, "max_window_layers", c.n_layer));
  if (use_swa && window > 0)
    for (int32_t l = static_cast<int32_t>(max_swa); l < c.n_layer; ++l) {
      c.layers[l].sliding = true;
      c.layers[l].window = static_cast<int32_t>(window);
    }
  return c;
}

TensorSchema qwen2_schema(const ModelConfig& c) {
  TensorSchema s = decoder_schema(c);
  for (int l = 0; l < c.n_layer; ++l) {
    s.require(layer_name(l, "attn_q", "bias"), {c.q_dim()});   // [n_head*head_dim]
    s.require(layer_name(l, "attn_k", "bias"), {c.kv_dim()});  // [n_head_kv*head_dim]
    s.require(layer_name(l, "attn_v", "bias"), {c.kv_dim()});
  }
  return s;
}

std::string qwen2_hf_name(const std::string& hf) { return hf_decoder_tensor_name(hf, false); }
std::string qwen2_hf_name_of(const std::string& canonical) {
  return hf_decoder_name_of(canonical, false);
}

// Written Qwen2 models attend to every position, as released ones do (their configs carry
// a sliding_window that use_sliding_window turns off).
void qwen2_hf_config_extras(const ModelConfig&, nlohmann::json* j) {
  (*j)["use_sliding_window"] = false;
}

}  // namespace

const ArchFamily& qwen2_family() {
  static const ArchFamily f = [] {
    ArchFamily a;
    a.name = "qwen2";
    a.gguf_archs = {"qwen2"};
    a.hf_model_types = {"qwen2"};
    a.from_gguf = qwen2_from_gguf;
    a.from_hf = qwen2_from_hf;
    a.schema = qwen2_schema;
    a.hf_tensor_name = qwen2_hf_name;
    a.variants = {{.arch = "qwen2",
                   .hf_class = "Qwen2ForCausalLM",
                   .hf_model_type = "qwen2",
                   .rope_theta = 1e6f}};
    a.hf_name_of = qwen2_hf_name_of;
    a.hf_config_extras = qwen2_hf_config_extras;
    a.qkv_bias = true;
    return a;
  }();
  return f;
}

}  // namespace edge
