// The Hugging Face directory form of a random model: config.json with HF field names,
// model.safetensors with HF tensor names (Llama q/k rows in rotate-half order, Gemma norms
// as w), tokenizer.json and tokenizer_config.json.
#include <filesystem>

#include "convert/random_model_internal.h"
#include "core/mapped_file.h"
#include "formats/safetensors.h"
#include "model/registry.h"
#include "tokenizer/vocab_io.h"

namespace edge::random_model {

namespace {

// GGUF (interleaved) row order -> HF (rotate-half) row order, per head:
// HF row s*(hd/2)+i holds GGUF row 2i+s.
std::vector<float> to_rotate_half(const std::vector<float>& v, int64_t rows, int64_t cols, int32_t hd) {
  std::vector<float> out(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t h = r / hd, rr = r % hd, s = rr / (hd / 2), i = rr % (hd / 2);
    const int64_t src = h * hd + 2 * i + s;
    std::copy(v.begin() + src * cols, v.begin() + (src + 1) * cols, out.begin() + r * cols);
  }
  return out;
}

const char* torch_dtype(DType t) {
  return t == DType::F32 ? "float32" : t == DType::F16 ? "float16" : "bfloat16";
}

nlohmann::json hf_config(const RandomModelOptions& o, const ArchFamily& fam, const ModelConfig& c) {
  const ArchVariant& v = *fam.variant(c.arch);
  const LayerConfig* global = &c.layers[0];
  for (const LayerConfig& l : c.layers)
    if (!l.sliding) global = &l;
  nlohmann::json j;
  j["architectures"] = {v.hf_class};
  j["model_type"] = v.hf_model_type;
  j["hidden_size"] = c.n_embd;
  j["num_hidden_layers"] = c.n_layer;
  j["num_attention_heads"] = c.n_head;
  j["num_key_value_heads"] = c.n_head_kv;
  j["head_dim"] = c.head_dim;
  j["intermediate_size"] = c.n_ff;
  j["vocab_size"] = c.n_vocab;
  j["rms_norm_eps"] = c.norm_eps;
  j["rope_theta"] = global->rope_theta;
  j["max_position_embeddings"] = c.max_ctx;
  j["tie_word_embeddings"] = c.tied_embeddings;
  j["torch_dtype"] = torch_dtype(o.dtype);
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  j["hidden_act"] = c.act == Activation::kGeGlu ? "gelu_pytorch_tanh" : "silu";
  if (o.llama3_rope_factor > 0)
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", o.llama3_rope_factor},
                         {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  if (fam.hf_config_extras) fam.hf_config_extras(c, &j);
  return j;
}

Status write_json(const std::string& path, const nlohmann::json& j) {
  const std::string text = j.dump(2);
  return write_file(path, text.data(), text.size());
}

}  // namespace

Status write_hf_dir(const RandomModelOptions& o, const ModelConfig& c, const Vocab& vocab,
                    const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::io_error(dir + ": " + ec.message());
  const ArchFamily& fam = *find_family_gguf(c.arch);
  if (fam.hf_model_types.empty() || !fam.hf_name_of)
    return Status::unsupported("make-model: " + c.arch + " has no Hugging Face form here (write .gguf)");
  std::vector<std::vector<uint8_t>> buffers;  // keep the bytes alive until written
  std::vector<TensorView> views;
  const std::vector<Tensor> tensors = make_tensors(o, c);
  const TensorSchema schema = fam.schema(c);
  buffers.reserve(tensors.size() * static_cast<size_t>(std::max(c.moe.n_expert, 1)));
  for (const Tensor& t : tensors) {
    std::vector<float> v = t.generate();
    // The config is in GGUF conventions: interleaved q/k rows become HF's rotate-half ones.
    if (c.rope_style == RopeStyle::kInterleaved &&
        (t.name.find(".attn_q.weight") != std::string::npos ||
         t.name.find(".attn_k.weight") != std::string::npos))
      v = to_rotate_half(v, t.shape[0], t.shape[1], c.head_dim);
    if (fam.hf_norms_plus_one && t.name.find("norm.weight") != std::string::npos)
      for (float& x : v) x -= 1.0f;  // HF Gemma stores w; the model computes x * (1 + w)
    // Stacked experts (GGUF's form) are one tensor per expert in an HF checkpoint.
    const TensorSpec* spec = schema.find(t.name);
    const int64_t parts = spec && spec->experts > 0 ? spec->experts : 1;
    const size_t per = v.size() / static_cast<size_t>(parts);
    for (int64_t e = 0; e < parts; ++e) {
      const std::vector<float> part(v.begin() + static_cast<int64_t>(per) * e,
                                    v.begin() + static_cast<int64_t>(per) * (e + 1));
      buffers.push_back(encode(part, o.dtype));
      const std::string canonical =
          parts > 1 ? expert_tensor_name(t.name, static_cast<int32_t>(e)) : t.name;
      TensorView view;
      view.name = fam.hf_name_of(canonical);
      if (view.name.empty()) return Status::internal("random model: no HF name for " + canonical);
      view.dtype = o.dtype;
      view.shape = parts > 1 ? std::vector<int64_t>(t.shape.begin() + 1, t.shape.end()) : t.shape;
      view.data = buffers.back().data();
      view.nbytes = buffers.back().size();
      views.push_back(std::move(view));
    }
  }
  const std::string base = (std::filesystem::path(dir) / "").string();
  RETURN_IF_ERROR(write_json(base + "config.json", hf_config(o, fam, c)));
  RETURN_IF_ERROR(write_safetensors(base + "model.safetensors", views, {{"format", "pt"}}));
  RETURN_IF_ERROR(write_json(base + "tokenizer.json", vocab_to_tokenizer_json(vocab)));
  nlohmann::json tc;
  tc["add_bos_token"] = vocab.add_bos;
  tc["add_eos_token"] = false;
  if (vocab.bos_id >= 0) tc["bos_token"] = vocab.tokens[vocab.bos_id];
  if (vocab.eos_id >= 0) tc["eos_token"] = vocab.tokens[vocab.eos_id];
  tc["model_max_length"] = c.max_ctx;
  return write_json(base + "tokenizer_config.json", tc);
}

}  // namespace edge::random_model
