// Qwen3.5's Hugging Face checkpoints (Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM, and the
// text half of the ...ForConditionalGeneration wrappers, whose tensors sit under
// model.language_model.): tensor names and the tensors stored in another form than GGUF's
// (facts of the HF transformers Qwen3.5 layout and of llama.cpp's converter):
//   linear_attn.in_proj_qkv [2 K dk + V dv, n_embd]  -> attn_qkv      (q, k, v rows)
//   linear_attn.in_proj_z   [V dv, n_embd]           -> attn_gate
//   linear_attn.in_proj_b / in_proj_a [V, n_embd]    -> ssm_beta / ssm_alpha
//   linear_attn.conv1d.weight [C, 1, kernel]         -> ssm_conv1d [C, kernel]
//   linear_attn.A_log [V]                            -> ssm_a = -exp(A_log)
//   linear_attn.dt_bias [V]                          -> ssm_dt.bias
//   linear_attn.norm.weight [dv]                     -> ssm_norm (used as stored)
//   linear_attn.out_proj [n_embd, V dv]              -> ssm_out
//   every other RMSNorm computes x * (1 + w): GGUF stores w + 1 (the loader adds it)
//   mlp.shared_expert.{gate,up,down}_proj, mlp.shared_expert_gate [1, n_embd]
//   mlp.experts.gate_up_proj [E, 2 F, n_embd] (gate rows, then up rows, per expert) and
//   mlp.experts.down_proj [E, n_embd, F]; or one tensor per expert (mlp.experts.E.*_proj).
// Value heads stay in HF's grouped order (value head h reads key head h / (V / K),
// DeltaNetHeadMap::kGrouped); llama.cpp's converter reorders them to tiled, and a writer
// does the same reorder backwards (write_tensor).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/arch/family.h"
#include "model/config.h"
#include "model/packed_weights.h"

namespace edge::qwen35_hf {

// config.json (or its text_config): the common fields (RoPE from rope_parameters or the
// top level), the linear-attention shape (value heads grouped), the layer types; the M-RoPE
// sections, if any, into `mrope_sections` for the family to check.
Status read_config(const nlohmann::json& j, ModelConfig* c, std::vector<int64_t>* mrope_sections);
// HF name -> canonical; "" for the derived tensors (derive builds them) and unknown names.
std::string tensor_name(const std::string& hf);
// Whether `hf` is one of the tensors derive consumes.
bool is_derived(const std::string& hf);
// ssm_a, ssm_conv1d, ffn_gate_inp_shexp and the expert stacks of fused experts, into `out`.
Status derive(const ModelConfig& c, const TensorSet& hf, int threads, PreparedTensors* out);

// Writers: canonical -> HF name ("" for tensors write_tensor names itself).
std::string name_of(const std::string& canonical);
// config.json fields beyond the common ones.
void config_extras(const ModelConfig& c, nlohmann::json* j);

// The HF tensors of canonical tensor `name` (ArchFamily::hf_write_tensor): value heads
// reordered tiled -> grouped, A_log, conv1d's middle axis, the gated norm as stored and the
// other norms as w, fused experts (gate with its layer's up from `values_of`; up writes
// nothing). False when the generic renaming applies.
bool write_tensor(const ModelConfig& c, const std::string& name, const std::vector<int64_t>& shape,
                  std::vector<float> values, const HfValuesOf& values_of,
                  std::vector<HfTensor>* out);

}  // namespace edge::qwen35_hf
