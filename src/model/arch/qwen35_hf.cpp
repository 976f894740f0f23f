#include "model/arch/qwen35_hf.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <regex>

#include "model/arch/common.h"
#include "model/tensor_schema.h"
#include "quant/gguf_blocks.h"

namespace edge::qwen35_hf {

namespace {

// The text model's names as a causal LM has them: the multimodal wrappers nest it under
// model.language_model. (or language_model.model.).
std::string text_name(const std::string& hf) {
  for (const char* p : {"model.language_model.", "language_model.model."})
    if (hf.rfind(p, 0) == 0) return "model." + hf.substr(std::string(p).size());
  return hf;
}

// HF layer part -> canonical part, both directions, for the tensors that are only renamed.
constexpr std::pair<const char*, const char*> kRenamed[] = {
    {"linear_attn.norm.weight", "ssm_norm.weight"},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"mlp.experts.down_proj", "ffn_down_exps.weight"},  // [E, n_embd, F], GGUF's stack
};

// HF layer part -> canonical part of the tensors whose value heads a writer reorders.
constexpr std::pair<const char*, const char*> kPerValueHead[] = {
    {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
    {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
    {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
    {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
    {"linear_attn.out_proj.weight", "ssm_out.weight"},
    {"linear_attn.dt_bias", "ssm_dt.bias"},
};

const std::regex& layer_re() {
  static const std::regex re(R"(model\.layers\.(\d+)\.(.+))");
  return re;
}

// HF layer part -> the canonical part derive builds from it.
constexpr std::pair<const char*, const char*> kDerivedFrom[] = {
    {"linear_attn.A_log", "ssm_a"},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
    {"mlp.experts.gate_up_proj", "ffn_gate_exps.weight"},  // and ffn_up_exps
};

Expected<const TensorView*> float_tensor(const TensorView& t, std::vector<size_t> ranks) {
  const bool is_float = t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16;
  bool rank_ok = false;
  for (size_t r : ranks) rank_ok |= t.shape.size() == r;
  if (!is_float || !rank_ok)
    return Status::invalid_format(
        fmt::format("qwen3.5 checkpoint: '{}' {} {}: expected a float tensor of rank {}", t.name,
                    t.shape_string(), dtype_name(t.dtype), fmt::join(ranks, " or ")));
  RETURN_IF_ERROR(check_tensor_bytes(t));
  return &t;
}

// `src` as an F32 tensor `name` of `shape` (the element count checked), each value mapped.
template <typename F>
Status as_f32(const TensorView& src, const std::string& name, std::vector<int64_t> shape, F map,
              PreparedTensors* out) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != src.numel())
    return Status::invalid_format(fmt::format("qwen3.5 checkpoint: '{}' {} does not hold {} [{}]",
                                              src.name, src.shape_string(), name,
                                              fmt::join(shape, ", ")));
  ASSIGN_OR_RETURN(auto buf, AnonymousBuffer::allocate(static_cast<uint64_t>(n) * 4));
  float* dst = reinterpret_cast<float*>(buf->data());
  for (int64_t i = 0; i < n; ++i) dst[i] = map(float_element(src, i));
  TensorView v;
  v.name = name;
  v.dtype = DType::F32;
  v.shape = std::move(shape);
  return add_owned_tensor(out, std::move(buf), std::move(v), false);
}

// gate_up_proj [E, 2F, D] -> ffn_gate_exps and ffn_up_exps [E, F, D] in its own type.
Status split_gate_up(const TensorView& src, int32_t l, PreparedTensors* out) {
  const int64_t E = src.shape[0], F2 = src.shape[1], D = src.shape[2];
  if (F2 % 2 != 0)
    return Status::invalid_format("qwen3.5 checkpoint: '" + src.name + "' " + src.shape_string() +
                                  ": gate and up rows must pair up");
  const int64_t F = F2 / 2, row = D * (src.dtype == DType::F32 ? 4 : 2);
  for (int half = 0; half < 2; ++half) {
    ASSIGN_OR_RETURN(auto buf, AnonymousBuffer::allocate(static_cast<uint64_t>(E * F * row)));
    for (int64_t e = 0; e < E; ++e)
      std::memcpy(buf->data() + e * F * row, src.data + (e * F2 + half * F) * row,
                  static_cast<size_t>(F * row));
    TensorView v;
    v.name = layer_name(l, half == 0 ? "ffn_gate_exps" : "ffn_up_exps");
    v.dtype = src.dtype;
    v.shape = {E, F, D};
    RETURN_IF_ERROR(add_owned_tensor(out, std::move(buf), std::move(v), false));
  }
  drop_source_pages(src.data, src.nbytes);
  return Status();
}

Status derive_one(const TensorView& t, int32_t l, const std::string& part, PreparedTensors* out) {
  if (part == "linear_attn.A_log") {
    ASSIGN_OR_RETURN(const TensorView* a, float_tensor(t, {1}));
    return as_f32(
        *a, ssm_a_name(l), a->shape, [](float x) { return -std::exp(x); }, out);
  }
  if (part == "linear_attn.conv1d.weight") {  // [C, 1, K] -> [C, K]
    ASSIGN_OR_RETURN(const TensorView* w, float_tensor(t, {2, 3}));
    if (w->shape.size() == 3 && w->shape[1] != 1)
      return Status::invalid_format("qwen3.5 checkpoint: '" + t.name + "' " + t.shape_string() +
                                    ": expected a depthwise [channels, 1, kernel] convolution");
    return as_f32(
        *w, layer_name(l, "ssm_conv1d"), {w->shape.front(), w->shape.back()},
        [](float x) { return x; }, out);
  }
  if (part == "mlp.shared_expert_gate.weight") {  // [1, n_embd] -> [n_embd]
    ASSIGN_OR_RETURN(const TensorView* g, float_tensor(t, {1, 2}));
    return as_f32(
        *g, layer_name(l, "ffn_gate_inp_shexp"), {g->shape.back()}, [](float x) { return x; }, out);
  }
  ASSIGN_OR_RETURN(const TensorView* gu, float_tensor(t, {3}));  // mlp.experts.gate_up_proj
  return split_gate_up(*gu, l, out);
}

}  // namespace

std::string tensor_name(const std::string& hf_in) {
  const std::string hf = text_name(hf_in);
  if (is_derived(hf)) return "";
  std::smatch m;
  if (std::regex_match(hf, m, layer_re())) {
    const std::string blk = "blk." + std::string(m[1]) + ".", part = m[2];
    for (const auto& [from, to] : kRenamed)
      if (part == from) return blk + to;
    for (const auto& [from, to] : kPerValueHead)
      if (part == from) return blk + to;
  }
  std::string moe = hf_moe_tensor_name(hf);  // mlp.gate, mlp.experts.E.*_proj
  if (!moe.empty()) return moe;
  // post_attention_layernorm is the FFN's pre-norm, which GGUF names post_attention_norm.
  return hf_decoder_tensor_name(hf, /*gemma_norms=*/true);
}

bool is_derived(const std::string& hf_in) {
  const std::string hf = text_name(hf_in);
  std::smatch m;
  if (!std::regex_match(hf, m, layer_re())) return false;
  for (const auto& [from, to] : kDerivedFrom)
    if (m[2] == from) return true;
  return false;
}

Status derive(const ModelConfig& c, const TensorSet& hf, int /*threads*/, PreparedTensors* out) {
  for (const TensorView& t : hf.all()) {
    const std::string name = text_name(t.name);
    std::smatch m;
    if (!is_derived(name) || !std::regex_match(name, m, layer_re())) continue;
    const int32_t l = std::stoi(m[1]);
    if (l >= c.n_layer) continue;  // a layer the config does not run
    RETURN_IF_ERROR(derive_one(t, l, m[2], out));
  }
  return Status();
}

namespace {

// transformers 5 keeps RoPE in rope_parameters {rope_theta, partial_rotary_factor,
// mrope_section, mrope_interleaved}; older configs put the first two at the top and the
// sections in rope_scaling. Moves them where hf_common_hparams reads them; the sections go
// to `sections` (text tokens take the same position in t, h and w).
Status flatten_rope(nlohmann::json* j, std::vector<int64_t>* sections) {
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) continue;
    if (!it->is_object())
      return Status::invalid_format(fmt::format("config.json: '{}' must be an object", key));
    nlohmann::json r = *it;
    for (const char* k : {"rope_theta", "partial_rotary_factor"})
      if (r.contains(k)) (*j)[k] = r[k];
    if (auto s = r.find("mrope_section"); s != r.end()) {
      if (!s->is_array() || s->size() > 4)
        return Status::invalid_format(
            "config.json: 'mrope_section' must be a list of up to 4 integers");
      for (const auto& v : *s) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0)
          return Status::invalid_format("config.json: 'mrope_section' must hold sizes");
        sections->push_back(v.get<int64_t>());
      }
    }
    const std::string type = r.value("rope_type", r.value("type", std::string("default")));
    if (type != "default" && type != "mrope")
      return Status::unsupported(
          fmt::format("config.json: Qwen3.5 with {} rope type '{}'", key, type));
    j->erase(key);
  }
  return Status();
}

