#include "model/config.h"

#include <fmt/format.h>

#include <cmath>

namespace edge {

const char* activation_name(Activation a) {
  return a == Activation::kSwiGlu ? "swiglu" : "geglu-tanh";
}

float ModelConfig::effective_attn_scale() const {
  return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

int32_t ModelConfig::n_sliding_layers() const {
  int32_t n = 0;
  for (const LayerConfig& l : layers) n += l.sliding ? 1 : 0;
  return n;
}

Status validate_config(const ModelConfig& c) {
  auto bad = [&](const std::string& what) {
    return Status::invalid_format(fmt::format("model config ({}): {}", c.arch, what));
  };
  if (c.n_vocab <= 0) return bad(fmt::format("n_vocab {} must be positive", c.n_vocab));
  if (c.n_embd <= 0) return bad(fmt::format("n_embd {} must be positive", c.n_embd));
  if (c.n_layer <= 0) return bad(fmt::format("n_layer {} must be positive", c.n_layer));
  if (c.n_head <= 0 || c.n_head_kv <= 0)
    return bad(fmt::format("n_head {} / n_head_kv {} must be positive", c.n_head, c.n_head_kv));
  if (c.n_head % c.n_head_kv != 0)
    return bad(fmt::format("n_head {} is not a multiple of n_head_kv {}", c.n_head, c.n_head_kv));
  if (c.head_dim <= 0 || c.head_dim % 2 != 0)
    return bad(fmt::format("head_dim {} must be positive and even", c.head_dim));
  if (c.n_ff <= 0) return bad(fmt::format("n_ff {} must be positive", c.n_ff));
  if (!(c.norm_eps > 0.0f)) return bad(fmt::format("norm_eps {} must be positive", c.norm_eps));
  if (static_cast<int32_t>(c.layers.size()) != c.n_layer)
    return bad(fmt::format("{} layer configs for {} layers", c.layers.size(), c.n_layer));
  for (int32_t i = 0; i < c.n_layer; ++i) {
    const LayerConfig& l = c.layers[i];
    if (l.rotary_dim < 0 || l.rotary_dim > c.head_dim || l.rotary_dim % 2 != 0)
      return bad(fmt::format("layer {}: rotary_dim {} must be even and <= head_dim {}", i,
                             l.rotary_dim, c.head_dim));
    if (l.sliding && l.window <= 0)
      return bad(fmt::format("layer {}: sliding layer needs a positive window", i));
    if (!(l.rope_theta > 0.0f) || !(l.rope_scale > 0.0f))
      return bad(fmt::format("layer {}: rope theta {} / scale {} must be positive", i,
                             l.rope_theta, l.rope_scale));
  }
  if (!c.rope_freq_factors.empty()) {
    for (const LayerConfig& l : c.layers)
      if (!l.sliding && static_cast<int32_t>(c.rope_freq_factors.size()) * 2 != l.rotary_dim)
        return bad(fmt::format("{} rope freq factors for rotary_dim {}",
                               c.rope_freq_factors.size(), l.rotary_dim));
  }
  return Status();
}

std::string describe_config(const ModelConfig& c) {
  std::string s = fmt::format(
      "{}: vocab {} embd {} layers {} heads {}/{} head_dim {} ff {} ctx {} rope {} act {}",
      c.arch, c.n_vocab, c.n_embd, c.n_layer, c.n_head, c.n_head_kv, c.head_dim, c.n_ff,
      c.max_ctx, rope_style_name(c.rope_style), activation_name(c.act));
  if (c.n_sliding_layers() > 0) s += fmt::format(" sliding {}/{}", c.n_sliding_layers(), c.n_layer);
  if (c.tied_embeddings) s += " tied";
  if (c.qkv_bias) s += " qkv-bias";
  if (c.qk_norm) s += " qk-norm";
  if (c.post_norms) s += " post-norms";
  return s;
}

}  // namespace edge
