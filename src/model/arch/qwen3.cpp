// Qwen3: Llama-style blocks plus per-head RMSNorm on q and k (before RoPE), no biases,
// NeoX RoPE, explicit head_dim (may differ from n_embd / n_head).
#include "model/arch/common.h"
#include "model/arch/family.h"

namespace edge {

namespace {

Expected<ModelConfig> qwen3_from_gguf(const GgufFile& f, const std::string& arch) {
  ModelConfig c;
  c.arch = "qwen3";
  RETURN_IF_ERROR(gguf_common_hparams(f, arch, &c));
  c.rope_style = RopeStyle::kNeox;
  c.qk_norm = true;
  c.tied_embeddings = f.tensors().find("output.weight") == nullptr;
  return c;
}

Expected<ModelConfig> qwen3_from_hf(const nlohmann::json& j) {
  ModelConfig c;
  c.arch = "qwen3";
  RETURN_IF_ERROR(hf_common_hparams(j, /*tied_default=*/false, &c));
  c.rope_style = RopeStyle::kNeox;
  c.qk_norm = true;
  return c;
}

TensorSchema qwen3_schema(const ModelConfig& c) {
  TensorSchema s = decoder_schema(c);
  for (int l = 0; l < c.n_layer; ++l) {
    s.require(layer_name(l, "attn_q_norm"), {c.head_dim});  // [head_dim]
    s.require(layer_name(l, "attn_k_norm"), {c.head_dim});  // [head_dim]
  }
  return s;
}

std::string qwen3_hf_name(const std::string& hf) { return hf_decoder_tensor_name(hf, false); }
std::string qwen3_hf_name_of(const std::string& canonical) {
  return hf_decoder_name_of(canonical, false);
}

}  // namespace

const ArchFamily& qwen3_family() {
  static const ArchFamily f = [] {
    ArchFamily a;
    a.name = "qwen3";
    a.gguf_archs = {"qwen3"};
    a.hf_model_types = {"qwen3"};
    a.from_gguf = qwen3_from_gguf;
    a.from_hf = qwen3_from_hf;
    a.schema = qwen3_schema;
    a.hf_tensor_name = qwen3_hf_name;
    a.variants = {{.arch = "qwen3",
                   .hf_class = "Qwen3ForCausalLM",
                   .hf_model_type = "qwen3",
                   .norm_eps = 1e-6f,
                   .rope_theta = 1e6f}};
    a.hf_name_of = qwen3_hf_name_of;
    a.qk_norm = true;
    return a;
  }();
  return f;
}

}  // namespace edge