Status linear_attention(const nlohmann::json& j, ModelConfig* c) {
  ASSIGN_OR_RETURN(int64_t kh, json_int(j, "linear_num_key_heads", 16));
  ASSIGN_OR_RETURN(int64_t vh, json_int(j, "linear_num_value_heads", 32));
  ASSIGN_OR_RETURN(int64_t dk, json_int(j, "linear_key_head_dim", 128));
  ASSIGN_OR_RETURN(int64_t dv, json_int(j, "linear_value_head_dim", 128));
  ASSIGN_OR_RETURN(int64_t conv, json_int(j, "linear_conv_kernel_dim", 4));
  for (int64_t v : {kh, vh, dk, dv, conv})
    if (v <= 0 || v > (int64_t{1} << 16))
      return Status::invalid_format("config.json: linear_* sizes must be positive");
  if (vh % kh != 0)
    return Status::invalid_format(
        fmt::format("config.json: linear_num_value_heads {} is not a multiple of "
                    "linear_num_key_heads {}",
                    vh, kh));
  if (dk != dv)
    return Status::unsupported(
        fmt::format("config.json: linear key head dim {} != value head dim {}", dk, dv));
  DeltaNetShape& s = c->linear;
  s.n_k_heads = static_cast<int32_t>(kh);
  s.n_v_heads = static_cast<int32_t>(vh);
  s.d_k = s.d_v = static_cast<int32_t>(dk);
  s.conv_kernel = static_cast<int32_t>(conv);
  s.head_map = DeltaNetHeadMap::kGrouped;  // HF's repeat_interleave of the key heads
  if (auto it = j.find("layer_types"); it != j.end() && !it->is_null()) {
    if (!it->is_array() || it->size() != static_cast<size_t>(c->n_layer))
      return Status::invalid_format(
          fmt::format("config.json: 'layer_types' must list {} layers", c->n_layer));
    for (int32_t l = 0; l < c->n_layer; ++l) {
      const nlohmann::json& t = (*it)[static_cast<size_t>(l)];
      if (t != "linear_attention" && t != "full_attention")
        return Status::invalid_format(
            fmt::format("config.json: layer_types[{}] = {}", l, t.dump()));
      c->layers[static_cast<size_t>(l)].recurrent = t == "linear_attention";
    }
    return Status();
  }
  ASSIGN_OR_RETURN(int64_t interval, json_int(j, "full_attention_interval", 4));
  if (interval <= 0)
    return Status::invalid_format("config.json: 'full_attention_interval' must be positive");
  for (int32_t l = 0; l < c->n_layer; ++l)
    c->layers[static_cast<size_t>(l)].recurrent = (l + 1) % interval != 0;
  return Status();
}

}  // namespace

