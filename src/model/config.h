// A model described as data: one ModelConfig (shapes, norms, activation, which optional
// blocks exist) and one LayerConfig per layer (attention window, RoPE). A family file
// (arch/*.cpp) fills these from GGUF metadata or an HF config.json; the forward pass reads
// only these fields, never the architecture name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/api.h"
#include "kernels/delta_net.h"

namespace edge {

enum class Activation : uint8_t {
  kSwiGlu,  // down(silu(gate(x)) * up(x))             Llama, Qwen
  kGeGlu,   // down(gelu_tanh(gate(x)) * up(x))        Gemma, Spark
  // GPT-OSS: g = min(gate, L), u = clamp(up, -L, L), down(g * sigmoid(1.702 g) * (u + 1)),
  // L = ModelConfig::swiglu_limit.
  kSwiGluClamped,
};
const char* activation_name(Activation a);

// How a mixture-of-experts layer turns router logits [n_expert] into the weights of its
// n_expert_used selected experts.
enum class ExpertGating : uint8_t {
  kSoftmax,          // p = softmax(logits) over all experts, top-k of p (Qwen3-MoE, Mixtral)
  kSoftmaxSelected,  // top-k of the logits, softmax over the k selected (GPT-OSS)
  kSigmoid,          // p = sigmoid(logits), top-k of p + selection bias (DeepSeek-V3, GLM-4.5)
};
const char* expert_gating_name(ExpertGating g);

// The experts of a mixture-of-experts model; n_expert == 0: every FFN is dense. Layers with
// LayerConfig::moe run the routed experts (and the shared expert, when n_ff_shared > 0).
struct MoeConfig {
  int32_t n_expert = 0;       // experts per MoE layer
  int32_t n_expert_used = 0;  // selected per token (top-k)
  int32_t n_ff_expert = 0;    // FFN width of one expert
  ExpertGating gating = ExpertGating::kSoftmax;
  bool norm_topk = false;     // the k selected weights are renormalised to sum to 1
  float weights_scale = 1.0f; // routed output scaled by this (DeepSeek routed_scaling_factor)
  bool router_bias = false;   // ffn_gate_inp.bias [n_expert] added to the logits (GPT-OSS)
  bool expert_bias = false;   // ffn_{gate,up,down}_exps.bias per expert (GPT-OSS)
  bool selection_bias = false;  // exp_probs_b [n_expert]: added for selection only (kSigmoid)
  int32_t n_ff_shared = 0;    // width of the always-on shared expert (0: none)
  bool shared_gate = false;   // shared expert output * sigmoid(x . ffn_gate_inp_shexp) (Qwen2-MoE)

