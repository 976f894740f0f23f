// Qwen3.5 (dense, Qwen3.5-0.8B .. 27B: "qwen35"; mixture of experts, Qwen3.5-35B-A3B and
// Qwen3.6: "qwen35moe"): a hybrid decoder. Three layers of every four
// (full_attention_interval) are Gated DeltaNet linear attention (model/delta_net_mixer.h):
// no KV cache, a fixed state per sequence. The fourth is softmax attention as in Qwen3
// (per-head q/k RMSNorm, NeoX RoPE on the first quarter of each head) whose q projection
// also yields an output gate: attn_q rows are per head [q (head_dim), gate (head_dim)], and
// the attention output is multiplied by sigmoid(gate) before attn_output. The FFN's
// pre-norm is named post_attention_norm. Text positions of its M-RoPE (t, h, w sections
// interleaved over the rotary pairs) are equal, which is plain RoPE over those pairs.
//
// llama.cpp's GGUF conventions (architecture "qwen35"): ssm.group_count key heads,
// ssm.time_step_rank value heads, ssm.state_size head dims, ssm.inner_size = value heads x
// dims, ssm.conv_kernel; ssm_a holds -exp(A_log); the converter reorders value heads so
// that value head h reads key head h % key heads (DeltaNetHeadMap::kTiled). The file's
// multi-token-prediction layers (nextn_predict_layers, the last ones) are not run: the
// model loads without them.
//
// qwen35moe's FFN is the mixture of experts of Qwen3-MoE (softmax router over all experts,
// top-k renormalised) plus a shared expert of expert_shared_feed_forward_length (default
// feed_forward_length) whose output is scaled by sigmoid(x . ffn_gate_inp_shexp).
//
// Hugging Face checkpoints (Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM and the text half of
// the ...ForConditionalGeneration wrappers) are read by qwen35_hf.h: A_log becomes ssm_a,
// conv1d loses its middle axis, every norm but the gated one takes +1, fused experts are
// split, and the value heads stay grouped (DeltaNetHeadMap::kGrouped).
#include <fmt/format.h>

#include <algorithm>

#include "formats/gguf.h"
#include "model/arch/common.h"
#include "model/arch/family.h"
#include "model/arch/qwen35_hf.h"

