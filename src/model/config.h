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

namespace edge {

enum class Activation : uint8_t {
  kSwiGlu,  // down(silu(gate(x)) * up(x))             Llama, Qwen
  kGeGlu,   // down(gelu_tanh(gate(x)) * up(x))        Gemma, Spark
};
const char* activation_name(Activation a);

struct LayerConfig {
  bool sliding = false;      // sliding-window attention layer
  int32_t window = 0;        // keys with pos - key_pos < window are visible (sliding only)
  float rope_theta = 10000.0f;
  int32_t rotary_dim = 0;    // first rotary_dim dims of each head rotate (partial rotary)
  float rope_scale = 1.0f;   // linear RoPE scaling factor: positions are divided by it
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
  std::vector<LayerConfig> layers;  // [n_layer]

  int32_t q_dim() const { return n_head * head_dim; }
  int32_t kv_dim() const { return n_head_kv * head_dim; }
  float effective_attn_scale() const;
  int32_t n_sliding_layers() const;
};

// Checks internal consistency (positive sizes, heads divisible, rotary dims even and within
// head_dim, one LayerConfig per layer). Names the offending field.
Status validate_config(const ModelConfig& c);
// The 64-bit size checks of validate_config alone (widths, vocab x embedding, context).
Status validate_config_products(const ModelConfig& c);
// One-line human summary, e.g. for `inspect` and logs.
std::string describe_config(const ModelConfig& c);

}  // namespace edge
