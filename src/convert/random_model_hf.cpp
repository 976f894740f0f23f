// The Hugging Face directory form of a random model: config.json with HF field names,
// model.safetensors with HF tensor names (Llama q/k rows in rotate-half order, Gemma norms
// as w), tokenizer.json and tokenizer_config.json.
#include <filesystem>

#include "convert/random_model_internal.h"
#include "core/check.h"
#include "core/mapped_file.h"
#include "formats/safetensors.h"
#include "model/arch/common.h"
#include "model/registry.h"
#include "quant/mxfp4.h"
#include "tokenizer/harmony.h"
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

// GPT-OSS's fused HF experts (ArchFamily::hf_fused_experts, model/arch/gpt_oss_hf.h) from the
// canonical stacks of one layer, as HF tensors in `views` (bytes kept in `buffers`).
class FusedExperts {
 public:
  FusedExperts(const RandomModelOptions& o, std::vector<std::vector<uint8_t>>* buffers,
               std::vector<TensorView>* views)
      : o_(o), buffers_(buffers), views_(views) {}

  // gate, up [E, F, D] -> gate_up_proj [E, D, 2F] (columns interleaved) or, MXFP4, the
  // blocks and scales of the [E, 2F, D] rows interleaved.
  void gate_up(const std::string& prefix, const std::vector<float>& gate,
               const std::vector<float>& up, const std::vector<int64_t>& shape) {
    const int64_t E = shape[0], F = shape[1], D = shape[2];
    if (mxfp4()) {
      std::vector<const float*> rows;
      for (int64_t e = 0; e < E; ++e)
        for (int64_t f = 0; f < F; ++f) {
          rows.push_back(gate.data() + (e * F + f) * D);
          rows.push_back(up.data() + (e * F + f) * D);
        }
      return blocks(prefix + "gate_up_proj", rows, E, 2 * F, D);
    }
    std::vector<float> v(static_cast<size_t>(E * D * 2 * F));
    for (int64_t e = 0; e < E; ++e)
      for (int64_t f = 0; f < F; ++f)
        for (int64_t d = 0; d < D; ++d) {
          v[static_cast<size_t>((e * D + d) * 2 * F + 2 * f)] = gate[static_cast<size_t>((e * F + f) * D + d)];
          v[static_cast<size_t>((e * D + d) * 2 * F + 2 * f + 1)] = up[static_cast<size_t>((e * F + f) * D + d)];
        }
    add(prefix + "gate_up_proj", o_.dtype, {E, D, 2 * F}, encode(v, o_.dtype));
  }

  // down [E, D, F] -> down_proj [E, F, D], or MXFP4 blocks and scales of its rows.
  void down(const std::string& prefix, const std::vector<float>& w, const std::vector<int64_t>& shape) {
    const int64_t E = shape[0], D = shape[1], F = shape[2];
    if (mxfp4()) {
      std::vector<const float*> rows;
      for (int64_t r = 0; r < E * D; ++r) rows.push_back(w.data() + r * F);
      return blocks(prefix + "down_proj", rows, E, D, F);
    }
    std::vector<float> v(w.size());
    for (int64_t e = 0; e < E; ++e)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t f = 0; f < F; ++f)
          v[static_cast<size_t>((e * F + f) * D + d)] = w[static_cast<size_t>((e * D + d) * F + f)];
    add(prefix + "down_proj", o_.dtype, {E, F, D}, encode(v, o_.dtype));
  }

  // gate and up biases [E, F] -> gate_up_proj_bias [E, 2F] interleaved.
  void gate_up_bias(const std::string& prefix, const std::vector<float>& gate,
                    const std::vector<float>& up, const std::vector<int64_t>& shape) {
    std::vector<float> v(2 * gate.size());
    for (size_t i = 0; i < gate.size(); ++i) v[2 * i] = gate[i], v[2 * i + 1] = up[i];
    add(prefix + "gate_up_proj_bias", o_.dtype, {shape[0], 2 * shape[1]}, encode(v, o_.dtype));
  }

  void down_bias(const std::string& prefix, const std::vector<float>& b, const std::vector<int64_t>& shape) {
    add(prefix + "down_proj_bias", o_.dtype, shape, encode(b, o_.dtype));
  }

 private:
  bool mxfp4() const { return o_.experts_dtype == DType::MXFP4; }

  // Rows of K floats (E * R of them, expert-major) as HF's MXFP4: GGML's quantiser per block
  // (the bytes a GGUF file of the same weights holds), its codes moved from GGUF's order
  // (element j low, j + 16 high in byte j) to HF's (elements 2i, 2i + 1 in byte i).
  void blocks(const std::string& name, const std::vector<const float*>& rows, int64_t E, int64_t R,
              int64_t K) {
    const int64_t G = K / kMxfp4Block;
    std::vector<uint8_t> bl(static_cast<size_t>(E * R * G * 16)), sc(static_cast<size_t>(E * R * G));
    std::vector<uint8_t> gguf(static_cast<size_t>(G * kMxfp4BlockBytes));
    for (size_t r = 0; r < rows.size(); ++r) {
      CHECK(quantize_mxfp4_row(rows[r], K, gguf.data()).ok());  // K % 32 checked by the caller
      for (int64_t g = 0; g < G; ++g) {
        const uint8_t* b = gguf.data() + g * kMxfp4BlockBytes;
        auto code = [&](int j) { return j < 16 ? b[1 + j] & 15 : b[1 + j - 16] >> 4; };
        sc[r * G + g] = b[0];
        for (int i = 0; i < 16; ++i)
          bl[(r * G + g) * 16 + i] = static_cast<uint8_t>(code(2 * i) | code(2 * i + 1) << 4);
      }
    }
    add(name + "_blocks", DType::U8, {E, R, G, 16}, std::move(bl));
    add(name + "_scales", DType::U8, {E, R, G}, std::move(sc));
  }

  void add(const std::string& name, DType t, std::vector<int64_t> shape, std::vector<uint8_t> bytes) {
    buffers_->push_back(std::move(bytes));
    TensorView v;
    v.name = name;
    v.dtype = t;
    v.shape = std::move(shape);
    v.data = buffers_->back().data();
    v.nbytes = buffers_->back().size();
    views_->push_back(std::move(v));
  }

  const RandomModelOptions& o_;
  std::vector<std::vector<uint8_t>>* buffers_;
  std::vector<TensorView>* views_;
};