namespace edge {

namespace {

// Whether M-RoPE sections interleaved over the rotary pairs (ggml's IMROPE: pair i takes
// section i % 3 while that section lasts, else the 4th) give every pair the token's
// position: then text rotates as plain RoPE. llama.cpp gives text tokens (p, p, p, 0).
bool sections_cover_pairs(const std::vector<int64_t>& s) {
  const int64_t total = s[0] + s[1] + s[2] + s[3];
  for (int64_t i = 0; i < total; ++i) {
    const int64_t k = i % 3;
    if (!(i < 3 * s[static_cast<size_t>(k)])) return false;
  }
  return true;
}

// Sections of a made-up model: as many pairs for t, h, w as the interleaving reaches
// (Qwen3.5: 64 rotary dims, 32 pairs -> 11, 11, 10).
std::vector<int32_t> made_up_sections(int32_t rotary_dim) {
  const int32_t pairs = rotary_dim / 2;
  return {(pairs + 2) / 3, (pairs + 1) / 3, pairs / 3, 0};
}

Status check_sections(const std::string& arch, std::vector<int64_t> sec) {
  sec.resize(4, 0);
  if (sections_cover_pairs(sec)) return Status();
  return Status::unsupported(fmt::format(
      "{}: rope.dimension_sections [{}, {}, {}, {}] leave rotary pairs to the 4th position, "
      "which text does not rotate; only t/h/w sections that cover the pairs are supported",
      arch, sec[0], sec[1], sec[2], sec[3]));
}

Status qwen35_linear(const GgufFile& f, const std::string& arch, ModelConfig* c) {
  auto get = [&](const char* key) -> Expected<int64_t> {
    auto v = f.get_int(arch + "." + key);
    if (!v) return v.status().with_context(f.path());
    if (*v <= 0 || *v > (int64_t{1} << 20))
      return Status::invalid_format(fmt::format("{}.{} = {} is out of range", arch, key, *v));
    return v;
  };
  ASSIGN_OR_RETURN(int64_t k_heads, get("ssm.group_count"));
  ASSIGN_OR_RETURN(int64_t v_heads, get("ssm.time_step_rank"));
  ASSIGN_OR_RETURN(int64_t d_state, get("ssm.state_size"));
  ASSIGN_OR_RETURN(int64_t inner, get("ssm.inner_size"));
  ASSIGN_OR_RETURN(int64_t conv, get("ssm.conv_kernel"));
  if (inner != v_heads * d_state)
    return Status::invalid_format(fmt::format("{}: ssm.inner_size {} is not {} value heads x {}",
                                              arch, inner, v_heads, d_state));
  DeltaNetShape& s = c->linear;
  s.n_k_heads = static_cast<int32_t>(k_heads);
  s.n_v_heads = static_cast<int32_t>(v_heads);
  s.d_k = s.d_v = static_cast<int32_t>(d_state);
  s.conv_kernel = static_cast<int32_t>(conv);
  s.head_map = DeltaNetHeadMap::kTiled;
  const int64_t interval = f.get_int_or(arch + ".full_attention_interval", 4);
  if (interval <= 0 || interval > c->n_layer + 1)
    return Status::invalid_format(fmt::format("{}.full_attention_interval = {}", arch, interval));
  for (int32_t l = 0; l < c->n_layer; ++l)
    c->layers[static_cast<size_t>(l)].recurrent = (l + 1) % interval != 0;
  return Status();
}

// What every Qwen3.5 model has beyond the family traits (a made-up model's too).
void qwen35_facts(ModelConfig* c) {
  c->attn_output_gate = true;
  c->ffn_norm_name = "post_attention_norm";
}

// A made-up model: the facts, key heads = half the value heads, heads of head_dim, and the
// 3-of-4 pattern.
void qwen35_made_up(ModelConfig* c) {
  qwen35_facts(c);
  DeltaNetShape& s = c->linear;
  s.n_v_heads = c->n_head;
  s.n_k_heads = std::max(1, c->n_head / 2);
  if (s.n_v_heads % s.n_k_heads != 0) s.n_k_heads = s.n_v_heads;
  s.d_k = s.d_v = c->head_dim;
  s.conv_kernel = 4;
  s.head_map = DeltaNetHeadMap::kTiled;
  for (int32_t l = 0; l < c->n_layer; ++l) c->layers[static_cast<size_t>(l)].recurrent = (l + 1) % 4 != 0;
}

Expected<ModelConfig> qwen35_from_gguf(const GgufFile& f, const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  RETURN_IF_ERROR(gguf_common_hparams(f, arch, &c));
  const int64_t mtp = f.get_int_or(arch + ".nextn_predict_layers", 0);
  if (mtp < 0 || mtp >= c.n_layer)
    return Status::invalid_format(fmt::format("{}.nextn_predict_layers = {} of {} layers", arch, mtp, c.n_layer));
  c.n_layer -= static_cast<int32_t>(mtp);  // the MTP layers are not part of the forward
  c.layers.resize(static_cast<size_t>(c.n_layer));
  c.rope_style = RopeStyle::kNeox;
  c.qk_norm = true;
  qwen35_facts(&c);
  c.tied_embeddings = f.tensors().find("output.weight") == nullptr;
  if (f.find(arch + ".rope.dimension_sections")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> sec, f.get_int_array(arch + ".rope.dimension_sections"));
    RETURN_IF_ERROR(check_sections(arch, sec));
  }
  RETURN_IF_ERROR(qwen35_linear(f, arch, &c));
  return c;
}

Expected<ModelConfig> qwen35_from_hf(const nlohmann::json& j) {
  ModelConfig c;
  c.arch = "qwen35";
  std::vector<int64_t> sections;
  RETURN_IF_ERROR(qwen35_hf::read_config(j, &c, &sections));
  if (!sections.empty()) RETURN_IF_ERROR(check_sections(c.arch, sections));
  c.rope_style = RopeStyle::kNeox;
  c.qk_norm = true;
  qwen35_facts(&c);
  return c;
}

// The shared expert and its gate of every Qwen3.5 MoE layer.
void qwen35moe_shared(ModelConfig* c) {
  if (c->moe.n_ff_shared == 0) c->moe.n_ff_shared = c->n_ff;
  c->moe.shared_gate = true;
}

Expected<ModelConfig> qwen35moe_from_hf(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(ModelConfig c, qwen35_from_hf(j));
  c.arch = "qwen35moe";
  RETURN_IF_ERROR(hf_moe_hparams(j, /*norm_default=*/true, &c));
  ASSIGN_OR_RETURN(int64_t shared, json_int(j, "shared_expert_intermediate_size", 0));
  if (shared < 0) return Status::invalid_format("config.json: 'shared_expert_intermediate_size' is negative");
  c.moe.n_ff_shared = static_cast<int32_t>(shared);
  c.moe.gating = ExpertGating::kSoftmax;
  qwen35moe_shared(&c);
  return c;
}

Expected<ModelConfig> qwen35moe_from_gguf(const GgufFile& f, const std::string& arch) {
  ASSIGN_OR_RETURN(ModelConfig c, qwen35_from_gguf(f, arch));
  RETURN_IF_ERROR(gguf_moe_hparams(f, arch, /*norm_default=*/true, /*first_moe_layer=*/0, &c));
  c.moe.gating = ExpertGating::kSoftmax;
  qwen35moe_shared(&c);
  return c;
}

// A made-up MoE model: the dense facts, and a shared expert as wide as one routed expert.
void qwen35moe_made_up(ModelConfig* c) {
  qwen35_made_up(c);
  c->moe.n_ff_shared = c->moe.n_ff_expert;
  qwen35moe_shared(c);
}

TensorSchema qwen35_schema(const ModelConfig& c) {
  TensorSchema s = decoder_schema(c);
  for (int l = 0; l < c.n_layer; ++l) {
    if (c.layers[static_cast<size_t>(l)].recurrent) continue;
    s.require(layer_name(l, "attn_q_norm"), {c.head_dim});  // [head_dim]
    s.require(layer_name(l, "attn_k_norm"), {c.head_dim});  // [head_dim]
  }
  return s;
}

void qwen35_gguf_extras(const ModelConfig& c, GgufWriter* w) {
  const std::string& a = c.arch;
  const DeltaNetShape& s = c.linear;
  w->set_u32(a + ".ssm.group_count", static_cast<uint32_t>(s.n_k_heads));
  w->set_u32(a + ".ssm.time_step_rank", static_cast<uint32_t>(s.n_v_heads));
  w->set_u32(a + ".ssm.state_size", static_cast<uint32_t>(s.d_k));
  w->set_u32(a + ".ssm.inner_size", static_cast<uint32_t>(s.value_dim()));
  w->set_u32(a + ".ssm.conv_kernel", static_cast<uint32_t>(s.conv_kernel));
  int32_t interval = 0;  // the first full-attention layer's index + 1
  for (int32_t l = 0; l < c.n_layer && interval == 0; ++l)
    if (!c.layers[static_cast<size_t>(l)].recurrent) interval = l + 1;
  w->set_u32(a + ".full_attention_interval", static_cast<uint32_t>(interval > 0 ? interval : c.n_layer + 1));
  // Qwen3-Next (its fused projections mark it) rotates text by plain RoPE: no sections.
  if (!c.linear_fused_qkvz)
    w->set_i32_array(a + ".rope.dimension_sections", made_up_sections(c.layers[0].rotary_dim));
}

}  // namespace

