#include "model/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace edge {

const char* activation_name(Activation a) {
  return a == Activation::kSwiGlu   ? "swiglu"
         : a == Activation::kGeGlu ? "geglu-tanh"
                                   : "swiglu-clamped";
}

const char* expert_gating_name(ExpertGating g) {
  return g == ExpertGating::kSoftmax           ? "softmax"
         : g == ExpertGating::kSoftmaxSelected ? "softmax-selected"
                                               : "sigmoid";
}

std::vector<float> yarn_rope(const YarnParams& y, int32_t rotary_dim, float theta, float* mscale) {
  // The pair index at which a frequency turns `rotations` times over the original context.
  auto corr_dim = [&](float rotations) {
    return rotary_dim * std::log(y.original_ctx / (rotations * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * std::log(theta));
  };
  const float fast = corr_dim(y.beta_fast), slow = corr_dim(y.beta_slow);
  const float lo = std::max(0.0f, y.truncate ? std::floor(fast) : fast);
  const float hi = std::min(static_cast<float>(rotary_dim - 1), y.truncate ? std::ceil(slow) : slow);
  const float freq_scale = 1.0f / y.factor;
  std::vector<float> divisors(static_cast<size_t>(rotary_dim / 2));
  for (int32_t i = 0; i < rotary_dim / 2; ++i) {
    // ramp 1: keep the original angle (extrapolate), 0: interpolate by the factor.
    const float t = (static_cast<float>(i) - lo) / std::max(0.001f, hi - lo);
    const float ramp = 1.0f - std::min(1.0f, std::max(0.0f, t));
    divisors[static_cast<size_t>(i)] = 1.0f / (freq_scale * (1.0f - ramp) + ramp);
  }
  *mscale = y.attn_factor * (y.factor > 1.0f ? 1.0f + 0.1f * std::log(y.factor) : 1.0f);
  return divisors;
}

int32_t ModelConfig::n_moe_layers() const {
  int32_t n = 0;
  for (const LayerConfig& l : layers) n += l.moe ? 1 : 0;
  return n;
}

int32_t ModelConfig::n_recurrent_layers() const {
  int32_t n = 0;
  for (const LayerConfig& l : layers) n += l.recurrent ? 1 : 0;
  return n;
}

float ModelConfig::effective_attn_scale() const {
  return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

int32_t ModelConfig::n_sliding_layers() const {
  int32_t n = 0;
  for (const LayerConfig& l : layers) n += l.sliding ? 1 : 0;
  return n;
}

// Products the loader and the forward pass size buffers and loops with, in 64 bits and
// against each other: a crafted file must not wrap n_head * head_dim (q_dim(), an int32) to
// a small or zero width and get a scratch buffer smaller than the loops that write it. The
// bounds are far above any real model and low enough that every product used later
// (tokens x width, vocab x embedding, context x layers x kv_dim) stays inside int64.
Status validate_config_products(const ModelConfig& c) {
  auto bad = [&](const std::string& what) {
    return Status::invalid_format(fmt::format("model config ({}): {}", c.arch, what));
  };
  constexpr int64_t kMaxWidth = int64_t{1} << 20;     // n_embd, n_ff, q_dim, kv_dim
  constexpr int64_t kMaxVocab = int64_t{1} << 24;
  constexpr int64_t kMaxLayers = 4096;
  constexpr int64_t kMaxHeadDim = 4096;
  constexpr int64_t kMaxContext = int64_t{1} << 26;    // advertised context
  constexpr int64_t kMaxMatrix = int64_t{1} << 36;     // elements of one weight matrix
  const int64_t q = int64_t{c.n_head} * c.head_dim, kv = int64_t{c.n_head_kv} * c.head_dim;
  struct Bound {
    const char* what;
    int64_t value, max;
  };
  const Bound bounds[] = {
      {"n_embd", c.n_embd, kMaxWidth},
      {"n_ff", c.n_ff, kMaxWidth},
      {"head_dim", c.head_dim, kMaxHeadDim},
      {"n_head * head_dim (q_dim)", q, kMaxWidth},
      {"n_head_kv * head_dim (kv_dim)", kv, kMaxWidth},
      {"n_vocab", c.n_vocab, kMaxVocab},
      {"n_layer", c.n_layer, kMaxLayers},
      {"context_length", c.max_ctx, kMaxContext},
      {"n_vocab * n_embd (embedding)", int64_t{c.n_vocab} * c.n_embd, kMaxMatrix},
      {"n_ff * n_embd (feed-forward matrix)", int64_t{c.n_ff} * c.n_embd, kMaxMatrix},
      {"q_dim * n_embd (attention matrix)", q * c.n_embd, kMaxMatrix},
      {"n_expert", c.moe.n_expert, 1 << 14},
      {"n_ff_expert", c.moe.n_ff_expert, kMaxWidth},
      {"n_ff_shared", c.moe.n_ff_shared, kMaxWidth},
      {"n_expert * n_ff_expert * n_embd (experts of a layer)",
       int64_t{c.moe.n_expert} * c.moe.n_ff_expert * c.n_embd, kMaxMatrix},
      {"linear attention heads", std::max(c.linear.n_k_heads, c.linear.n_v_heads), 1 << 12},
      {"linear attention head dims", std::max(c.linear.d_k, c.linear.d_v), kMaxHeadDim},
      {"linear attention conv_kernel", c.linear.conv_kernel, 8},
      {"linear attention channels * n_embd", c.linear.conv_channels() * c.n_embd, kMaxMatrix},
  };
  for (const Bound& b : bounds)
    if (b.value > b.max) return bad(fmt::format("{} = {} exceeds {}", b.what, b.value, b.max));
  if (c.max_ctx < 0) return bad(fmt::format("context_length {} is negative", c.max_ctx));
  return Status();
}

namespace {

Status validate_moe(const ModelConfig& c) {
  auto bad = [&](const std::string& what) {
    return Status::invalid_format(fmt::format("model config ({}): {}", c.arch, what));
  };
  const MoeConfig& m = c.moe;
  if (!m.enabled()) {
    if (c.n_moe_layers() > 0) return bad("MoE layers without experts (expert_count 0)");
    return Status();
  }
  if (m.n_expert_used <= 0 || m.n_expert_used > m.n_expert)
    return bad(fmt::format("expert_used_count {} must be in [1, expert_count {}]", m.n_expert_used,
                           m.n_expert));
  if (m.n_ff_expert <= 0) return bad(fmt::format("expert FFN width {} must be positive", m.n_ff_expert));
  if (m.n_ff_shared < 0) return bad(fmt::format("shared expert width {} is negative", m.n_ff_shared));
  if (!(m.weights_scale > 0.0f)) return bad(fmt::format("expert weights scale {} must be positive", m.weights_scale));
  if (m.selection_bias && m.gating != ExpertGating::kSigmoid)
    return bad("a selection bias needs sigmoid gating");
  if (c.n_moe_layers() == 0) return bad("experts but no MoE layer");
  return Status();
}

// The Gated DeltaNet sizes of a model with recurrent layers (the kernels' limits:
// kernels/delta_net.h): value heads a multiple of key heads, a conv kernel of 2..8.
Status validate_linear(const ModelConfig& c) {
  auto bad = [&](const std::string& what) {
    return Status::invalid_format(fmt::format("model config ({}): {}", c.arch, what));
  };
  const DeltaNetShape& s = c.linear;
  if (c.n_recurrent_layers() == 0) return Status();
  if (s.n_k_heads <= 0 || s.n_v_heads <= 0 || s.d_k <= 0 || s.d_v <= 0)
    return bad(fmt::format("linear attention heads {}/{} of dims {}/{} must be positive", s.n_k_heads,
                           s.n_v_heads, s.d_k, s.d_v));
  if (s.n_v_heads % s.n_k_heads != 0)
    return bad(fmt::format("linear attention value heads {} are not a multiple of key heads {}",
                           s.n_v_heads, s.n_k_heads));
  if (s.conv_kernel < 2 || s.conv_kernel > 8)
    return bad(fmt::format("linear attention conv kernel {} must be in [2, 8]", s.conv_kernel));
  return Status();
}

}  // namespace

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
  RETURN_IF_ERROR(validate_config_products(c));
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
  RETURN_IF_ERROR(validate_moe(c));
  RETURN_IF_ERROR(validate_linear(c));
  if (!c.rope_freq_factors.empty()) {
    for (const LayerConfig& l : c.layers)
      if ((!l.sliding || c.sliding_rope_scaled) &&
          static_cast<int32_t>(c.rope_freq_factors.size()) * 2 != l.rotary_dim)
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
  if (c.n_recurrent_layers() > 0)
    s += fmt::format(" linear-attention {}/{} (heads {}/{}, dims {}/{})", c.n_recurrent_layers(),
                     c.n_layer, c.linear.n_k_heads, c.linear.n_v_heads, c.linear.d_k, c.linear.d_v);
  if (c.attn_output_gate) s += " gated-attention";
  if (c.tied_embeddings) s += " tied";
  if (c.qkv_bias) s += " qkv-bias";
  if (c.qk_norm) s += " qk-norm";
  if (c.post_norms) s += " post-norms";
  if (c.moe.enabled())
    s += fmt::format(" experts {}/{} (ff {}, {} layers, {}{})", c.moe.n_expert_used, c.moe.n_expert,
                     c.moe.n_ff_expert, c.n_moe_layers(), expert_gating_name(c.moe.gating),
                     c.moe.norm_topk ? ", renormalised" : "");
  return s;
}

}  // namespace edge
