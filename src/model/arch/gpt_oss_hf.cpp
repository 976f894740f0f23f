#include "model/arch/gpt_oss_hf.h"

#include <cstring>
#include <regex>

#include "model/arch/common.h"
#include "model/tensor_schema.h"
#include "quant/gguf_blocks.h"
#include "quant/packed.h"
#include "quant/repack.h"

namespace edge::gpt_oss_hf {

namespace {

std::string expert_key(int32_t l, const char* what) {
  return "model.layers." + std::to_string(l) + ".mlp.experts." + what;
}

int64_t float_bytes(DType t) {
  return t == DType::F32 ? 4 : (t == DType::F16 || t == DType::BF16) ? 2 : 0;
}

// A float tensor of rank 3 (or 2 for biases) whose bytes match its shape.
Expected<const TensorView*> float_tensor(const TensorSet& hf, const std::string& name, size_t rank) {
  const TensorView* t = hf.find(name);
  if (!t) return Status::invalid_format("gpt-oss checkpoint: tensor '" + name + "' is missing");
  if (float_bytes(t->dtype) == 0 || t->shape.size() != rank)
    return Status::invalid_format("gpt-oss checkpoint: '" + name + "' " + t->shape_string() + " " +
                                  dtype_name(t->dtype) + ": expected a float tensor of rank " +
                                  std::to_string(rank));
  for (int64_t d : t->shape)
    if (d <= 0) return Status::invalid_format("gpt-oss checkpoint: '" + name + "' is empty");
  RETURN_IF_ERROR(check_tensor_bytes(*t));
  return t;
}

// src [E, A, B] (stored [in, out]) -> `name` [E, B / step, A] in src's type:
// out[e][j][a] = src[e][a][col0 + step j].
Status transpose_experts(const TensorView& src, int64_t col0, int64_t step, const std::string& name,
                         PreparedTensors* out) {
  const int64_t E = src.shape[0], A = src.shape[1], B = src.shape[2], es = float_bytes(src.dtype);
  if (B % step != 0)
    return Status::invalid_format("gpt-oss checkpoint: '" + src.name + "' " + src.shape_string() +
                                  ": gate and up columns must pair up");
  const int64_t J = B / step;
  ASSIGN_OR_RETURN(auto buf, AnonymousBuffer::allocate(static_cast<uint64_t>(E * J * A * es)));
  uint8_t* dst = buf->data();
  for (int64_t e = 0; e < E; ++e)
    for (int64_t a = 0; a < A; ++a) {
      const uint8_t* row = src.data + ((e * A + a) * B + col0) * es;  // contiguous reads
      for (int64_t j = 0; j < J; ++j)
        std::memcpy(dst + ((e * J + j) * A + a) * es, row + j * step * es, static_cast<size_t>(es));
    }
  TensorView v;
  v.name = name;
  v.dtype = src.dtype;
  v.shape = {E, J, A};
  return add_owned_tensor(out, std::move(buf), std::move(v), false);
}

// src [E, W] -> `name` [E, W / step] F32, columns col0 + step j.
Status split_bias(const TensorView& src, int64_t col0, int64_t step, const std::string& name,
                  PreparedTensors* out) {
  const int64_t E = src.shape[0], W = src.shape[1];
  if (W % step != 0)
    return Status::invalid_format("gpt-oss checkpoint: '" + src.name + "' " + src.shape_string() +
                                  ": gate and up biases must pair up");
  const int64_t J = W / step;
  ASSIGN_OR_RETURN(auto buf, AnonymousBuffer::allocate(static_cast<uint64_t>(E * J) * 4));
  float* dst = reinterpret_cast<float*>(buf->data());
  for (int64_t e = 0; e < E; ++e)
    for (int64_t j = 0; j < J; ++j) dst[e * J + j] = float_element(src, e * W + col0 + step * j);
  TensorView v;
  v.name = name;
  v.dtype = DType::F32;
  v.shape = {E, J};
  return add_owned_tensor(out, std::move(buf), std::move(v), false);
}

// The MXFP4 pair base_blocks / base_scales, rows row0 + step j -> `name` [E, R / step, K] as
// mxfp4_g32 cells.
Status repack_experts(const TensorSet& hf, const std::string& base, int64_t row0, int64_t step,
                      const std::string& name, int threads, PreparedTensors* out) {
  const TensorView* blocks = hf.find(base + "_blocks");
  const TensorView* scales = hf.find(base + "_scales");
  if (!blocks || !scales)
    return Status::invalid_format("gpt-oss checkpoint: MXFP4 experts need both '" + base +
                                  "_blocks' and '" + base + "_scales'");
  if (blocks->shape.size() != 4)
    return Status::invalid_format("gpt-oss checkpoint: '" + blocks->name + "' " +
                                  blocks->shape_string() + ": expected [experts, rows, K / 32, 16]");
  const PackedFormat f{PackedKind::kMxfp4, 32};
  const std::vector<int64_t> shape = {blocks->shape[0], blocks->shape[1] / step,
                                      blocks->shape[2] * 32};
  ASSIGN_OR_RETURN(auto buf, AnonymousBuffer::allocate(static_cast<uint64_t>(packed_tensor_bytes(f, shape))));
  RETURN_IF_ERROR(repack_hf_mxfp4(*blocks, *scales, row0, step, buf->data(), buf->size(), threads));
  TensorView v;
  v.name = name;
  v.dtype = packed_dtype(f);
  v.shape = shape;
  return add_owned_tensor(out, std::move(buf), std::move(v), true);
}

void drop(const TensorSet& hf, const std::string& name) {
  if (const TensorView* t = hf.find(name)) drop_source_pages(t->data, t->nbytes);
}

Status derive_layer(int32_t l, const TensorSet& hf, int threads, PreparedTensors* out) {
  auto stack = [&](const char* what, const char* suffix) {
    return layer_name(l, what, suffix);
  };
  if (hf.find(expert_key(l, "gate_up_proj_blocks")) || hf.find(expert_key(l, "gate_up_proj_scales"))) {
    const std::string gu = expert_key(l, "gate_up_proj"), down = expert_key(l, "down_proj");
    RETURN_IF_ERROR(repack_experts(hf, gu, 0, 2, stack("ffn_gate_exps", "weight"), threads, out));
    RETURN_IF_ERROR(repack_experts(hf, gu, 1, 2, stack("ffn_up_exps", "weight"), threads, out));
    RETURN_IF_ERROR(repack_experts(hf, down, 0, 1, stack("ffn_down_exps", "weight"), threads, out));
    for (const std::string& n : {gu + "_blocks", gu + "_scales", down + "_blocks", down + "_scales"})
      drop(hf, n);
  } else if (hf.find(expert_key(l, "gate_up_proj"))) {
    ASSIGN_OR_RETURN(const TensorView* gu, float_tensor(hf, expert_key(l, "gate_up_proj"), 3));
    ASSIGN_OR_RETURN(const TensorView* down, float_tensor(hf, expert_key(l, "down_proj"), 3));
    RETURN_IF_ERROR(transpose_experts(*gu, 0, 2, stack("ffn_gate_exps", "weight"), out));
    RETURN_IF_ERROR(transpose_experts(*gu, 1, 2, stack("ffn_up_exps", "weight"), out));
    RETURN_IF_ERROR(transpose_experts(*down, 0, 1, stack("ffn_down_exps", "weight"), out));
    drop_source_pages(gu->data, gu->nbytes);
    drop_source_pages(down->data, down->nbytes);
  } else {
    return Status::invalid_format("gpt-oss checkpoint: layer " + std::to_string(l) +
                                  " has no experts ('" + expert_key(l, "gate_up_proj_blocks") +
                                  "' or '" + expert_key(l, "gate_up_proj") + "')");
  }
  ASSIGN_OR_RETURN(const TensorView* gub, float_tensor(hf, expert_key(l, "gate_up_proj_bias"), 2));
  ASSIGN_OR_RETURN(const TensorView* db, float_tensor(hf, expert_key(l, "down_proj_bias"), 2));
  RETURN_IF_ERROR(split_bias(*gub, 0, 2, stack("ffn_gate_exps", "bias"), out));
  RETURN_IF_ERROR(split_bias(*gub, 1, 2, stack("ffn_up_exps", "bias"), out));
  return split_bias(*db, 0, 1, stack("ffn_down_exps", "bias"), out);
}

}  // namespace

std::string tensor_name(const std::string& hf) {
  if (is_expert_tensor(hf)) return "";
  static const std::regex own_re(R"(model\.layers\.(\d+)\.(self_attn\.sinks|mlp\.router\.(weight|bias)))");
  std::smatch m;
  if (std::regex_match(hf, m, own_re)) {
    const std::string blk = "blk." + std::string(m[1]) + ".";
    return m[2] == "self_attn.sinks" ? blk + "attn_sinks.weight" : blk + "ffn_gate_inp." + std::string(m[3]);
  }
  // post_attention_layernorm is the FFN's pre-norm, which GGUF names post_attention_norm.
  return hf_decoder_tensor_name(hf, /*gemma_norms=*/true);
}

std::string name_of(const std::string& canonical) {
  static const std::regex own_re(R"(blk\.(\d+)\.(attn_sinks\.weight|ffn_gate_inp\.(weight|bias)))");
  std::smatch m;
  if (std::regex_match(canonical, m, own_re)) {
    const std::string layer = "model.layers." + std::string(m[1]) + ".";
    return m[2] == "attn_sinks.weight" ? layer + "self_attn.sinks" : layer + "mlp.router." + std::string(m[3]);
  }
  if (canonical.find("_exps.") != std::string::npos) return "";
  return hf_decoder_name_of(canonical, /*gemma_norms=*/true);
}

bool is_expert_tensor(const std::string& hf) {
  return hf.find(".mlp.experts.") != std::string::npos;
}

void config_extras(const ModelConfig& c, nlohmann::json* j) {
  nlohmann::json& o = *j;
  o["intermediate_size"] = c.moe.n_ff_expert;  // GPT-OSS's intermediate_size is the experts'
  o["num_local_experts"] = c.moe.n_expert;
  o["num_experts_per_tok"] = c.moe.n_expert_used;
  o["experts_per_token"] = c.moe.n_expert_used;
  o["attention_bias"] = c.qkv_bias;
  o["swiglu_limit"] = c.swiglu_limit;
  o["hidden_act"] = "silu";
  nlohmann::json types = nlohmann::json::array();
  int32_t window = 128;
  for (const LayerConfig& l : c.layers) {
    types.push_back(l.sliding ? "sliding_attention" : "full_attention");
    if (l.sliding) window = l.window;
  }
  o["layer_types"] = types;
  o["sliding_window"] = window;
  if (c.yarn.factor > 1.0f) {
    o["initial_context_length"] = static_cast<int64_t>(c.yarn.original_ctx);
    o["rope_scaling"] = {{"rope_type", "yarn"},
                         {"factor", c.yarn.factor},
                         {"beta_fast", c.yarn.beta_fast},
                         {"beta_slow", c.yarn.beta_slow},
                         {"original_max_position_embeddings", static_cast<int64_t>(c.yarn.original_ctx)},
                         {"truncate", false}};
  }
}

Status derive_experts(const ModelConfig& c, const TensorSet& hf, int threads, PreparedTensors* out) {
  for (int32_t l = 0; l < c.n_layer; ++l)
    if (c.layers[static_cast<size_t>(l)].moe) RETURN_IF_ERROR(derive_layer(l, hf, threads, out));
  return Status();
}

}  // namespace edge::gpt_oss_hf
