#include "model/weights.h"

#include "kernels/api.h"
#include "model/tensor_schema.h"
#include "quant/packed.h"

namespace edge {

namespace {

class Binder {
 public:
  Binder(const TensorSet& t, bool plus_one) : t_(t), plus_one_(plus_one) {}

  Status matrix(const std::string& name, TensorView* out) {
    const TensorView* v = t_.find(name);
    if (!v) return Status::not_found("missing tensor " + name);
    *out = *v;
    return Status();
  }
  // The experts of a stacked spec, one 2-D view each: slices of the stacked tensor, or
  // the file's per-expert tensors (expert_tensor_name).
  Status experts(const std::string& stacked, int32_t n_expert, std::vector<TensorView>* out) {
    out->assign(static_cast<size_t>(n_expert), TensorView{});
    const TensorView* v = t_.find(stacked);
    for (int32_t e = 0; e < n_expert; ++e) {
      if (v) {
        (*out)[static_cast<size_t>(e)] = expert_slice(*v, e);
        continue;
      }
      RETURN_IF_ERROR(matrix(expert_tensor_name(stacked, e), &(*out)[static_cast<size_t>(e)]));
    }
    return Status();
  }
  // The biases of a stacked spec as one F32 vector [n_expert * width].
  Status expert_vecs(const std::string& stacked, int32_t n_expert, std::vector<float>* out) {
    if (t_.find(stacked)) return vec(stacked, false, out);
    out->clear();
    std::vector<float> one;
    for (int32_t e = 0; e < n_expert; ++e) {
      RETURN_IF_ERROR(vec(expert_tensor_name(stacked, e), false, &one));
      out->insert(out->end(), one.begin(), one.end());
    }
    return Status();
  }
  // F32 copy of a vector; `norm` adds the Gemma offset when requested.
  Status vec(const std::string& name, bool norm, std::vector<float>* out) {
    const TensorView* v = t_.find(name);
    if (!v) return Status::not_found("missing tensor " + name);
    out->resize(static_cast<size_t>(v->numel()));
    reference_kernels().convert_row(v->dtype, v->data, v->numel(), out->data());
    if (norm && plus_one_)
      for (float& x : *out) x += 1.0f;
    return Status();
  }

