#include "model/tensor_schema.h"

#include <fmt/format.h>

#include "kernels/api.h"

namespace edge {

void TensorSchema::require(std::string name, std::vector<int64_t> shape) {
  specs_.push_back({std::move(name), std::move(shape), true});
}

void TensorSchema::optional(std::string name, std::vector<int64_t> shape) {
  specs_.push_back({std::move(name), std::move(shape), false});
}

void TensorSchema::require_experts(std::string name, int32_t n_expert,
                                   std::vector<int64_t> per_expert) {
  per_expert.insert(per_expert.begin(), n_expert);
  specs_.push_back({std::move(name), std::move(per_expert), true, n_expert});
}

std::string expert_tensor_name(const std::string& stacked, int32_t e) {
  const size_t at = stacked.rfind("_exps.");
  if (at == std::string::npos) return stacked + "." + std::to_string(e);
  return stacked.substr(0, at) + "." + std::to_string(e) + stacked.substr(at + 5);
}

const TensorSpec* TensorSchema::find(const std::string& name) const {
  for (const TensorSpec& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

namespace {

Status check_one(const TensorView& t, const std::string& name, const std::vector<int64_t>& shape) {
  if (t.shape != shape)
    return Status::invalid_format(fmt::format("tensor {}: expected shape {}, found {}", name,
                                              shape_string(shape), shape_string(t.shape)));
  if (!kernel_supports_dtype(t.dtype))
    return Status::unsupported(fmt::format("tensor {}: unsupported type {} (F32, F16, BF16 only)",
                                           name, dtype_name(t.dtype)));
  return Status();
}

// An expert spec held one tensor per expert: every one present, each [shape[1:]].
Status check_per_expert(const TensorSpec& s, const TensorSet& tensors) {
  const std::vector<int64_t> one(s.shape.begin() + 1, s.shape.end());
  for (int32_t e = 0; e < s.experts; ++e) {
    const std::string name = expert_tensor_name(s.name, e);
    const TensorView* t = tensors.find(name);
    if (!t)
      return Status::not_found(fmt::format("missing tensor {} (expected shape {}, or {} as {})", name,
                                           shape_string(one), s.name, shape_string(s.shape)));
    RETURN_IF_ERROR(check_one(*t, name, one));
  }
  return Status();
}

}  // namespace

Status TensorSchema::check(const TensorSet& tensors) const {
  for (const TensorSpec& s : specs_) {
    const TensorView* t = tensors.find(s.name);
    if (!t && s.experts > 0) {
      RETURN_IF_ERROR(check_per_expert(s, tensors));
      continue;
    }
    if (!t) {
      if (!s.required) continue;
      return Status::not_found(
          fmt::format("missing tensor {} (expected shape {})", s.name, shape_string(s.shape)));
    }
    RETURN_IF_ERROR(check_one(*t, s.name, s.shape));
  }
  return Status();
}

std::string layer_name(int layer, const char* what, const char* suffix) {
  return fmt::format("blk.{}.{}.{}", layer, what, suffix);
}

TensorSchema decoder_schema(const ModelConfig& c) {
  TensorSchema s;
  const int64_t d = c.n_embd, q = c.q_dim(), ff = c.n_ff, v = c.n_vocab;
  s.require("token_embd.weight", {v, d});   // [n_vocab, n_embd]
  s.require("output_norm.weight", {d});     // [n_embd]
  if (c.tied_embeddings)
    s.optional("output.weight", {v, d});    // ignored: the head reads token_embd
  else
    s.require("output.weight", {v, d});     // [n_vocab, n_embd]
  // Gated attention (Qwen3.5): q and its output gate interleaved per head.
  const int64_t q_rows = c.attn_output_gate ? 2 * q : q;
  for (int l = 0; l < c.n_layer; ++l) {
    s.require(layer_name(l, "attn_norm"), {d});
    if (c.layers[static_cast<size_t>(l)].recurrent) {
      delta_net_schema(c, l, &s);
    } else {
      attention_schema(c, l, q_rows, &s);
    }
    s.require(layer_name(l, c.ffn_norm_name.c_str()), {d});
    if (c.layers[static_cast<size_t>(l)].moe) {
      moe_ffn_schema(c, l, &s);
      continue;
    }
    s.require(layer_name(l, "ffn_gate"), {ff, d});    // [n_ff, n_embd]
    s.require(layer_name(l, "ffn_up"), {ff, d});
    s.require(layer_name(l, "ffn_down"), {d, ff});    // [n_embd, n_ff]
  }
  return s;
}

std::string ssm_a_name(int layer) { return fmt::format("blk.{}.ssm_a", layer); }

void delta_net_schema(const ModelConfig& c, int l, TensorSchema* s) {
  const DeltaNetShape& ln = c.linear;
  const int64_t d = c.n_embd, ch = ln.conv_channels(), v = ln.value_dim(), h = ln.n_v_heads;
  if (c.linear_fused_qkvz) {
    s->require(layer_name(l, "ssm_in"), {ch + v, d});           // q, k, v, z per key head
    s->require(layer_name(l, "ssm_ba"), {2 * h, d});            // beta, alpha per key head
  } else {
    s->require(layer_name(l, "attn_qkv"), {ch, d});             // [C, n_embd]
    s->require(layer_name(l, "attn_gate"), {v, d});             // z [V, n_embd]
    s->require(layer_name(l, "ssm_alpha"), {h, d});             // [H, n_embd]
    s->require(layer_name(l, "ssm_beta"), {h, d});
  }
  s->require(layer_name(l, "ssm_conv1d"), {ch, ln.conv_kernel});  // [C, K]
  s->require(layer_name(l, "ssm_dt", "bias"), {h});
  s->require(ssm_a_name(l), {h});
  s->require(layer_name(l, "ssm_norm"), {ln.d_v});
  s->require(layer_name(l, "ssm_out"), {d, v});                 // [n_embd, V]
}

void attention_schema(const ModelConfig& c, int l, int64_t q_rows, TensorSchema* s) {
  const int64_t d = c.n_embd, q = c.q_dim(), kv = c.kv_dim();
  s->require(layer_name(l, "attn_q"), {q_rows, d});  // [n_head*head_dim (x2 gated), n_embd]
  s->require(layer_name(l, "attn_k"), {kv, d});      // [n_head_kv*head_dim, n_embd]
  s->require(layer_name(l, "attn_v"), {kv, d});
  s->require(layer_name(l, "attn_output"), {d, q});  // [n_embd, n_head*head_dim]
  if (c.attn_out_bias) s->require(layer_name(l, "attn_output", "bias"), {d});
  if (c.attn_sinks) s->require(layer_name(l, "attn_sinks"), {c.n_head});  // [n_head]
}

void moe_ffn_schema(const ModelConfig& c, int l, TensorSchema* s) {
  const MoeConfig& m = c.moe;
  const int64_t d = c.n_embd, ffe = m.n_ff_expert, ne = m.n_expert;
  s->require(layer_name(l, "ffn_gate_inp"), {ne, d});  // router [n_expert, n_embd]
  if (m.router_bias) s->require(layer_name(l, "ffn_gate_inp", "bias"), {ne});
  if (m.selection_bias) s->require(layer_name(l, "exp_probs_b", "bias"), {ne});
  s->require_experts(layer_name(l, "ffn_gate_exps"), m.n_expert, {ffe, d});  // [E, n_ff_exp, n_embd]
  s->require_experts(layer_name(l, "ffn_up_exps"), m.n_expert, {ffe, d});
  s->require_experts(layer_name(l, "ffn_down_exps"), m.n_expert, {d, ffe});  // [E, n_embd, n_ff_exp]
  if (m.expert_bias) {
    s->require_experts(layer_name(l, "ffn_gate_exps", "bias"), m.n_expert, {ffe});
    s->require_experts(layer_name(l, "ffn_up_exps", "bias"), m.n_expert, {ffe});
    s->require_experts(layer_name(l, "ffn_down_exps", "bias"), m.n_expert, {d});
  }
  if (m.n_ff_shared > 0) {
    const int64_t ffs = m.n_ff_shared;
    s->require(layer_name(l, "ffn_gate_shexp"), {ffs, d});
    s->require(layer_name(l, "ffn_up_shexp"), {ffs, d});
    s->require(layer_name(l, "ffn_down_shexp"), {d, ffs});
    if (m.shared_gate) s->require(layer_name(l, "ffn_gate_inp_shexp"), {d});  // [n_embd]
  }
}

}  // namespace edge
