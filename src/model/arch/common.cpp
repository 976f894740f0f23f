// The decoder families' shared readers: llama.cpp GGUF keys, HF config.json fields, the HF
// <-> canonical tensor names and Llama-3.1 RoPE factors.
#include "model/arch/common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <regex>

#include "core/half.h"

namespace edge {

namespace {

// <arch>.<key> as an int; required keys report the full key name when missing.
Expected<int64_t> gguf_req_int(const GgufFile& f, const std::string& arch, const char* key) {
  auto v = f.get_int(arch + "." + key);
  if (!v) return v.status().with_context(f.path());
  return v;
}

Status positive_i32(int64_t v, const char* what, int32_t* out) {
  if (v <= 0 || v > (int64_t{1} << 30))
    return Status::invalid_format(fmt::format("{} = {} is out of range", what, v));
  *out = static_cast<int32_t>(v);
  return Status();
}

}  // namespace

Status gguf_common_hparams(const GgufFile& f, const std::string& arch, ModelConfig* c) {
  ASSIGN_OR_RETURN(int64_t embd, gguf_req_int(f, arch, "embedding_length"));
  ASSIGN_OR_RETURN(int64_t layers, gguf_req_int(f, arch, "block_count"));
  ASSIGN_OR_RETURN(int64_t ff, gguf_req_int(f, arch, "feed_forward_length"));
  ASSIGN_OR_RETURN(int64_t heads, gguf_req_int(f, arch, "attention.head_count"));
  RETURN_IF_ERROR(positive_i32(embd, "embedding_length", &c->n_embd));
  RETURN_IF_ERROR(positive_i32(layers, "block_count", &c->n_layer));
  RETURN_IF_ERROR(positive_i32(ff, "feed_forward_length", &c->n_ff));
  RETURN_IF_ERROR(positive_i32(heads, "attention.head_count", &c->n_head));
  RETURN_IF_ERROR(positive_i32(f.get_int_or(arch + ".attention.head_count_kv", heads),
                               "attention.head_count_kv", &c->n_head_kv));
  RETURN_IF_ERROR(positive_i32(f.get_int_or(arch + ".attention.key_length", embd / heads),
                               "attention.key_length", &c->head_dim));
  c->max_ctx = f.get_int_or(arch + ".context_length", 2048);
  c->norm_eps = static_cast<float>(f.get_float_or(arch + ".attention.layer_norm_rms_epsilon", 1e-5));
  c->pooling_type = static_cast<int32_t>(f.get_int_or(arch + ".pooling_type", -1));

  int64_t vocab = f.get_int_or(arch + ".vocab_size", 0);
  if (vocab <= 0) {
    if (const TensorView* t = f.tensors().find("token_embd.weight"); t && t->shape.size() == 2)
      vocab = t->shape[0];
    else if (const GgufValue* v = f.find("tokenizer.ggml.tokens"))
      vocab = static_cast<int64_t>(v->array_size());
  }
  RETURN_IF_ERROR(positive_i32(vocab, "vocab size", &c->n_vocab));

  LayerConfig l;
  l.rope_theta = static_cast<float>(f.get_float_or(arch + ".rope.freq_base", 10000.0));
  l.rotary_dim = static_cast<int32_t>(f.get_int_or(arch + ".rope.dimension_count", c->head_dim));
  const std::string scaling = f.get_string_or(arch + ".rope.scaling.type", "none");
  const double factor = f.get_float_or(arch + ".rope.scaling.factor", 1.0);
  if (scaling == "linear" && factor > 0) l.rope_scale = static_cast<float>(factor);
  c->layers.assign(static_cast<size_t>(c->n_layer), l);
  return Status();
}

Expected<int64_t> json_int(const nlohmann::json& j, const char* key, int64_t def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_number_integer())
    return Status::invalid_format(fmt::format("config.json: '{}' must be an integer", key));
  return it->get<int64_t>();
}

Expected<double> json_float(const nlohmann::json& j, const char* key, double def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_number())
    return Status::invalid_format(fmt::format("config.json: '{}' must be a number", key));
  return it->get<double>();
}

Expected<bool> json_bool(const nlohmann::json& j, const char* key, bool def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_boolean())
    return Status::invalid_format(fmt::format("config.json: '{}' must be true or false", key));
  return it->get<bool>();
}

Expected<int64_t> json_required_int(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return Status::not_found(fmt::format("config.json: missing '{}'", key));
  return json_int(j, key, 0);
}