Status read_config(const nlohmann::json& in, ModelConfig* c, std::vector<int64_t>* mrope_sections) {
  try {
    nlohmann::json j = in;
    RETURN_IF_ERROR(flatten_rope(&j, mrope_sections));
    RETURN_IF_ERROR(hf_common_hparams(j, /*tied_default=*/false, c));
    ASSIGN_OR_RETURN(bool gated, json_bool(j, "attn_output_gate", true));
    if (!gated) return Status::unsupported("config.json: Qwen3.5 without attn_output_gate");
    return linear_attention(j, c);
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_format(std::string("config.json: ") + e.what());
  }
}

void config_extras(const ModelConfig& c, nlohmann::json* j) {
  const DeltaNetShape& s = c.linear;
  nlohmann::json& o = *j;
  o["linear_num_key_heads"] = s.n_k_heads;
  o["linear_num_value_heads"] = s.n_v_heads;
  o["linear_key_head_dim"] = s.d_k;
  o["linear_value_head_dim"] = s.d_v;
  o["linear_conv_kernel_dim"] = s.conv_kernel;
  o["attn_output_gate"] = true;
  nlohmann::json types = nlohmann::json::array();
  for (const LayerConfig& l : c.layers)
    types.push_back(l.recurrent ? "linear_attention" : "full_attention");
  o["layer_types"] = types;
  const int32_t pairs = c.layers[0].rotary_dim / 2;
  o.erase("rope_theta");
  o["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", c.layers[0].rope_theta},
                          {"partial_rotary_factor", double(c.layers[0].rotary_dim) / c.head_dim},
                          {"mrope_section", {(pairs + 2) / 3, (pairs + 1) / 3, pairs / 3}},
                          {"mrope_interleaved", true}};
  if (c.moe.n_expert > 0) {
    hf_moe_config(c, j);
    o["shared_expert_intermediate_size"] = c.moe.n_ff_shared;
  }
}

std::string name_of(const std::string& canonical) {
  static const std::regex re(R"(blk\.(\d+)\.(.+))");
  std::smatch m;
  if (std::regex_match(canonical, m, re)) {
    const std::string layer = "model.layers." + std::string(m[1]) + ".";
    for (const auto& [from, to] : kRenamed)
      if (m[2] == to) return layer + from;
    for (const auto& [from, to] : kPerValueHead)
      if (m[2] == to) return layer + from;
    for (const auto& [from, to] : kDerivedFrom)
      if (m[2] == to) return layer + from;
  }
  std::string moe = hf_moe_name_of(canonical);
  return moe.empty() ? hf_decoder_name_of(canonical, /*gemma_norms=*/true) : moe;
}

