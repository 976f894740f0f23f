// Llama 1-3 and Mistral (and llama2.c checkpoints): pre-norm blocks, RMSNorm, GQA
// attention with RoPE, SwiGLU MLP, no biases.
//
// RoPE layout differs by source: GGUF "llama" q/k rows are permuted by the converter so
// RoPE rotates interleaved pairs (2i, 2i+1) (as llama2.c does); HF checkpoints keep the
// original rows and rotate halves (i, i + d/2). Both give the same logits; we pick the
// style per source instead of permuting weights at load.
#include "model/arch/common.h"
#include "model/arch/family.h"
#include "model/arch/llama2c_config.h"

#include <cstring>

namespace edge {

namespace {

Expected<ModelConfig> llama_from_gguf(const GgufFile& f, const std::string& arch) {
  ModelConfig c;
  c.arch = "llama";
  RETURN_IF_ERROR(gguf_common_hparams(f, arch, &c));
  c.rope_style = RopeStyle::kInterleaved;
  c.act = Activation::kSwiGlu;
  c.tied_embeddings = f.tensors().find("output.weight") == nullptr;
  // Llama-3.1+: per-pair frequency divisors stored as a tensor by llama.cpp's converter.
  if (const TensorView* t = f.tensors().find("rope_freqs.weight")) {
    if (t->dtype != DType::F32 || t->numel() * 2 != c.layers[0].rotary_dim)
      return Status::invalid_format("rope_freqs.weight: expected F32 [" +
                                    std::to_string(c.layers[0].rotary_dim / 2) + "], found " +
                                    std::string(dtype_name(t->dtype)) + " " + t->shape_string());
    c.rope_freq_factors.resize(static_cast<size_t>(t->numel()));
    std::memcpy(c.rope_freq_factors.data(), t->data, c.rope_freq_factors.size() * 4);
  }
  return c;
}

Expected<ModelConfig> llama_from_hf(const nlohmann::json& j) {
  ModelConfig c;
  c.arch = "llama";
  RETURN_IF_ERROR(hf_common_hparams(j, /*tied_default=*/false, &c));
  c.rope_style = RopeStyle::kNeox;
  c.act = Activation::kSwiGlu;
  // Mistral v0.1: every layer attends to a sliding window.
  ASSIGN_OR_RETURN(int64_t window, json_int(j, "sliding_window", 0));
  if (window > 0 && window < c.max_ctx)
    for (LayerConfig& l : c.layers) {
      l.sliding = true;
      l.window = static_cast<int32_t>(window);
    }
  return c;
}

TensorSchema llama_schema(const ModelConfig& c) { return decoder_schema(c); }

std::string llama_hf_name(const std::string& hf) { return hf_decoder_tensor_name(hf, false); }
std::string llama_hf_name_of(const std::string& canonical) {
  return hf_decoder_name_of(canonical, false);
}

}  // namespace

ModelConfig llama_config_from_llama2c(const Llama2cFile::Header& h) {
  ModelConfig c;
  c.arch = "llama";
  c.n_vocab = h.vocab_size;
  c.n_embd = h.dim;
  c.n_layer = h.n_layers;
  c.n_head = h.n_heads;
  c.n_head_kv = h.n_kv_heads;
  c.head_dim = h.n_heads > 0 ? h.dim / h.n_heads : 0;
  c.n_ff = h.hidden_dim;
  c.max_ctx = h.seq_len;
  c.norm_eps = 1e-5f;  // llama2.c's fixed epsilon
  c.rope_style = RopeStyle::kInterleaved;
  c.act = Activation::kSwiGlu;
  c.tied_embeddings = h.shared_classifier;
  LayerConfig l;
  l.rope_theta = 10000.0f;
  l.rotary_dim = c.head_dim;
  c.layers.assign(static_cast<size_t>(std::max(0, c.n_layer)), l);
  return c;
}

const ArchFamily& llama_family() {
  static const ArchFamily f = [] {
    ArchFamily a;
    a.name = "llama";
    a.gguf_archs = {"llama"};
    a.hf_model_types = {"llama", "mistral"};
    a.from_gguf = llama_from_gguf;
    a.from_hf = llama_from_hf;
    a.schema = llama_schema;
    a.hf_tensor_name = llama_hf_name;
    a.variants = {{.arch = "llama", .hf_class = "LlamaForCausalLM", .hf_model_type = "llama"}};
    a.hf_name_of = llama_hf_name_of;
    a.gguf_rope_style = RopeStyle::kInterleaved;
    a.gguf_rope_freqs = true;
    return a;
  }();
  return f;
}

}  // namespace edge