// rope_scaling: {"type"|"rope_type": "linear", "factor"} or the Llama-3.1 "llama3" form.
static Status hf_rope_scaling(const nlohmann::json& j, ModelConfig* c) {
  auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return Status();
  if (!it->is_object()) return Status::invalid_format("config.json: 'rope_scaling' must be an object");
  std::string type = it->value("rope_type", it->value("type", std::string("default")));
  ASSIGN_OR_RETURN(double factor, json_float(*it, "factor", 1.0));
  if (type == "linear") {
    for (LayerConfig& l : c->layers) l.rope_scale = static_cast<float>(factor);
  } else if (type == "llama3") {
    ASSIGN_OR_RETURN(double lo, json_float(*it, "low_freq_factor", 1.0));
    ASSIGN_OR_RETURN(double hi, json_float(*it, "high_freq_factor", 4.0));
    ASSIGN_OR_RETURN(double orig, json_float(*it, "original_max_position_embeddings", 8192));
    c->rope_freq_factors = llama3_rope_freq_factors(c->layers[0].rotary_dim, c->layers[0].rope_theta,
                                                    float(factor), float(lo), float(hi), float(orig));
  } else if (type != "default") {
    return Status::unsupported(fmt::format("config.json: rope_scaling type '{}'", type));
  }
  return Status();
}

Status hf_common_hparams(const nlohmann::json& j, bool tied_default, ModelConfig* c) {
  try {
    ASSIGN_OR_RETURN(int64_t embd, json_required_int(j, "hidden_size"));
    ASSIGN_OR_RETURN(int64_t layers, json_required_int(j, "num_hidden_layers"));
    ASSIGN_OR_RETURN(int64_t heads, json_required_int(j, "num_attention_heads"));
    ASSIGN_OR_RETURN(int64_t ff, json_required_int(j, "intermediate_size"));
    ASSIGN_OR_RETURN(int64_t vocab, json_required_int(j, "vocab_size"));
    RETURN_IF_ERROR(positive_i32(embd, "hidden_size", &c->n_embd));
    RETURN_IF_ERROR(positive_i32(layers, "num_hidden_layers", &c->n_layer));
    RETURN_IF_ERROR(positive_i32(heads, "num_attention_heads", &c->n_head));
    RETURN_IF_ERROR(positive_i32(ff, "intermediate_size", &c->n_ff));
    RETURN_IF_ERROR(positive_i32(vocab, "vocab_size", &c->n_vocab));
    ASSIGN_OR_RETURN(int64_t kv, json_int(j, "num_key_value_heads", heads));
    RETURN_IF_ERROR(positive_i32(kv, "num_key_value_heads", &c->n_head_kv));
    ASSIGN_OR_RETURN(int64_t hd, json_int(j, "head_dim", embd / heads));
    RETURN_IF_ERROR(positive_i32(hd, "head_dim", &c->head_dim));
    ASSIGN_OR_RETURN(c->max_ctx, json_int(j, "max_position_embeddings", 2048));
    ASSIGN_OR_RETURN(double eps, json_float(j, "rms_norm_eps", 1e-6));
    c->norm_eps = static_cast<float>(eps);
    ASSIGN_OR_RETURN(c->tied_embeddings, json_bool(j, "tie_word_embeddings", tied_default));
    ASSIGN_OR_RETURN(double theta, json_float(j, "rope_theta", 10000.0));
    ASSIGN_OR_RETURN(double partial, json_float(j, "partial_rotary_factor", 1.0));
    LayerConfig l;
    l.rope_theta = static_cast<float>(theta);
    l.rotary_dim = static_cast<int32_t>(std::lround(c->head_dim * partial)) & ~1;
    c->layers.assign(static_cast<size_t>(c->n_layer), l);
    return hf_rope_scaling(j, c);
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_format(std::string("config.json: ") + e.what());
  }
}

namespace {

// HF layer part -> canonical part of Llama-style decoders, both directions. Not here:
// post_attention_layernorm, a post-norm in Gemma and the FFN pre-norm elsewhere.
constexpr std::pair<const char*, const char*> kHfDecoderParts[] = {
    {"input_layernorm", "attn_norm"},
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"self_attn.q_norm", "attn_q_norm"},
    {"self_attn.k_norm", "attn_k_norm"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
    {"pre_feedforward_layernorm", "ffn_norm"},
    {"post_feedforward_layernorm", "post_ffw_norm"},
};

}  // namespace