namespace {

// Writers: GGUF's tiled value heads (head j K + kh reads key head kh) in HF's grouped order
// (head kh r + j): the HF head `h` holds GGUF head tiled_of(h).
int64_t tiled_of(const DeltaNetShape& s, int64_t h) {
  if (s.head_map == DeltaNetHeadMap::kGrouped) return h;
  const int64_t r = s.n_v_heads / s.n_k_heads;
  return (h % r) * s.n_k_heads + h / r;
}

// Rows [first, first + V block) of a [rows, cols] matrix, in blocks of `block` rows per value
// head, put in HF order.
void reorder_rows(const DeltaNetShape& s, int64_t first, int64_t block, int64_t cols,
                  std::vector<float>* v) {
  const std::vector<float> src = *v;
  const int64_t run = block * cols;
  for (int64_t h = 0; h < s.n_v_heads; ++h)
    std::copy_n(src.begin() + first * cols + tiled_of(s, h) * run, run,
                v->begin() + first * cols + h * run);
}

// The columns of a [rows, V block] matrix likewise.
void reorder_cols(const DeltaNetShape& s, int64_t rows, int64_t block, std::vector<float>* v) {
  const std::vector<float> src = *v;
  const int64_t cols = s.n_v_heads * block;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < s.n_v_heads; ++h)
      std::copy_n(src.begin() + r * cols + tiled_of(s, h) * block, block,
                  v->begin() + r * cols + h * block);
}

}  // namespace

bool write_tensor(const ModelConfig& c, const std::string& name, const std::vector<int64_t>& shape,
                  std::vector<float> v, const HfValuesOf& values_of, std::vector<HfTensor>* out) {
  static const std::regex re(R"(blk\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return false;
  const std::string layer = "model.layers." + std::string(m[1]) + ".", part = m[2];
  const DeltaNetShape& s = c.linear;
  const int64_t dv = s.d_v, qk_rows = 2 * int64_t{s.n_k_heads} * s.d_k;
  auto put = [&](const std::string& hf, std::vector<int64_t> shp) {
    out->push_back({layer + hf, std::move(shp), std::move(v)});
    return true;
  };
  if (part == "attn_qkv.weight") {  // [C, n_embd]: q and k rows, then the value heads
    reorder_rows(s, qk_rows, dv, shape[1], &v);
  } else if (part == "attn_gate.weight") {
    reorder_rows(s, 0, dv, shape[1], &v);
  } else if (part == "ssm_beta.weight" || part == "ssm_alpha.weight" || part == "ssm_dt.bias") {
    reorder_rows(s, 0, 1, part == "ssm_dt.bias" ? 1 : shape[1], &v);
  } else if (part == "ssm_out.weight") {
    reorder_cols(s, shape[0], dv, &v);
  } else if (part == "ssm_conv1d.weight") {  // [C, K] -> [C, 1, K]
    reorder_rows(s, qk_rows, dv, shape[1], &v);
    return put("linear_attn.conv1d.weight", {shape[0], 1, shape[1]});
  } else if (part == "ssm_a") {
    reorder_rows(s, 0, 1, 1, &v);
    for (float& x : v) x = std::log(-x);
    return put("linear_attn.A_log", shape);
  } else if (part == "ffn_gate_inp_shexp.weight") {
    return put("mlp.shared_expert_gate.weight", {1, shape[0]});
  } else if (part == "ffn_gate_exps.weight") {  // [E, F, D] with up -> [E, 2F, D]
    const std::vector<float> up = values_of("blk." + std::string(m[1]) + ".ffn_up_exps.weight");
    const int64_t E = shape[0], run = shape[1] * shape[2];
    std::vector<float> gu(static_cast<size_t>(2 * E * run));
    for (int64_t e = 0; e < E; ++e) {
      std::copy_n(v.begin() + e * run, run, gu.begin() + 2 * e * run);
      std::copy_n(up.begin() + e * run, run, gu.begin() + (2 * e + 1) * run);
    }
    v = std::move(gu);
    return put("mlp.experts.gate_up_proj", {E, 2 * shape[1], shape[2]});
  } else if (part == "ffn_up_exps.weight") {
    return true;  // written with the gate
  } else if (part == "ffn_down_exps.weight") {
    return put("mlp.experts.down_proj", shape);
  } else {
    return false;
  }
  for (const auto& [from, to] : kPerValueHead)
    if (part == to) return put(from, shape);
  return false;
}

}  // namespace edge::qwen35_hf