 private:
  const TensorSet& t_;
  bool plus_one_;
};

Status bind_moe(const ModelConfig& c, int l, Binder& b, LayerWeights* w) {
  const MoeConfig& m = c.moe;
  RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_gate_inp"), &w->router));
  if (m.router_bias) RETURN_IF_ERROR(b.vec(layer_name(l, "ffn_gate_inp", "bias"), false, &w->router_bias));
  if (m.selection_bias)
    RETURN_IF_ERROR(b.vec(layer_name(l, "exp_probs_b", "bias"), false, &w->selection_bias));
  RETURN_IF_ERROR(b.experts(layer_name(l, "ffn_gate_exps"), m.n_expert, &w->gate_exps));
  RETURN_IF_ERROR(b.experts(layer_name(l, "ffn_up_exps"), m.n_expert, &w->up_exps));
  RETURN_IF_ERROR(b.experts(layer_name(l, "ffn_down_exps"), m.n_expert, &w->down_exps));
  if (m.expert_bias) {
    RETURN_IF_ERROR(b.expert_vecs(layer_name(l, "ffn_gate_exps", "bias"), m.n_expert, &w->gate_exps_bias));
    RETURN_IF_ERROR(b.expert_vecs(layer_name(l, "ffn_up_exps", "bias"), m.n_expert, &w->up_exps_bias));
    RETURN_IF_ERROR(b.expert_vecs(layer_name(l, "ffn_down_exps", "bias"), m.n_expert, &w->down_exps_bias));
  }
  if (m.n_ff_shared > 0) {
    RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_gate_shexp"), &w->gate_shexp));
    RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_up_shexp"), &w->up_shexp));
    RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_down_shexp"), &w->down_shexp));
    if (m.shared_gate) RETURN_IF_ERROR(b.vec(layer_name(l, "ffn_gate_inp_shexp"), false, &w->shexp_gate));
  }
  return Status();
}

// A Gated DeltaNet layer's mixer (LayerConfig::recurrent). ssm_a has no suffix in
// llama.cpp's files (blk.N.ssm_a); the gated norm's weight is used as stored (no +1).
Status bind_delta_net(const ModelConfig& c, int l, Binder& b, LayerWeights* w) {
  if (c.linear_fused_qkvz) {
    RETURN_IF_ERROR(b.matrix(layer_name(l, "ssm_in"), &w->ssm_in));
    RETURN_IF_ERROR(b.matrix(layer_name(l, "ssm_ba"), &w->ssm_ba));
  } else {
    RETURN_IF_ERROR(b.matrix(layer_name(l, "attn_qkv"), &w->ssm_qkv));
    RETURN_IF_ERROR(b.matrix(layer_name(l, "attn_gate"), &w->ssm_z));
    RETURN_IF_ERROR(b.matrix(layer_name(l, "ssm_alpha"), &w->ssm_alpha));
    RETURN_IF_ERROR(b.matrix(layer_name(l, "ssm_beta"), &w->ssm_beta));
  }
  RETURN_IF_ERROR(b.matrix(layer_name(l, "ssm_out"), &w->ssm_out));
  RETURN_IF_ERROR(b.vec(layer_name(l, "ssm_conv1d"), false, &w->ssm_conv));
  RETURN_IF_ERROR(b.vec(layer_name(l, "ssm_dt", "bias"), false, &w->ssm_dt));
  RETURN_IF_ERROR(b.vec(ssm_a_name(l), false, &w->ssm_a));
  return b.vec(layer_name(l, "ssm_norm"), false, &w->ssm_norm);
}

Status bind_attention(const ModelConfig& c, int l, Binder& b, LayerWeights* w) {
  RETURN_IF_ERROR(b.matrix(layer_name(l, "attn_q"), &w->wq));
  RETURN_IF_ERROR(b.matrix(layer_name(l, "attn_k"), &w->wk));
  RETURN_IF_ERROR(b.matrix(layer_name(l, "attn_v"), &w->wv));
  RETURN_IF_ERROR(b.matrix(layer_name(l, "attn_output"), &w->wo));
  if (c.qkv_bias) {
    RETURN_IF_ERROR(b.vec(layer_name(l, "attn_q", "bias"), false, &w->bq));
    RETURN_IF_ERROR(b.vec(layer_name(l, "attn_k", "bias"), false, &w->bk));
    RETURN_IF_ERROR(b.vec(layer_name(l, "attn_v", "bias"), false, &w->bv));
  }
  if (c.qk_norm) {
    RETURN_IF_ERROR(b.vec(layer_name(l, "attn_q_norm"), true, &w->q_norm));
    RETURN_IF_ERROR(b.vec(layer_name(l, "attn_k_norm"), true, &w->k_norm));
  }
  if (c.post_norms) {
    RETURN_IF_ERROR(b.vec(layer_name(l, "post_attention_norm"), true, &w->post_attn_norm));
    RETURN_IF_ERROR(b.vec(layer_name(l, "post_ffw_norm"), true, &w->post_ffn_norm));
  }
  if (c.attn_out_bias) RETURN_IF_ERROR(b.vec(layer_name(l, "attn_output", "bias"), false, &w->bo));
  if (c.attn_sinks) RETURN_IF_ERROR(b.vec(layer_name(l, "attn_sinks"), false, &w->attn_sinks));
  return Status();
}

Status bind_layer(const ModelConfig& c, int l, Binder& b, LayerWeights* w) {
  RETURN_IF_ERROR(b.vec(layer_name(l, "attn_norm"), true, &w->attn_norm));
  if (c.layers[static_cast<size_t>(l)].recurrent)
    RETURN_IF_ERROR(bind_delta_net(c, l, b, w));
  else
    RETURN_IF_ERROR(bind_attention(c, l, b, w));
  RETURN_IF_ERROR(b.vec(layer_name(l, c.ffn_norm_name.c_str()), true, &w->ffn_norm));
  if (c.layers[static_cast<size_t>(l)].moe) return bind_moe(c, l, b, w);
  RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_gate"), &w->w_gate));
  RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_up"), &w->w_up));
  RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_down"), &w->w_down));
  return Status();
}

}  // namespace

TensorView expert_slice(const TensorView& stacked, int32_t e) {
  TensorView v = stacked;
  const int64_t n = stacked.shape[1], k = stacked.shape[2];
  v.shape = {n, k};
  v.name = expert_tensor_name(stacked.name, e);
  PackedFormat f;
  const uint64_t bytes = packed_format_of(stacked.dtype, &f)
                             ? static_cast<uint64_t>(f.matrix_bytes(n, k))
                             : stacked.nbytes / static_cast<uint64_t>(stacked.shape[0]);
  v.data = stacked.data + static_cast<uint64_t>(e) * bytes;
  v.nbytes = bytes;
  return v;
}

Expected<ModelWeights> bind_weights(const ModelConfig& c, const TensorSet& tensors,
                                    bool norms_plus_one) {
  Binder b(tensors, norms_plus_one);
  ModelWeights w;
  RETURN_IF_ERROR(b.matrix("token_embd.weight", &w.token_embd));
  RETURN_IF_ERROR(b.vec("output_norm.weight", true, &w.output_norm));
  if (c.tied_embeddings)
    w.output = w.token_embd;
  else
    RETURN_IF_ERROR(b.matrix("output.weight", &w.output));
  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (int l = 0; l < c.n_layer; ++l) RETURN_IF_ERROR(bind_layer(c, l, b, &w.layers[l]));
  return w;
}

}  // namespace edge
