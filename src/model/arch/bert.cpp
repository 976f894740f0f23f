// BERT-family text encoders: hyper-parameters, tensor schema and weight binding (graph in
// bert.h; the forward pass is in bert_forward.cpp).
#include "model/arch/bert.h"

#include <fmt/format.h>

#include "model/arch/encoder_common.h"

namespace edge {

namespace {

constexpr const char* kBert = "bert";
constexpr const char* kNomicBert = "nomic-bert";

std::string key(const std::string& arch, const char* what) {
  return fmt::format("{}.{}", arch, what);
}

// The rows of a 2-D tensor (dim 0 of the row-major shape); the error names it.
Expected<int64_t> tensor_rows(const GgufFile& f, const char* name) {
  const TensorView* t = f.tensors().find(name);
  if (!t) return Status::not_found(fmt::format("missing tensor {}", name));
  if (t->shape.size() != 2)
    return Status::invalid_format(
        fmt::format("tensor {}: expected 2 dims, found {}", name, t->shape_string()));
  return t->shape[0];
}

}  // namespace

bool is_text_encoder_arch(const std::string& arch) {
  return arch == kBert || arch == kNomicBert;
}

Expected<ModelConfig> bert_config_from_gguf(const GgufFile& f, const std::string& arch,
                                            BertHparams* h) {
  if (!is_text_encoder_arch(arch))
    return Status::unsupported(fmt::format("'{}' is not a BERT-family encoder", arch));
  ModelConfig c;
  c.arch = arch;
  c.encoder_only = true;
  *h = BertHparams{};
  h->nomic = arch == kNomicBert;
  ASSIGN_OR_RETURN(int64_t n_embd, gguf_positive_int(f, key(arch, "embedding_length"), 1 << 16));
  ASSIGN_OR_RETURN(int64_t n_ff, gguf_positive_int(f, key(arch, "feed_forward_length"), 1 << 18));
  ASSIGN_OR_RETURN(int64_t n_layer, gguf_positive_int(f, key(arch, "block_count"), 1024));
  ASSIGN_OR_RETURN(int64_t n_head, gguf_positive_int(f, key(arch, "attention.head_count"), 1024));
  ASSIGN_OR_RETURN(h->n_ctx_train, gguf_positive_int(f, key(arch, "context_length"), 1 << 20));
  if (n_embd % n_head)
    return Status::invalid_format(fmt::format("{} = {} does not divide {} = {}",
                                              key(arch, "attention.head_count"), n_head,
                                              key(arch, "embedding_length"), n_embd));
  if (f.get_bool_or(key(arch, "attention.causal"), false))
    return Status::unsupported(fmt::format("{} = true: a causal BERT is not an encoder",
                                           key(arch, "attention.causal")));
  ASSIGN_OR_RETURN(int64_t n_vocab, tensor_rows(f, "token_embd.weight"));
  ASSIGN_OR_RETURN(h->n_types, tensor_rows(f, "token_types.weight"));
  c.n_vocab = static_cast<int32_t>(n_vocab);
  c.n_embd = static_cast<int32_t>(n_embd);
  c.n_ff = static_cast<int32_t>(n_ff);
  c.n_layer = static_cast<int32_t>(n_layer);
  c.n_head = c.n_head_kv = static_cast<int32_t>(n_head);
  c.head_dim = static_cast<int32_t>(n_embd / n_head);
  c.max_ctx = h->n_ctx_train;
  c.norm_eps = static_cast<float>(f.get_float_or(key(arch, "attention.layer_norm_epsilon"), 1e-12));
  c.pooling_type = static_cast<int32_t>(f.get_int_or(key(arch, "pooling_type"), h->nomic ? 1 : 2));
  c.act = h->nomic ? Activation::kSwiGlu : Activation::kGeGlu;
  c.rope_style = RopeStyle::kNeox;
  c.layers.resize(static_cast<size_t>(n_layer));
  for (LayerConfig& l : c.layers) {
    l.rope_theta = static_cast<float>(f.get_float_or(key(arch, "rope.freq_base"), 1000.0));
    l.rotary_dim = h->nomic ? c.head_dim : 0;  // bert: learned absolute positions instead
  }
  h->cls_head = f.tensors().find("cls.weight") != nullptr;
  if (const TensorView* t = f.tensors().find("cls.output.weight"))
    h->n_cls_out = t->shape.empty() ? 0 : t->shape[0];
  if (c.pooling_type == 4 && !h->cls_head)
    return Status::invalid_format(fmt::format(
        "{} = 4 (rank) but the file has no classification head (cls.weight)",
        key(arch, "pooling_type")));
  return c;
}

void write_bert_hparams(const ModelConfig& c, const BertHparams& h, GgufWriter& w) {
  const std::string& a = c.arch;
  w.set_string("general.architecture", a);
  w.set_u32(key(a, "context_length"), static_cast<uint32_t>(h.n_ctx_train));
  w.set_u32(key(a, "embedding_length"), static_cast<uint32_t>(c.n_embd));
  w.set_u32(key(a, "feed_forward_length"), static_cast<uint32_t>(c.n_ff));
  w.set_u32(key(a, "block_count"), static_cast<uint32_t>(c.n_layer));
  w.set_u32(key(a, "attention.head_count"), static_cast<uint32_t>(c.n_head));
  w.set_f32(key(a, "attention.layer_norm_epsilon"), c.norm_eps);
  w.set_bool(key(a, "attention.causal"), false);
  if (c.pooling_type >= 0) w.set_u32(key(a, "pooling_type"), static_cast<uint32_t>(c.pooling_type));
  if (h.nomic) w.set_f32(key(a, "rope.freq_base"), c.layers.empty() ? 1000.0f : c.layers[0].rope_theta);
  w.set_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(h.n_types));
}

