#include "model/weights.h"

#include "kernels/api.h"
#include "model/tensor_schema.h"

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

Status bind_layer(const ModelConfig& c, int l, Binder& b, LayerWeights* w) {
  RETURN_IF_ERROR(b.vec(layer_name(l, "attn_norm"), true, &w->attn_norm));
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
  RETURN_IF_ERROR(b.vec(layer_name(l, "ffn_norm"), true, &w->ffn_norm));
  RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_gate"), &w->w_gate));
  RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_up"), &w->w_up));
  RETURN_IF_ERROR(b.matrix(layer_name(l, "ffn_down"), &w->w_down));
  return Status();
}

}  // namespace

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
