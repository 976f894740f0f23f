// Qwen3-Next (Qwen3-Next-80B-A3B): the hybrid decoder Qwen3.5 grew from (qwen35.cpp), with
// two differences in llama.cpp's GGUF conventions (architecture "qwen3next"):
// - each Gated DeltaNet layer keeps HF's fused projections: ssm_in [2 K d_k + 2 V d_v,
//   n_embd] holds, per key head, its q, k, v and z rows, and ssm_ba [2 V, n_embd] per key
//   head its value heads' beta then alpha rows (ModelConfig::linear_fused_qkvz; the mixer
//   spreads them, model/delta_net_mixer.cpp). The value heads are thus in grouped order:
//   value head h reads key head h / (V / K);
// - plain RoPE (NeoX, the first quarter of each head), no M-RoPE sections.
// Every layer's FFN is the mixture of experts with a gated shared expert, as qwen35moe's.
// Hugging Face checkpoints of it are not read yet.
#include "model/arch/common.h"
#include "model/arch/family.h"

namespace edge {

namespace {

void qwen3next_facts(ModelConfig* c) {
  c->linear.head_map = DeltaNetHeadMap::kGrouped;
  c->linear_fused_qkvz = true;
}

Expected<ModelConfig> qwen3next_from_gguf(const GgufFile& f, const std::string& arch) {
  ASSIGN_OR_RETURN(ModelConfig c, qwen35moe_family().from_gguf(f, arch));
  qwen3next_facts(&c);
  return c;
}

void qwen3next_made_up(ModelConfig* c) {
  qwen35moe_family().made_up(c);
  qwen3next_facts(c);
}

}  // namespace

const ArchFamily& qwen3next_family() {
  static const ArchFamily f = [] {
    ArchFamily a = qwen35moe_family();
    a.name = "qwen3next";
    a.gguf_archs = {"qwen3next"};
    a.from_gguf = qwen3next_from_gguf;
    a.made_up = qwen3next_made_up;
    a.variants = {{.arch = "qwen3next",
                   .hf_class = "Qwen3NextForCausalLM",
                   .hf_model_type = "qwen3_next",
                   .norm_eps = 1e-6f,
                   .rope_theta = 1e7f,
                   .rotary_divisor = 4}};
    // GGUF only for now: none of Qwen3.5's Hugging Face readers and writers apply.
    a.hf_model_types = {};
    a.from_hf = nullptr;
    a.hf_tensor_name = nullptr;
    a.hf_derive = nullptr;
    a.hf_derives = nullptr;
    a.hf_name_of = nullptr;
    a.hf_config_extras = nullptr;
    a.hf_write_tensor = nullptr;
    a.hf_norms_plus_one = false;
    return a;
  }();
  return f;
}

}  // namespace edge