  bool enabled() const { return n_expert > 0; }
};

struct LayerConfig {
  bool sliding = false;      // sliding-window attention layer
  int32_t window = 0;        // keys with pos - key_pos < window are visible (sliding only)
  float rope_theta = 10000.0f;
  int32_t rotary_dim = 0;    // first rotary_dim dims of each head rotate (partial rotary)
  float rope_scale = 1.0f;   // linear RoPE scaling factor: positions are divided by it
  bool moe = false;          // the FFN is the mixture of experts (ModelConfig::moe)
  // Gated DeltaNet linear attention (ModelConfig::linear) instead of softmax attention:
  // no KV cache, a fixed recurrent state per sequence (Qwen3-Next, Qwen3.5).
  bool recurrent = false;
};

// YaRN context extension (GPT-OSS, Qwen with rope_scaling yarn): per rotary pair i, a blend
// of interpolated (angle / factor) and original angles, original for high frequencies
// (pairs below the correction range) and interpolated for low ones, linear between; cos and
// sin scaled by mscale = 1 + 0.1 ln(factor) (times attn_factor). Folded into the config's
// rope_freq_factors (per-pair divisors) and rope_mscale by yarn_rope().
struct YarnParams {
  float factor = 1.0f;
  float original_ctx = 4096.0f;
  float beta_fast = 32.0f, beta_slow = 1.0f;
  float attn_factor = 1.0f;
  // The correction range's ends rounded out to whole pairs (floor / ceil), as llama.cpp does
  // and HF unless the config says "truncate": false (GPT-OSS's does).
  bool truncate = true;
};

struct ModelConfig {
  std::string arch;          // registry name: llama, qwen2, qwen3, gemma3, spark
  int32_t n_vocab = 0;
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  int32_t n_ff = 0;
  int64_t max_ctx = 0;       // advertised context (never used to size buffers)
  float norm_eps = 1e-5f;
  // GGUF {arch}.pooling_type, llama.cpp's numbering (-1 unspecified, 0 none, 1 mean, 2 cls,
  // 3 last, 4 rank): how an embedding model pools its hidden states.
  int32_t pooling_type = -1;
  // A BERT-family text encoder (arch/bert.h): non-causal, no output head, no KV cache. It
  // embeds (an encoder engine serves it); the decoder forward pass refuses it.
  bool encoder_only = false;
  RopeStyle rope_style = RopeStyle::kNeox;
  Activation act = Activation::kSwiGlu;
  bool tied_embeddings = false;  // output.weight absent: the head reads token_embd
  bool qkv_bias = false;         // attn_{q,k,v}.bias (Qwen2)
  bool qk_norm = false;          // per-head RMSNorm on q and k before RoPE (Qwen3, Gemma3)
  bool post_norms = false;       // post_attention_norm + post_ffw_norm (Gemma3)
  bool scale_embeddings = false; // token embeddings * sqrt(n_embd) (Gemma)
  float attn_scale = 0.0f;       // q.k scale; 0 = 1/sqrt(head_dim)
  // Llama-3.1 style per-pair frequency divisors [rotary_dim/2] (global layers); empty = none.
  std::vector<float> rope_freq_factors;
  float rope_mscale = 1.0f;      // cos/sin scale of the global layers' RoPE (YaRN), 1 = none
  YarnParams yarn;               // factor > 1: the YaRN behind rope_freq_factors/mscale
  // The factors and mscale apply to sliding layers as well (GPT-OSS: one RoPE for all
  // layers); otherwise sliding layers keep their own plain RoPE (Gemma-3).
  bool sliding_rope_scaled = false;
  bool attn_sinks = false;       // attn_sinks.weight [n_head] per layer (GPT-OSS)
  bool attn_out_bias = false;    // attn_output.bias [n_embd] (GPT-OSS)
  // The name of the FFN's pre-norm tensor: "ffn_norm", or GPT-OSS's "post_attention_norm".
  std::string ffn_norm_name = "ffn_norm";
  std::vector<LayerConfig> layers;  // [n_layer]
  MoeConfig moe;                    // experts (n_expert 0: dense model)
  // The Gated DeltaNet layers' sizes (LayerConfig::recurrent; n_v_heads 0: none). Their
  // weights: attn_qkv [conv_channels, n_embd], attn_gate (z) [value_dim, n_embd],
  // ssm_alpha / ssm_beta [n_v_heads, n_embd], ssm_conv1d [conv_channels, conv_kernel],
  // ssm_dt.bias and ssm_a [n_v_heads] (a = -exp(A_log)), ssm_norm [d_v], ssm_out
  // [n_embd, value_dim].
  DeltaNetShape linear;
  // Qwen3-Next's fused projections instead of the four above: ssm_in [2 C' , n_embd] holds,
  // per key head, q (d_k), k (d_k), v and z (V / K value heads of d_v each) rows; ssm_ba
  // [2 n_v_heads, n_embd] per key head its value heads' beta then alpha rows. Value heads
  // are then grouped (DeltaNetHeadMap::kGrouped).
  bool linear_fused_qkvz = false;
  // Softmax attention layers whose q projection also yields an output gate (Qwen3-Next,
  // Qwen3.5): attn_q is [n_head * 2 * head_dim, n_embd], per head q then gate, and the
  // attention output is multiplied by sigmoid(gate) before attn_output.
  bool attn_output_gate = false;
  float swiglu_limit = 7.0f;        // Activation::kSwiGluClamped's L

  int32_t q_dim() const { return n_head * head_dim; }
  int32_t kv_dim() const { return n_head_kv * head_dim; }
  float effective_attn_scale() const;
  int32_t n_sliding_layers() const;
  int32_t n_moe_layers() const;
  int32_t n_recurrent_layers() const;
};

// YaRN as per-pair frequency divisors [rotary_dim/2] and the cos/sin scale, for rotary_dim
// dims of base theta (ggml's corr-dims rule: the range [floor(lo), ceil(hi)]).
std::vector<float> yarn_rope(const YarnParams& y, int32_t rotary_dim, float theta, float* mscale);

// Checks internal consistency (positive sizes, heads divisible, rotary dims even and within
// head_dim, one LayerConfig per layer). Names the offending field.
Status validate_config(const ModelConfig& c);
// The 64-bit size checks of validate_config alone (widths, vocab x embedding, context).
Status validate_config_products(const ModelConfig& c);
// One-line human summary, e.g. for `inspect` and logs.
std::string describe_config(const ModelConfig& c);

}  // namespace edge
