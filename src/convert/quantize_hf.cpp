// HF directory -> pre-packed GGUF: config and tokenizer to GGUF metadata, tensors renamed
// (and Llama q/k rows reordered) into QuantizeInputs that add_quantized_tensors streams.
#include "convert/quantize_hf.h"

#include <cmath>

#include "core/log.h"
#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "model/arch/common.h"
#include "model/gguf_hparams.h"
#include "model/registry.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_io.h"

namespace edge {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The family and config of the directory, as Model::load reads them.
Status read_config(const HfModelDir& h, const ArchFamily** fam, ModelConfig* c) {
  // Multimodal wrappers (Gemma-3 4B+) keep the language model's fields in text_config.
  const nlohmann::json& cfg = h.config.contains("text_config") && h.config["text_config"].is_object()
                                  ? h.config["text_config"]
                                  : h.config;
  try {  // config.json is outside input: a field of the wrong type must not throw out
    const std::string type = cfg.value("model_type", h.config.value("model_type", std::string()));
    if (type.empty()) return Status::invalid_format("config.json: no model_type");
    *fam = find_family_hf(type);
    if (!*fam) return Status::unsupported("unsupported architecture '" + type + "'");
    ASSIGN_OR_RETURN(*c, (*fam)->from_hf(cfg));
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_format(std::string("config.json: ") + e.what());
  }
  return validate_config(*c);
}

// Sliding layers must follow the period the GGUF readers know: layer i global iff
// (i + 1) % P == 0, every sliding layer alike, every global layer alike.
Expected<int32_t> sliding_period(const ModelConfig& c) {
  int32_t period = 0;
  for (int32_t i = 0; i < c.n_layer && period == 0; ++i)
    if (!c.layers[i].sliding) period = i + 1;
  if (period == 0) return Status::unsupported("GGUF: every layer is a sliding-window layer");
  for (int32_t i = 0; i < c.n_layer; ++i) {
    const LayerConfig& l = c.layers[i];
    const LayerConfig& same = c.layers[(i + 1) % period == 0 ? period - 1 : 0];
    if (l.sliding != ((i + 1) % period != 0) || l.window != same.window ||
        l.rope_theta != same.rope_theta || l.rotary_dim != same.rotary_dim ||
        l.rope_scale != same.rope_scale)
      return Status::unsupported("GGUF: the sliding/global layer pattern is not periodic");
  }
  return period;
}

Status write_hparams(const ArchFamily& fam, const ModelConfig& c, const std::string& name,
                     GgufWriter& w) {
  const std::string& a = c.arch;
  const int32_t n_sliding = c.n_sliding_layers();
  if (n_sliding > 0 && !fam.gguf_sliding_pattern)
    return Status::unsupported("GGUF " + a + " has no sliding-window attention (config.json "
                               "sliding_window below the context)");
  int32_t period = 0;
  if (n_sliding > 0) {
    ASSIGN_OR_RETURN(period, sliding_period(c));
  } else {
    for (const LayerConfig& l : c.layers)
      if (l.rope_theta != c.layers[0].rope_theta || l.rotary_dim != c.layers[0].rotary_dim ||
          l.rope_scale != c.layers[0].rope_scale)
        return Status::unsupported("GGUF: per-layer RoPE settings differ");
  }
  const LayerConfig& global = c.layers[period > 0 ? period - 1 : 0];
  write_common_gguf_hparams(c, global, name, w);
  if (global.rope_scale != 1.0f) {
    w.set_string(a + ".rope.scaling.type", "linear");
    w.set_f32(a + ".rope.scaling.factor", global.rope_scale);
  }
  if (fam.gguf_sliding_pattern) {  // the keys gemma3.cpp reads (documented there)
    const LayerConfig& local = c.layers[0];
    if (n_sliding > 0) {
      w.set_u32(a + ".attention.sliding_window", static_cast<uint32_t>(local.window));
      w.set_u32(a + ".edge.sliding_pattern", static_cast<uint32_t>(period));
      w.set_f32(a + ".edge.rope.freq_base_swa", local.rope_theta);
      w.set_u32(a + ".edge.rope.dimension_count_swa", static_cast<uint32_t>(local.rotary_dim));
    }
    if (c.attn_scale > 0)
      w.set_f32(a + ".edge.query_pre_attn_scalar", 1.0f / (c.attn_scale * c.attn_scale));
    w.set_string(a + ".edge.activation", c.act == Activation::kSwiGlu ? "silu" : "gelu_tanh");
  }
  return {};
}

// HF Llama q/k [n_heads * hd, K] rows are rotate-half (pair i = rows i, i + hd/2 of a
// head); GGUF llama's are interleaved (pair i = rows 2i, 2i + 1): GGUF row h*hd + 2i + s
// holds HF row h*hd + s*hd/2 + i.
std::vector<int64_t> interleave_rows(int64_t rows, int32_t hd) {
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t h = r / hd, rr = r % hd, i = rr / 2, s = rr % 2;
    order[r] = h * hd + s * (hd / 2) + i;
  }
  return order;
}