std::string hf_decoder_tensor_name(const std::string& hf_in, bool gemma_norms) {
  std::string hf = hf_in;
  // Multimodal wrappers nest the text model: language_model.model.* / model.language_model.*
  for (const char* p : {"language_model.model.", "model.language_model."})
    if (hf.rfind(p, 0) == 0) hf = "model." + hf.substr(std::string(p).size());
  if (hf.rfind("language_model.", 0) == 0) hf = hf.substr(15);
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+)\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(hf, m, layer_re)) return "";
  const std::string part = m[2];
  std::string canon;
  for (const auto& [from, to] : kHfDecoderParts)
    if (part == from) canon = to;
  if (part == "post_attention_layernorm") canon = gemma_norms ? "post_attention_norm" : "ffn_norm";
  if (canon.empty()) return "";
  return "blk." + std::string(m[1]) + "." + canon + "." + std::string(m[3]);
}

std::string hf_decoder_name_of(const std::string& canonical, bool gemma_norms) {
  if (canonical == "token_embd.weight") return "model.embed_tokens.weight";
  if (canonical == "output_norm.weight") return "model.norm.weight";
  if (canonical == "output.weight") return "lm_head.weight";
  static const std::regex layer_re(R"(blk\.(\d+)\.(\w+)\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(canonical, m, layer_re)) return "";
  const std::string part = m[2];
  std::string hf;
  for (const auto& [from, to] : kHfDecoderParts)
    if (part == to) hf = from;
  if (part == "post_attention_norm") hf = "post_attention_layernorm";
  if (part == "ffn_norm")
    hf = gemma_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm";
  if (hf.empty()) return "";
  return "model.layers." + std::string(m[1]) + "." + hf + "." + std::string(m[3]);
}

Status gguf_moe_hparams(const GgufFile& f, const std::string& arch, bool norm_default,
                        int32_t first_moe_layer, ModelConfig* c) {
  MoeConfig& m = c->moe;
  ASSIGN_OR_RETURN(int64_t ne, gguf_req_int(f, arch, "expert_count"));
  ASSIGN_OR_RETURN(int64_t nu, gguf_req_int(f, arch, "expert_used_count"));
  RETURN_IF_ERROR(positive_i32(ne, "expert_count", &m.n_expert));
  RETURN_IF_ERROR(positive_i32(nu, "expert_used_count", &m.n_expert_used));
  RETURN_IF_ERROR(positive_i32(f.get_int_or(arch + ".expert_feed_forward_length", c->n_ff),
                               "expert_feed_forward_length", &m.n_ff_expert));
  const int64_t shared = f.get_int_or(arch + ".expert_shared_feed_forward_length", 0);
  if (shared > 0) RETURN_IF_ERROR(positive_i32(shared, "expert_shared_feed_forward_length", &m.n_ff_shared));
  m.norm_topk = f.get_bool_or(arch + ".expert_weights_norm", norm_default);
  m.weights_scale = static_cast<float>(f.get_float_or(arch + ".expert_weights_scale", 1.0));
  if (m.weights_scale == 0.0f) m.weights_scale = 1.0f;  // llama.cpp writes 0 for "none"
  for (int32_t l = first_moe_layer; l < c->n_layer; ++l) c->layers[static_cast<size_t>(l)].moe = true;
  return Status();
}

Status hf_moe_hparams(const nlohmann::json& j, bool norm_default, ModelConfig* c) {
  MoeConfig& m = c->moe;
  ASSIGN_OR_RETURN(int64_t ne, json_int(j, "num_experts", 0));
  if (ne == 0) {
    ASSIGN_OR_RETURN(ne, json_int(j, "num_local_experts", 0));
  }
  ASSIGN_OR_RETURN(int64_t nu, json_required_int(j, "num_experts_per_tok"));
  ASSIGN_OR_RETURN(int64_t ffe, json_int(j, "moe_intermediate_size", c->n_ff));
  RETURN_IF_ERROR(positive_i32(ne, "num_experts", &m.n_expert));
  RETURN_IF_ERROR(positive_i32(nu, "num_experts_per_tok", &m.n_expert_used));
  RETURN_IF_ERROR(positive_i32(ffe, "moe_intermediate_size", &m.n_ff_expert));
  ASSIGN_OR_RETURN(m.norm_topk, json_bool(j, "norm_topk_prob", norm_default));
  ASSIGN_OR_RETURN(int64_t step, json_int(j, "decoder_sparse_step", 1));
  if (step <= 0) return Status::invalid_format("config.json: 'decoder_sparse_step' must be positive");
  std::vector<int64_t> dense;
  if (auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Status::invalid_format("config.json: 'mlp_only_layers' must be a list");
    for (const auto& v : *it) {
      if (!v.is_number_integer())
        return Status::invalid_format("config.json: 'mlp_only_layers' must hold layer numbers");
      dense.push_back(v.get<int64_t>());
    }
  }
  for (int32_t l = 0; l < c->n_layer; ++l)
    c->layers[static_cast<size_t>(l)].moe =
        (l + 1) % step == 0 && std::find(dense.begin(), dense.end(), l) == dense.end();
  return Status();
}

void hf_moe_config(const ModelConfig& c, nlohmann::json* j) {
  const MoeConfig& m = c.moe;
  (*j)["num_experts"] = m.n_expert;
  (*j)["num_experts_per_tok"] = m.n_expert_used;
  (*j)["moe_intermediate_size"] = m.n_ff_expert;
  (*j)["norm_topk_prob"] = m.norm_topk;
  (*j)["decoder_sparse_step"] = 1;
  nlohmann::json dense = nlohmann::json::array();
  for (int32_t l = 0; l < c.n_layer; ++l)
    if (!c.layers[static_cast<size_t>(l)].moe) dense.push_back(l);
  (*j)["mlp_only_layers"] = dense;
}

std::string hf_moe_tensor_name(const std::string& hf) {
  static const std::regex gate_re(R"(model\.layers\.(\d+)\.mlp\.gate\.weight)");
  static const std::regex expert_re(
      R"(model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight)");
  std::smatch m;
  if (std::regex_match(hf, m, gate_re)) return "blk." + std::string(m[1]) + ".ffn_gate_inp.weight";
  if (std::regex_match(hf, m, expert_re))
    return "blk." + std::string(m[1]) + ".ffn_" + std::string(m[3]) + "." + std::string(m[2]) + ".weight";
  return "";
}

std::string hf_moe_name_of(const std::string& canonical) {
  static const std::regex gate_re(R"(blk\.(\d+)\.ffn_gate_inp\.weight)");
  static const std::regex expert_re(R"(blk\.(\d+)\.ffn_(gate|up|down)\.(\d+)\.weight)");
  std::smatch m;
  if (std::regex_match(canonical, m, gate_re)) return "model.layers." + std::string(m[1]) + ".mlp.gate.weight";
  if (std::regex_match(canonical, m, expert_re))
    return "model.layers." + std::string(m[1]) + ".mlp.experts." + std::string(m[3]) + "." +
           std::string(m[2]) + "_proj.weight";
  return "";
}

bool hf_norm_takes_one(const std::string& name) {
  auto ends = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends("norm.weight") && !ends("ssm_norm.weight");
}

float float_element(const TensorView& t, int64_t i) {
  uint16_t h;
  switch (t.dtype) {
    case DType::F32: {
      float f;
      std::memcpy(&f, t.data + 4 * i, 4);
      return f;
    }
    case DType::F16:
      std::memcpy(&h, t.data + 2 * i, 2);
      return f16_to_f32(h);
    default:  // BF16
      std::memcpy(&h, t.data + 2 * i, 2);
      return bf16_to_f32(h);
  }
}

std::vector<float> llama3_rope_freq_factors(int32_t rotary_dim, float theta, float factor,
                                            float low_freq_factor, float high_freq_factor,
                                            float original_ctx) {
  // Long wavelengths are slowed by `factor`, short ones kept, the band between blended.
  const double low_wavelen = original_ctx / low_freq_factor;
  const double high_wavelen = original_ctx / high_freq_factor;
  std::vector<float> out(static_cast<size_t>(rotary_dim / 2));
  for (int32_t i = 0; i < rotary_dim / 2; ++i) {
    const double freq = std::pow(double(theta), -2.0 * i / rotary_dim);
    const double wavelen = 2 * M_PI / freq;
    double f = 1.0;
    if (wavelen > low_wavelen) {
      f = factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (original_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1 - smooth) / factor + smooth);
    }
    out[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return out;
}

}  // namespace edge
