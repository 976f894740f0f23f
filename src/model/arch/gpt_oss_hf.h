// GPT-OSS's Hugging Face checkpoints: tensor names, config.json fields, and the experts,
// which the checkpoint keeps fused (facts of the HF transformers GptOss layout):
//   mlp.experts.gate_up_proj       [E, n_embd, 2 n_ff]  float, stored [in, out], gate and up
//                                  columns interleaved (gate = column 2 i, up = 2 i + 1)
//   mlp.experts.down_proj          [E, n_ff, n_embd]    float, stored [in, out]
//   mlp.experts.gate_up_proj_blocks [E, 2 n_ff, n_embd / 32, 16] u8 and _scales
//                                  [E, 2 n_ff, n_embd / 32] u8: the release's MXFP4 form,
//                                  stored [out, in] with gate and up rows interleaved
//   mlp.experts.down_proj_blocks   [E, n_embd, n_ff / 32, 16] and _scales likewise
//   mlp.experts.gate_up_proj_bias  [E, 2 n_ff] interleaved; down_proj_bias [E, n_embd]
// At load they become GGUF's stacks ffn_{gate,up,down}_exps.{weight,bias} [E, rows, cols]:
// MXFP4 blocks are repacked into mxfp4_g32 cells without a float step (quant/repack.h),
// float experts transposed in their own type, biases split into F32.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/config.h"
#include "model/packed_weights.h"

namespace edge::gpt_oss_hf {

// HF name -> canonical (blk.N.attn_sinks.weight for self_attn.sinks, ffn_gate_inp for
// mlp.router); "" for the experts (derive_experts builds them) and unknown names.
std::string tensor_name(const std::string& hf);
// Canonical -> HF name; "" for the expert stacks (a writer fuses them).
std::string name_of(const std::string& canonical);
// Whether `hf` is one of the fused expert tensors above.
bool is_expert_tensor(const std::string& hf);
// config.json fields beyond the common ones (writers).
void config_extras(const ModelConfig& c, nlohmann::json* j);
// The expert stacks of every MoE layer from the checkpoint's fused tensors, into `out`.
Status derive_experts(const ModelConfig& c, const TensorSet& hf, int threads, PreparedTensors* out);

}  // namespace edge::gpt_oss_hf
