// Hyper-parameter reading shared by the decoder families: the llama.cpp GGUF keys
// (<arch>.embedding_length, ...) and the HF config.json fields (hidden_size, ...).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/status.h"
#include "formats/gguf.h"
#include "model/config.h"

namespace edge {

// Fills sizes, eps, max_ctx, and one LayerConfig per layer with the global RoPE settings
// (freq_base, dimension_count, linear scaling) and no window. n_vocab comes from
// <arch>.vocab_size, else token_embd.weight's rows, else tokenizer.ggml.tokens.
Status gguf_common_hparams(const GgufFile& f, const std::string& arch, ModelConfig* c);
// Same from config.json: hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, head_dim, intermediate_size, vocab_size, rms_norm_eps, rope_theta,
// max_position_embeddings, tie_word_embeddings (default `tied_default`),
// partial_rotary_factor, rope_scaling (linear, llama3).
Status hf_common_hparams(const nlohmann::json& j, bool tied_default, ModelConfig* c);

// Typed JSON field access that never throws: missing -> def; wrong type -> error naming key.
Expected<int64_t> json_int(const nlohmann::json& j, const char* key, int64_t def);
Expected<double> json_float(const nlohmann::json& j, const char* key, double def);
Expected<bool> json_bool(const nlohmann::json& j, const char* key, bool def);
Expected<int64_t> json_required_int(const nlohmann::json& j, const char* key);

// The HF -> canonical map of Llama-style decoders (model.layers.N.self_attn.q_proj.weight ->
// blk.N.attn_q.weight). gemma_norms: Gemma's four norms per layer (post_attention_layernorm
// is a post-norm there, an FFN pre-norm elsewhere). "" for names it does not know.
std::string hf_decoder_tensor_name(const std::string& hf, bool gemma_norms);
// Its inverse for writers: canonical -> the HF name of a plain text model (model.layers.N...).
std::string hf_decoder_name_of(const std::string& canonical, bool gemma_norms);

// MoE keys of llama.cpp's GGUF: <arch>.expert_count, expert_used_count,
// expert_feed_forward_length, expert_shared_feed_forward_length (optional),
// expert_weights_norm (optional, default `norm_default`), expert_weights_scale (optional);
// every layer from `first_moe_layer` on is a MoE layer.
Status gguf_moe_hparams(const GgufFile& f, const std::string& arch, bool norm_default,
                        int32_t first_moe_layer, ModelConfig* c);
// The same from config.json: num_experts (or num_local_experts), num_experts_per_tok,
// moe_intermediate_size (default: intermediate_size), norm_topk_prob, decoder_sparse_step
// and mlp_only_layers (Qwen-MoE: the layers that keep a dense FFN).
Status hf_moe_hparams(const nlohmann::json& j, bool norm_default, ModelConfig* c);
// Writers' inverse of hf_moe_hparams (Qwen-MoE field names).
void hf_moe_config(const ModelConfig& c, nlohmann::json* j);
// HF -> canonical for the MoE parts of a Qwen-MoE style layer (mlp.gate -> ffn_gate_inp,
// mlp.experts.E.gate_proj -> ffn_gate.E, ...), "" if `hf` is not one; and its inverse.
std::string hf_moe_tensor_name(const std::string& hf);
std::string hf_moe_name_of(const std::string& canonical);

// Whether canonical tensor `name` is an RMSNorm weight that an HF checkpoint of a
// hf_norms_plus_one family stores as w for x * (1 + w): every *norm.weight but the gated
// norm of Qwen3.5's linear attention (ssm_norm), which HF applies as stored.
bool hf_norm_takes_one(const std::string& name);

// One element of a float tensor (F32, F16 or BF16; the caller checks the type) as F32.
float float_element(const TensorView& t, int64_t i);

// Llama-3.1 "llama3" rope_scaling as per-pair frequency divisors [rotary_dim/2].
std::vector<float> llama3_rope_freq_factors(int32_t rotary_dim, float theta, float factor,
                                            float low_freq_factor, float high_freq_factor,
                                            float original_ctx);

}  // namespace edge
