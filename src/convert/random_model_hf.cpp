// The Hugging Face directory form of a random model: config.json with HF field names,
// model.safetensors with HF tensor names (Llama q/k rows in rotate-half order, Gemma norms
// as w), tokenizer.json and tokenizer_config.json.
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <regex>

#include "convert/random_model_internal.h"
#include "core/mapped_file.h"
#include "formats/safetensors.h"
#include "tokenizer/vocab_io.h"

namespace edge::random_model {

namespace {

bool gemma_like(const ModelConfig& c) { return c.arch == "gemma3" || c.arch == "spark"; }

std::string hf_name(const std::string& canon, bool gemma) {
  if (canon == "token_embd.weight") return "model.embed_tokens.weight";
  if (canon == "output_norm.weight") return "model.norm.weight";
  if (canon == "output.weight") return "lm_head.weight";
  static const std::regex re(R"(blk\.(\d+)\.(\w+)\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(canon, m, re)) return "";
  static const std::map<std::string, std::string> kMap = {
      {"attn_norm", "input_layernorm"},       {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},         {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"},    {"attn_q_norm", "self_attn.q_norm"},
      {"attn_k_norm", "self_attn.k_norm"},    {"post_attention_norm", "post_attention_layernorm"},
      {"post_ffw_norm", "post_feedforward_layernorm"}, {"ffn_gate", "mlp.gate_proj"},
      {"ffn_up", "mlp.up_proj"},              {"ffn_down", "mlp.down_proj"},
  };
  std::string part = m[2];
  std::string mapped = part == "ffn_norm" ? (gemma ? "pre_feedforward_layernorm" : "post_attention_layernorm")
                                          : kMap.count(part) ? kMap.at(part) : "";
  if (mapped.empty()) return "";
  return fmt::format("model.layers.{}.{}.{}", std::string(m[1]), mapped, std::string(m[3]));
}

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

nlohmann::json hf_config(const RandomModelOptions& o, const ModelConfig& c) {
  static const std::map<std::string, std::pair<const char*, const char*>> kTypes = {
      {"llama", {"LlamaForCausalLM", "llama"}},     {"qwen2", {"Qwen2ForCausalLM", "qwen2"}},
      {"qwen3", {"Qwen3ForCausalLM", "qwen3"}},     {"gemma3", {"Gemma3ForCausalLM", "gemma3_text"}},
      {"spark", {"SparkForCausalLM", "spark"}},
  };
  const LayerConfig* global = &c.layers[0];
  const LayerConfig* local = nullptr;
  for (const LayerConfig& l : c.layers) (l.sliding ? local : global) = &l;
  nlohmann::json j;
  j["architectures"] = {kTypes.at(c.arch).first};
  j["model_type"] = kTypes.at(c.arch).second;
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
  j["hidden_act"] = gemma_like(c) ? "gelu_pytorch_tanh" : "silu";
  if (c.arch == "qwen2") j["use_sliding_window"] = false;
  if (o.llama3_rope_factor > 0)
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", o.llama3_rope_factor},
                         {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  if (gemma_like(c)) {
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["query_pre_attn_scalar"] = 1.0f / (c.attn_scale * c.attn_scale);
    j["sliding_window"] = local ? local->window : 0;
    j["rope_local_base_freq"] = local ? local->rope_theta : 10000.0f;
    j["partial_rotary_factor"] = static_cast<double>(global->rotary_dim) / c.head_dim;
    j["local_partial_rotary_factor"] = local ? static_cast<double>(local->rotary_dim) / c.head_dim : 1.0;
    nlohmann::json types = nlohmann::json::array();
    for (const LayerConfig& l : c.layers) types.push_back(l.sliding ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    j["final_logit_softcapping"] = nullptr;
    j["attn_logit_softcapping"] = nullptr;
  }
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
  const bool gemma = gemma_like(c);
  std::vector<std::vector<uint8_t>> buffers;  // keep the bytes alive until written
  std::vector<TensorView> views;
  const std::vector<Tensor> tensors = make_tensors(o, c);
  buffers.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    std::vector<float> v = t.generate();
    if (c.arch == "llama" && (t.name.find(".attn_q.weight") != std::string::npos ||
                              t.name.find(".attn_k.weight") != std::string::npos))
      v = to_rotate_half(v, t.shape[0], t.shape[1], c.head_dim);
    if (gemma && t.name.find("norm.weight") != std::string::npos)
      for (float& x : v) x -= 1.0f;  // HF Gemma stores w; the model computes x * (1 + w)
    buffers.push_back(encode(v, o.dtype));
    TensorView view;
    view.name = hf_name(t.name, gemma);
    if (view.name.empty()) return Status::internal("random model: no HF name for " + t.name);
    view.dtype = o.dtype;
    view.shape = t.shape;
    view.data = buffers.back().data();
    view.nbytes = buffers.back().size();
    views.push_back(std::move(view));
  }
  const std::string base = (std::filesystem::path(dir) / "").string();
  RETURN_IF_ERROR(write_json(base + "config.json", hf_config(o, c)));
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