const ArchFamily& qwen35moe_family() {
  static const ArchFamily f = [] {
    ArchFamily a = qwen35_family();
    a.name = "qwen35moe";
    a.gguf_archs = {"qwen35moe"};
    a.hf_model_types = {"qwen3_5_moe_text", "qwen3_5_moe"};
    a.from_gguf = qwen35moe_from_gguf;
    a.from_hf = qwen35moe_from_hf;
    a.made_up = qwen35moe_made_up;
    a.variants = {{.arch = "qwen35moe",
                   .hf_class = "Qwen3_5MoeForCausalLM",
                   .hf_model_type = "qwen3_5_moe_text",
                   .norm_eps = 1e-6f,
                   .rope_theta = 1e7f,
                   .rotary_divisor = 4}};
    a.moe.n_expert = 8;  // a made-up model's defaults (35B-A3B: 256 experts, 8 used)
    a.moe.n_expert_used = 2;
    a.moe.gating = ExpertGating::kSoftmax;
    a.moe.norm_topk = true;
    return a;
  }();
  return f;
}

const ArchFamily& qwen35_family() {
  static const ArchFamily f = [] {
    ArchFamily a;
    a.name = "qwen35";
    a.gguf_archs = {"qwen35"};
    a.hf_model_types = {"qwen3_5_text", "qwen3_5"};
    a.from_gguf = qwen35_from_gguf;
    a.from_hf = qwen35_from_hf;
    a.schema = qwen35_schema;
    a.hf_tensor_name = qwen35_hf::tensor_name;
    a.hf_derive = qwen35_hf::derive;
    a.hf_derives = qwen35_hf::is_derived;
    a.hf_norms_plus_one = true;
    a.hf_name_of = qwen35_hf::name_of;
    a.hf_config_extras = qwen35_hf::config_extras;
    a.hf_write_tensor = qwen35_hf::write_tensor;
    a.gguf_extras = qwen35_gguf_extras;
    a.made_up = qwen35_made_up;
    a.variants = {{.arch = "qwen35",
                   .hf_class = "Qwen3_5ForCausalLM",
                   .hf_model_type = "qwen3_5_text",
                   .norm_eps = 1e-6f,
                   .rope_theta = 1e7f,
                   .rotary_divisor = 4}};
    a.qk_norm = true;
    return a;
  }();
  return f;
}

}  // namespace edge