// The tensors to write, renamed; checked against the family's schema first.
Expected<std::vector<QuantizeInput>> hf_inputs(const HfModelDir& h, const ArchFamily& fam,
                                               const ModelConfig& c) {
  // HF rows rotate halves; a family whose GGUF rows pair interleaved gets them reordered.
  const bool reorder =
      fam.gguf_rope_style == RopeStyle::kInterleaved && c.rope_style == RopeStyle::kNeox;
  if (reorder && c.layers[0].rotary_dim != c.head_dim)
    return Status::unsupported("GGUF llama: partial rotary (rotary_dim != head_dim)");
  TensorSet canonical;
  std::vector<QuantizeInput> inputs;
  for (const TensorView& t : h.weights.tensors().all()) {
    const std::string name = fam.hf_tensor_name(t.name);
    if (name.empty()) {
      log_debug("{}: skipping tensor {}", h.dir, t.name);
      continue;
    }
    TensorView v = t;
    v.name = name;
    RETURN_IF_ERROR(canonical.add(v));
    QuantizeInput in{name, t, {}, 0.0f, nullptr};
    const bool q = ends_with(name, ".attn_q.weight"), k = ends_with(name, ".attn_k.weight");
    if (reorder && (q || k) && t.shape.size() == 2)
      in.row_order = interleave_rows(t.shape[0], c.head_dim);
    if (reorder && (ends_with(name, ".attn_q.bias") || ends_with(name, ".attn_k.bias")))
      return Status::unsupported("GGUF llama: q/k biases (" + t.name + ")");
    if (fam.hf_norms_plus_one && hf_norm_takes_one(name)) in.offset = 1.0f;
    inputs.push_back(std::move(in));
  }
  RETURN_IF_ERROR(fam.schema(c).check(canonical));
  return inputs;
}

}  // namespace

Status quantize_hf_dir(const std::string& dir, const std::string& out, const QuantizeOptions& o,
                       QuantizeProgress progress) {
  RETURN_IF_ERROR(requested_format(o).status());  // options checked before the input is read
  ASSIGN_OR_RETURN(HfModelDir h, HfModelDir::open(dir));
  const ArchFamily* fam = nullptr;
  ModelConfig c;
  RETURN_IF_ERROR(read_config(h, &fam, &c).with_context(dir));
  // Tensors rebuilt at load (GPT-OSS's fused experts, Qwen3.5's A_log and grouped value
  // heads) have no GGUF form written from here yet.
  if (fam->hf_derive)
    return Status::unsupported(dir + ": quantizing a " + c.arch +
                               " Hugging Face checkpoint is not supported; load the directory "
                               "directly, or quantize its GGUF conversion");
  GgufWriter w;
  RETURN_IF_ERROR(write_hparams(*fam, c, "edge-quantize", w).with_context(dir));
  w.set_u32("general.alignment", static_cast<uint32_t>(kPackedFileAlignment));
  ASSIGN_OR_RETURN(std::vector<QuantizeInput> inputs, hf_inputs(h, *fam, c));
  if (!c.rope_freq_factors.empty()) {  // llama.cpp's form of Llama-3.1 RoPE scaling
    const std::vector<float>& f = c.rope_freq_factors;  // lives until w.write below
    inputs.push_back({"rope_freqs.weight",
                      TensorView{"rope_freqs.weight", DType::F32, {static_cast<int64_t>(f.size())},
                                 reinterpret_cast<const uint8_t*>(f.data()), f.size() * 4},
                      {}, 0.0f, nullptr});
  }
  if (!h.tokenizer_json_path.empty()) {
    auto tok = Tokenizer::from_tokenizer_json(h.tokenizer_json_path, h.tokenizer_config_path);
    if (!tok) return tok.status().with_context(h.tokenizer_json_path);
    RETURN_IF_ERROR(write_vocab_gguf(tok->vocab(), w));
  } else {
    log_warn("{}: no tokenizer.json; the GGUF file will have no tokenizer", dir);
  }
  RETURN_IF_ERROR(add_quantized_tensors(w, std::move(inputs), o, std::move(progress)).with_context(dir));
  return w.write(out, kPackedFileAlignment);  // names `out` in its errors
}

}  // namespace edge
