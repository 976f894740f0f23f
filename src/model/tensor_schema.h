// Which tensors a model must (or may) have, with their shapes, declared by a family file
// from its ModelConfig. The loader checks a file's tensors against it before binding
// anything, so a wrong file is refused with the tensor's name and expected vs found shape.
// Names are canonical (GGUF): token_embd.weight, blk.N.attn_q.weight, ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/config.h"

namespace edge {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;  // row-major, outermost first
  bool required = true;
  // > 0: the experts of a MoE layer, stacked (`name` = blk.N.<what>_exps.<suffix>, shape
  // [experts, ...]). A file may instead hold one tensor per expert, shaped without the
  // first dim and named expert_tensor_name(name, e) (HF checkpoints, llama.cpp's older
  // per-expert GGUF form).
  int32_t experts = 0;
};

// The name of expert e's tensor in the per-expert form of a stacked expert tensor:
// "blk.3.ffn_gate_exps.weight", 5 -> "blk.3.ffn_gate.5.weight".
std::string expert_tensor_name(const std::string& stacked, int32_t e);

class TensorSchema {
 public:
  void require(std::string name, std::vector<int64_t> shape);
  void optional(std::string name, std::vector<int64_t> shape);
  // The stacked experts [n_expert, per_expert...] of a MoE layer (see TensorSpec::experts).
  void require_experts(std::string name, int32_t n_expert, std::vector<int64_t> per_expert);
  const std::vector<TensorSpec>& specs() const { return specs_; }
  const TensorSpec* find(const std::string& name) const;

  // Every required tensor present; every present one (required or optional) with the
  // declared shape and a dtype the kernels read (F32/F16/BF16). Extra tensors are ignored.
  // Expert specs take either form (stacked, or every expert on its own).
  Status check(const TensorSet& tensors) const;

 private:
  std::vector<TensorSpec> specs_;
};

// "blk.3.attn_q.weight" for layer_name(3, "attn_q"); suffix "bias" for biases.
std::string layer_name(int layer, const char* what, const char* suffix = "weight");
// Shape as text: "[512, 64]".
std::string shape_string(const std::vector<int64_t>& shape);

// The part every decoder family shares: embeddings, final norm, output head (unless tied),
// and per layer the attention norm, q/k/v/o projections, FFN norm and gate/up/down.
// Layers with LayerConfig::moe get the router and the experts instead of gate/up/down
// (moe_ffn_schema).
TensorSchema decoder_schema(const ModelConfig& c);
// The FFN of MoE layer l: router ffn_gate_inp [n_expert, n_embd], the stacked experts
// ffn_{gate,up}_exps [n_expert, n_ff_expert, n_embd] and ffn_down_exps [n_expert, n_embd,
// n_ff_expert], the biases the config asks for, and the shared expert.
void moe_ffn_schema(const ModelConfig& c, int layer, TensorSchema* s);
// The softmax attention of layer l: attn_q [q_rows, n_embd] (q_dim, or 2 q_dim with
// ModelConfig::attn_output_gate), attn_k/attn_v, attn_output and the biases/sinks asked for.
void attention_schema(const ModelConfig& c, int layer, int64_t q_rows, TensorSchema* s);
// The Gated DeltaNet mixer of recurrent layer l (ModelConfig::linear has the shapes).
void delta_net_schema(const ModelConfig& c, int layer, TensorSchema* s);
// llama.cpp names the decay rate without a suffix: "blk.3.ssm_a".
std::string ssm_a_name(int layer);

}  // namespace edge