// Writes the fused form of a stacked expert tensor `t` (ffn_{gate,up,down}_exps.{weight,bias})
// of a hf_fused_experts family: gate with its layer's up (found in `all`), up skipped.
void write_fused(FusedExperts& fused, const Tensor& t, const std::vector<Tensor>& all) {
  const size_t dot = t.name.find('.', 4);
  const std::string blk = t.name.substr(0, dot + 1), what = t.name.substr(dot + 1);
  const std::string prefix = "model.layers." + t.name.substr(4, dot - 4) + ".mlp.experts.";
  auto values_of = [&](const std::string& name) {
    for (const Tensor& u : all)
      if (u.name == name) return u.generate();
    return std::vector<float>();
  };
  if (what == "ffn_gate_exps.weight")
    fused.gate_up(prefix, t.generate(), values_of(blk + "ffn_up_exps.weight"), t.shape);
  else if (what == "ffn_gate_exps.bias")
    fused.gate_up_bias(prefix, t.generate(), values_of(blk + "ffn_up_exps.bias"), t.shape);
  else if (what == "ffn_down_exps.weight")
    fused.down(prefix, t.generate(), t.shape);
  else if (what == "ffn_down_exps.bias")
    fused.down_bias(prefix, t.generate(), t.shape);
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
  FusedExperts fused(o, &buffers, &views);
  const HfValuesOf values_of = [&](const std::string& name) {
    for (const Tensor& u : tensors)
      if (u.name == name) return u.generate();
    return std::vector<float>();
  };
  auto add_view = [&](std::string name, std::vector<int64_t> shape, std::vector<uint8_t> bytes) {
    buffers.push_back(std::move(bytes));
    TensorView view;
    view.name = std::move(name);
    view.dtype = o.dtype;
    view.shape = std::move(shape);
    view.data = buffers.back().data();
    view.nbytes = buffers.back().size();
    views.push_back(std::move(view));
  };
  for (const Tensor& t : tensors) {
    if (fam.hf_fused_experts && t.name.find("_exps.") != std::string::npos) {
      write_fused(fused, t, tensors);
      continue;
    }
    std::vector<float> v = t.generate();
    std::vector<HfTensor> own;  // a family's own HF form of this tensor (Qwen3.5)
    if (fam.hf_write_tensor && fam.hf_write_tensor(c, t.name, t.shape, v, values_of, &own)) {
      for (HfTensor& h : own) add_view(std::move(h.name), std::move(h.shape), encode(h.values, o.dtype));
      continue;
    }
    // The config is in GGUF conventions: interleaved q/k rows become HF's rotate-half ones.
    if (c.rope_style == RopeStyle::kInterleaved &&
        (t.name.find(".attn_q.weight") != std::string::npos ||
         t.name.find(".attn_k.weight") != std::string::npos))
      v = to_rotate_half(v, t.shape[0], t.shape[1], c.head_dim);
    if (fam.hf_norms_plus_one && hf_norm_takes_one(t.name))
      for (float& x : v) x -= 1.0f;  // HF Gemma stores w; the model computes x * (1 + w)
    // Stacked experts (GGUF's form) are one tensor per expert in an HF checkpoint.
    const TensorSpec* spec = schema.find(t.name);
    const int64_t parts = spec && spec->experts > 0 ? spec->experts : 1;
    const size_t per = v.size() / static_cast<size_t>(parts);
    for (int64_t e = 0; e < parts; ++e) {
      const std::vector<float> part(v.begin() + static_cast<int64_t>(per) * e,
                                    v.begin() + static_cast<int64_t>(per) * (e + 1));
      const std::string canonical =
          parts > 1 ? expert_tensor_name(t.name, static_cast<int32_t>(e)) : t.name;
      std::string name = fam.hf_name_of(canonical);
      if (name.empty()) return Status::internal("random model: no HF name for " + canonical);
      add_view(std::move(name), parts > 1 ? std::vector<int64_t>(t.shape.begin() + 1, t.shape.end()) : t.shape,
               encode(part, o.dtype));
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
  if (c.arch == "gpt-oss") tc["chat_template"] = harmony_chat_template();
  return write_json(base + "tokenizer_config.json", tc);
}

}  // namespace edge::random_model
