// Qwen3-MoE (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B, Qwen3-235B-A22B): Qwen3's attention (per-head
// q/k RMSNorm, NeoX RoPE, no biases) with a mixture of experts for the FFN: a softmax
// router over all experts, the top k, their weights renormalised to sum to 1 (llama.cpp
// always does so for this architecture; HF configs say it in norm_topk_prob), and SwiGLU
// experts. HF checkpoints store one tensor per expert (mlp.experts.E.*_proj), GGUF stacks
// them (ffn_*_exps): the schema takes either.
#include "model/arch/common.h"
#include "model/arch/family.h"

namespace edge {

namespace {

Expected<ModelConfig> qwen3moe_from_gguf(const GgufFile& f, const std::string& arch) {
  ModelConfig c;
  c.arch = "qwen3moe";
  RETURN_IF_ERROR(gguf_common_hparams(f, arch, &c));
  c.rope_style = RopeStyle::kNeox;
  c.qk_norm = true;
  c.tied_embeddings = f.tensors().find("output.weight") == nullptr;
  RETURN_IF_ERROR(gguf_moe_hparams(f, arch, /*norm_default=*/true, /*first_moe_layer=*/0, &c));
  c.moe.gating = ExpertGating::kSoftmax;
  return c;
}

Expected<ModelConfig> qwen3moe_from_hf(const nlohmann::json& j) {
  ModelConfig c;
  c.arch = "qwen3moe";
  RETURN_IF_ERROR(hf_common_hparams(j, /*tied_default=*/false, &c));
  c.rope_style = RopeStyle::kNeox;
  c.qk_norm = true;
  RETURN_IF_ERROR(hf_moe_hparams(j, /*norm_default=*/false, &c));
  c.moe.gating = ExpertGating::kSoftmax;
  return c;
}

TensorSchema qwen3moe_schema(const ModelConfig& c) {
  TensorSchema s = decoder_schema(c);
  for (int l = 0; l < c.n_layer; ++l) {
    s.require(layer_name(l, "attn_q_norm"), {c.head_dim});  // [head_dim]
    s.require(layer_name(l, "attn_k_norm"), {c.head_dim});  // [head_dim]
  }
  return s;
}

std::string qwen3moe_hf_name(const std::string& hf) {
  std::string moe = hf_moe_tensor_name(hf);
  return moe.empty() ? hf_decoder_tensor_name(hf, false) : moe;
}

std::string qwen3moe_hf_name_of(const std::string& canonical) {
  std::string moe = hf_moe_name_of(canonical);
  return moe.empty() ? hf_decoder_name_of(canonical, false) : moe;
}

void qwen3moe_hf_extras(const ModelConfig& c, nlohmann::json* j) {
  hf_moe_config(c, j);
}

}  // namespace

const ArchFamily& qwen3moe_family() {
  static const ArchFamily f = [] {
    ArchFamily a;
    a.name = "qwen3moe";
    a.gguf_archs = {"qwen3moe"};
    a.hf_model_types = {"qwen3_moe"};
    a.from_gguf = qwen3moe_from_gguf;
    a.from_hf = qwen3moe_from_hf;
    a.schema = qwen3moe_schema;
    a.hf_tensor_name = qwen3moe_hf_name;
    a.hf_name_of = qwen3moe_hf_name_of;
    a.hf_config_extras = qwen3moe_hf_extras;
    a.variants = {{.arch = "qwen3moe",
                   .hf_class = "Qwen3MoeForCausalLM",
                   .hf_model_type = "qwen3_moe",
                   .norm_eps = 1e-6f,
                   .rope_theta = 1e6f}};
    a.qk_norm = true;
    a.moe.n_expert = 8;  // a made-up model's defaults (30B-A3B: 128 experts, 8 used)
    a.moe.n_expert_used = 2;
    a.moe.gating = ExpertGating::kSoftmax;
    a.moe.norm_topk = true;
    return a;
  }();
  return f;
}

}  // namespace edge
