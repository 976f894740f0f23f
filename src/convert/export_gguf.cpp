#include "convert/export_gguf.h"

#include <cstdint>
#include <vector>

#include "formats/gguf.h"
#include "model/gguf_hparams.h"
#include "tokenizer/vocab_io.h"

namespace edge {

namespace {

Status check_exportable(const Model& m) {
  const ModelConfig& c = m.config();
  if (c.arch != "llama")
    return Status::unsupported("export to GGUF: architecture '" + c.arch + "' (only llama)");
  if (c.rope_style != RopeStyle::kInterleaved)
    return Status::unsupported("export to GGUF: rotate-half RoPE layout (HF llama) needs q/k row "
                               "permutation, not implemented");
  if (c.qkv_bias || c.qk_norm || c.post_norms || c.scale_embeddings || c.attn_scale > 0 ||
      c.n_sliding_layers() > 0)
    return Status::unsupported("export to GGUF: config has features the llama GGUF layout lacks");
  for (const LayerConfig& l : c.layers)
    if (l.rope_theta != c.layers[0].rope_theta || l.rotary_dim != c.layers[0].rotary_dim ||
        l.rope_scale != c.layers[0].rope_scale)
      return Status::unsupported("export to GGUF: per-layer RoPE settings differ");
  return Status();
}

void write_hparams(const ModelConfig& c, GgufWriter& w) {
  const std::string a = "llama";
  const LayerConfig& l = c.layers[0];
  write_common_gguf_hparams(c, l, "edge-export", w);
  if (l.rope_scale != 1.0f) {
    w.set_string(a + ".rope.scaling.type", "linear");
    w.set_f32(a + ".rope.scaling.factor", l.rope_scale);
  }
}

// A matrix view: its bytes are copied as they are (they live as long as the model).
Status add_matrix(GgufWriter& w, const TensorView& t, const std::string& name) {
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    return Status::unsupported("export to GGUF: " + name + " has type " + dtype_name(t.dtype) +
                               " (only F32, F16, BF16 matrices; export the unquantised model)");
  return w.add_tensor(name, t.dtype, t.shape, t.data, t.nbytes);
}

Status add_vector(GgufWriter& w, const std::vector<float>& v, const std::string& name) {
  return w.add_tensor(name, DType::F32, {static_cast<int64_t>(v.size())}, v.data(), v.size() * 4);
}

}  // namespace

Status write_model_gguf(const Model& model, const std::string& path) {
  RETURN_IF_ERROR(check_exportable(model));
  const ModelConfig& c = model.config();
  const ModelWeights& wt = model.weights();
  GgufWriter w;
  write_hparams(c, w);
  if (model.tokenizer()) RETURN_IF_ERROR(write_vocab_gguf(model.tokenizer()->vocab(), w));
  RETURN_IF_ERROR(add_matrix(w, wt.token_embd, "token_embd.weight"));
  RETURN_IF_ERROR(add_vector(w, wt.output_norm, "output_norm.weight"));
  // Tied: the loader reads token_embd when output.weight is absent.
  if (!c.tied_embeddings) RETURN_IF_ERROR(add_matrix(w, wt.output, "output.weight"));
  if (!c.rope_freq_factors.empty())
    RETURN_IF_ERROR(add_vector(w, c.rope_freq_factors, "rope_freqs.weight"));
  for (size_t i = 0; i < wt.layers.size(); ++i) {
    const LayerWeights& L = wt.layers[i];
    const std::string p = "blk." + std::to_string(i) + ".";
    RETURN_IF_ERROR(add_vector(w, L.attn_norm, p + "attn_norm.weight"));
    RETURN_IF_ERROR(add_matrix(w, L.wq, p + "attn_q.weight"));
    RETURN_IF_ERROR(add_matrix(w, L.wk, p + "attn_k.weight"));
    RETURN_IF_ERROR(add_matrix(w, L.wv, p + "attn_v.weight"));
    RETURN_IF_ERROR(add_matrix(w, L.wo, p + "attn_output.weight"));
    RETURN_IF_ERROR(add_vector(w, L.ffn_norm, p + "ffn_norm.weight"));
    RETURN_IF_ERROR(add_matrix(w, L.w_gate, p + "ffn_gate.weight"));
    RETURN_IF_ERROR(add_matrix(w, L.w_up, p + "ffn_up.weight"));
    RETURN_IF_ERROR(add_matrix(w, L.w_down, p + "ffn_down.weight"));
  }
  return w.write(path);
}

}  // namespace edge