TensorSchema bert_schema(const ModelConfig& c, const BertHparams& h) {
  const int64_t e = c.n_embd, ff = c.n_ff;
  TensorSchema s;
  s.require("token_embd.weight", {c.n_vocab, e});
  s.require("token_types.weight", {h.n_types, e});
  if (!h.nomic) s.require("position_embd.weight", {h.n_ctx_train, e});
  s.require("token_embd_norm.weight", {e});
  s.require("token_embd_norm.bias", {e});
  for (int l = 0; l < c.n_layer; ++l) {
    if (h.nomic) {
      s.require(layer_name(l, "attn_qkv"), {3 * e, e});
    } else {
      for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
        s.require(layer_name(l, m), {e, e});
        s.require(layer_name(l, m, "bias"), {e});
      }
      s.require(layer_name(l, "attn_output", "bias"), {e});
      s.require(layer_name(l, "ffn_up", "bias"), {ff});
      s.require(layer_name(l, "ffn_down", "bias"), {e});
    }
    s.require(layer_name(l, "attn_output"), {e, e});
    for (const char* n : {"attn_output_norm", "layer_output_norm"}) {
      s.require(layer_name(l, n), {e});
      s.require(layer_name(l, n, "bias"), {e});
    }
    s.require(layer_name(l, "ffn_up"), {ff, e});
    if (h.nomic) s.require(layer_name(l, "ffn_gate"), {ff, e});
    s.require(layer_name(l, "ffn_down"), {e, ff});
  }
  if (h.cls_head) {
    s.require("cls.weight", {e, e});
    s.require("cls.bias", {e});
  }
  if (h.n_cls_out > 0) {
    s.require("cls.output.weight", {h.n_cls_out, e});
    s.require("cls.output.bias", {h.n_cls_out});
  }
  return s;
}

namespace {

Status bind_layer(const WeightBinder& b, bool nomic, int l, BertWeights::Layer* y) {
  auto n = [l](const char* what, const char* suffix = "weight") {
    return layer_name(l, what, suffix);
  };
  if (nomic) {
    RETURN_IF_ERROR(b(n("attn_qkv"), &y->qkv_w));
    RETURN_IF_ERROR(b(n("ffn_gate"), &y->gate_w));
  } else {
    RETURN_IF_ERROR(b(n("attn_q"), &y->q_w));
    RETURN_IF_ERROR(b(n("attn_q", "bias"), &y->q_b));
    RETURN_IF_ERROR(b(n("attn_k"), &y->k_w));
    RETURN_IF_ERROR(b(n("attn_k", "bias"), &y->k_b));
    RETURN_IF_ERROR(b(n("attn_v"), &y->v_w));
    RETURN_IF_ERROR(b(n("attn_v", "bias"), &y->v_b));
    RETURN_IF_ERROR(b(n("attn_output", "bias"), &y->o_b));
    RETURN_IF_ERROR(b(n("ffn_up", "bias"), &y->up_b));
    RETURN_IF_ERROR(b(n("ffn_down", "bias"), &y->down_b));
  }
  RETURN_IF_ERROR(b(n("attn_output"), &y->o_w));
  RETURN_IF_ERROR(b(n("attn_output_norm"), &y->attn_ln_w));
  RETURN_IF_ERROR(b(n("attn_output_norm", "bias"), &y->attn_ln_b));
  RETURN_IF_ERROR(b(n("layer_output_norm"), &y->out_ln_w));
  RETURN_IF_ERROR(b(n("layer_output_norm", "bias"), &y->out_ln_b));
  RETURN_IF_ERROR(b(n("ffn_up"), &y->up_w));
  return b(n("ffn_down"), &y->down_w);
}

int64_t floats(const std::vector<float>& v) { return static_cast<int64_t>(v.size()); }

}  // namespace

Expected<BertWeights> bind_bert_weights(const ModelConfig& c, const BertHparams& h,
                                        const TensorSet& tensors) {
  const WeightBinder b(tensors);
  BertWeights w;
  RETURN_IF_ERROR(b("token_embd.weight", &w.tok_embd));
  std::vector<float> types;
  RETURN_IF_ERROR(b("token_types.weight", &types));
  w.type0.assign(types.begin(), types.begin() + c.n_embd);  // llama.cpp: every token type 0
  if (!h.nomic) RETURN_IF_ERROR(b("position_embd.weight", &w.pos_embd));
  RETURN_IF_ERROR(b("token_embd_norm.weight", &w.embd_ln_w));
  RETURN_IF_ERROR(b("token_embd_norm.bias", &w.embd_ln_b));
  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (int l = 0; l < c.n_layer; ++l) RETURN_IF_ERROR(bind_layer(b, h.nomic, l, &w.layers[l]));
  if (h.cls_head) {
    RETURN_IF_ERROR(b("cls.weight", &w.cls_w));
    RETURN_IF_ERROR(b("cls.bias", &w.cls_b));
  }
  if (h.n_cls_out > 0) {
    RETURN_IF_ERROR(b("cls.output.weight", &w.cls_out_w));
    RETURN_IF_ERROR(b("cls.output.bias", &w.cls_out_b));
  }
  return w;
}

int64_t BertWeights::vector_bytes() const {
  int64_t n = floats(type0) + floats(embd_ln_w) + floats(embd_ln_b) + floats(cls_b) +
              floats(cls_out_b);
  for (const Layer& l : layers)
    n += floats(l.q_b) + floats(l.k_b) + floats(l.v_b) + floats(l.o_b) + floats(l.attn_ln_w) +
         floats(l.attn_ln_b) + floats(l.out_ln_w) + floats(l.out_ln_b) + floats(l.up_b) +
         floats(l.down_b);
  return n * static_cast<int64_t>(sizeof(float));
}

}  // namespace edge
