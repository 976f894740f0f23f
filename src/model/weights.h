// The weights the forward pass reads, bound by canonical name after the schema check.
// Matrices stay views into the mapped file (no copy); small vectors (norms, biases) are
// converted to F32 at load, which is also where Gemma's HF norm +1 is applied.
#pragma once

#include <vector>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/config.h"

namespace edge {

struct LayerWeights {
  std::vector<float> attn_norm;       // [n_embd]
  TensorView wq;                      // [n_head*head_dim, n_embd]
  TensorView wk;                      // [n_head_kv*head_dim, n_embd]
  TensorView wv;                      // [n_head_kv*head_dim, n_embd]
  TensorView wo;                      // [n_embd, n_head*head_dim]
  std::vector<float> bo;              // [n_embd]; empty without attn_out_bias
  std::vector<float> attn_sinks;      // [n_head]; empty without attn_sinks
  std::vector<float> bq, bk, bv;      // [q_dim], [kv_dim], [kv_dim]; empty without qkv_bias
  std::vector<float> q_norm, k_norm;  // [head_dim]; empty without qk_norm
  std::vector<float> post_attn_norm;  // [n_embd]; empty without post_norms
  std::vector<float> ffn_norm;        // [n_embd]
  TensorView w_gate;                  // [n_ff, n_embd]
  TensorView w_up;                    // [n_ff, n_embd]
  TensorView w_down;                  // [n_embd, n_ff]
  std::vector<float> post_ffn_norm;   // [n_embd]; empty without post_norms
  // MoE layers (LayerConfig::moe) instead of w_gate/w_up/w_down:
  TensorView router;                  // [n_expert, n_embd]
  std::vector<float> router_bias;     // [n_expert]; empty without MoeConfig::router_bias
  std::vector<float> selection_bias;  // [n_expert]; empty without MoeConfig::selection_bias
  // One 2-D view per expert (slices of a stacked tensor, or the file's per-expert tensors):
  std::vector<TensorView> gate_exps;  // [n_expert] x [n_ff_expert, n_embd]
  std::vector<TensorView> up_exps;    // [n_expert] x [n_ff_expert, n_embd]
  std::vector<TensorView> down_exps;  // [n_expert] x [n_embd, n_ff_expert]
  // [n_expert * n_ff_expert], [.. * n_ff_expert], [.. * n_embd]; empty without expert_bias.
  std::vector<float> gate_exps_bias, up_exps_bias, down_exps_bias;
  TensorView gate_shexp, up_shexp, down_shexp;  // shared expert; empty without n_ff_shared
  std::vector<float> shexp_gate;                // [n_embd]; empty without shared_gate
  // Gated DeltaNet layers (LayerConfig::recurrent) instead of wq/wk/wv/wo (sizes from
  // ModelConfig::linear, C = conv_channels, V = value_dim, H = n_v_heads):
  TensorView ssm_qkv;                 // attn_qkv [C, n_embd]: q, k, v channels
  TensorView ssm_z;                   // attn_gate [V, n_embd]: the output gate z
  TensorView ssm_alpha, ssm_beta;     // [H, n_embd]: decay and write-strength logits
  TensorView ssm_in;                  // Qwen3-Next: ssm_in [2 K d_k + 2 V, n_embd] (above), else empty
  TensorView ssm_ba;                  // Qwen3-Next: ssm_ba [2 H, n_embd], else empty
  TensorView ssm_out;                 // [n_embd, V]
  std::vector<float> ssm_conv;        // [C, conv_kernel]
  std::vector<float> ssm_dt;          // [H] added to alpha before softplus
  std::vector<float> ssm_a;           // [H] -exp(A_log): the decay rate (< 0)
  std::vector<float> ssm_norm;        // [d_v] the gated RMSNorm's weight
};

struct ModelWeights {
  TensorView token_embd;            // [n_vocab, n_embd]
  std::vector<float> output_norm;   // [n_embd]
  TensorView output;                // [n_vocab, n_embd]; the same view as token_embd if tied
  std::vector<LayerWeights> layers;
};

// Expert e of a stacked expert tensor [n_expert, rows, cols] as a 2-D view [rows, cols]. A
// packed stack holds each expert's panels on their own (quant/packed.h), so expert e
// starts at e * matrix_bytes(rows, cols); other types at e * rows * row bytes.
TensorView expert_slice(const TensorView& stacked, int32_t e);

// Binds tensors (already checked against the family's schema) to the config's layout.
// norms_plus_one: add 1 to every RMSNorm weight (Gemma HF checkpoints).
Expected<ModelWeights> bind_weights(const ModelConfig& c, const TensorSet& tensors,
                                    bool norms_plus_one);

}  // namespace edge
