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

const TensorSpec* TensorSchema::find(const std::string& name) const {
  for (const TensorSpec& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Status TensorSchema::check(const TensorSet& tensors) const {
  for (const TensorSpec& s : specs_) {
    const TensorView* t = tensors.find(s.name);
    if (!t) {
      if (!s.required) continue;
      return Status::not_found(
          fmt::format("missing tensor {} (expected shape {})", s.name, shape_string(s.shape)));
    }
    if (t->shape != s.shape)
      return Status::invalid_format(fmt::format("tensor {}: expected shape {}, found {}", s.name,
                                                shape_string(s.shape), shape_string(t->shape)));
    if (!kernel_supports_dtype(t->dtype))
      return Status::unsupported(fmt::format("tensor {}: unsupported type {} (F32, F16, BF16 only)",
                                             s.name, dtype_name(t->dtype)));
  }
  return Status();
}

std::string layer_name(int layer, const char* what, const char* suffix) {
  return fmt::format("blk.{}.{}.{}", layer, what, suffix);
}

TensorSchema decoder_schema(const ModelConfig& c) {
  TensorSchema s;
  const int64_t d = c.n_embd, q = c.q_dim(), kv = c.kv_dim(), ff = c.n_ff, v = c.n_vocab;
  s.require("token_embd.weight", {v, d});   // [n_vocab, n_embd]
  s.require("output_norm.weight", {d});     // [n_embd]
  if (c.tied_embeddings)
    s.optional("output.weight", {v, d});    // ignored: the head reads token_embd
  else
    s.require("output.weight", {v, d});     // [n_vocab, n_embd]
  for (int l = 0; l < c.n_layer; ++l) {
    s.require(layer_name(l, "attn_norm"), {d});
    s.require(layer_name(l, "attn_q"), {q, d});       // [n_head*head_dim, n_embd]
    s.require(layer_name(l, "attn_k"), {kv, d});      // [n_head_kv*head_dim, n_embd]
    s.require(layer_name(l, "attn_v"), {kv, d});
    s.require(layer_name(l, "attn_output"), {d, q});  // [n_embd, n_head*head_dim]
    s.require(layer_name(l, "ffn_norm"), {d});
    s.require(layer_name(l, "ffn_gate"), {ff, d});    // [n_ff, n_embd]
    s.require(layer_name(l, "ffn_up"), {ff, d});
    s.require(layer_name(l, "ffn_down"), {d, ff});    // [n_embd, n_ff]
  }
  return s;
}

}  // namespace edge
