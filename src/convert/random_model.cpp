// write_random_model: a decoder model of any family with deterministic random weights, its
// shape from the family table (ArchFamily, ArchVariant), as GGUF or an HF directory.
#include "convert/random_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "convert/random_model_internal.h"
#include "convert/synthetic_vocab.h"
#include "core/check.h"
#include "core/half.h"
#include "formats/gguf.h"
#include "model/arch/common.h"
#include "model/gguf_hparams.h"
#include "model/registry.h"
#include "quant/mxfp4.h"
#include "tokenizer/harmony.h"
#include "tokenizer/outetts_tokens.h"
#include "tokenizer/vocab_io.h"

namespace edge {

namespace random_model {

namespace {

// splitmix64: a portable generator (std:: distributions differ between libraries).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() {
    return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  }
  float normal() {  // Box-Muller
    return static_cast<float>(std::sqrt(-2.0 * std::log(uniform())) *
                              std::cos(2 * M_PI * uniform()));
  }
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// An output projection (attention or FFN, dense or experts) of a layer at or past
// RandomModelOptions::quiet_from.
bool is_quiet_output(const RandomModelOptions& o, const std::string& name) {
  if (o.quiet_from < 0 || name.rfind("blk.", 0) != 0) return false;
  const int layer = std::atoi(name.c_str() + 4);
  return layer >= o.quiet_from && (name.find(".attn_output.") != std::string::npos ||
                                   name.find(".ffn_down") != std::string::npos);
}

}  // namespace

Tensor seeded_tensor(const TensorSpec& s, uint64_t seed) {
  Tensor t{s.name, s.shape};
  t.seed = seed ^ fnv1a(s.name);
  return t;
}

int64_t fan_in(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

uint32_t gguf_file_type(DType t) {
  return t == DType::F32 ? 0 : t == DType::F16 ? 1 : t == DType::Q8_0 ? 7 : 32;
}

Status add_generated_tensor(GgufWriter& w, const Tensor& t, DType dt, const char* writer) {
  return w.add_tensor(t.name, dt, t.shape, [t, dt, writer](uint8_t* dst, uint64_t n) {
    const std::vector<uint8_t> bytes = encode(t.generate(), dt);
    if (n != bytes.size()) return Status::internal(std::string(writer) + ": tensor size mismatch");
    std::memcpy(dst, bytes.data(), n);
    return Status();
  });
}

std::vector<Tensor> make_tensors(const RandomModelOptions& o, const ModelConfig& c) {
  const ArchFamily* fam = find_family_gguf(c.arch);
  std::vector<Tensor> out;
  const TensorSchema schema = fam->schema(c);
  for (const TensorSpec& s : schema.specs()) {
    if (!s.required) continue;
    Tensor t = seeded_tensor(s, o.seed);
    // Norms near 1; biases small; matrices ~N(0, 1/in) so activations keep their scale
    // and logits (tied or not) have a spread of about 1: neither flat nor one-hot.
    if (ends_with(s.name, "norm.weight")) {
      t.mean = 1.0f;
      t.stddev = 0.1f;
    } else if (ends_with(s.name, ".ssm_a")) {
      t.mean = -1.0f;  // -exp(A_log): a decay rate, always negative (5 sigma from 0)
      t.stddev = 0.2f;
    } else if (ends_with(s.name, "attn_sinks.weight")) {
      t.stddev = 1.0f;  // logits of the scale of the scores, so the sink matters
    } else if (ends_with(s.name, ".bias")) {
      t.stddev = 0.1f;
    } else {
      t.stddev = 1.0f / std::sqrt(static_cast<float>(s.shape.back()));
      if (is_quiet_output(o, s.name)) t.stddev *= o.quiet_scale;
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<float> Tensor::generate() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  Rng rng{seed};
  for (float& x : v) x = mean + stddev * rng.normal();
  return v;
}

namespace {
// GGML's Q8_0: blocks of 32 values, an f16 scale max|x| / 127 and 32 int8 codes.
std::vector<uint8_t> encode_q8_0(const std::vector<float>& v) {
  std::vector<uint8_t> out;
  out.reserve(v.size() / 32 * 34);
  for (size_t b = 0; b < v.size(); b += 32) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[b + i]));
    const float d = amax / 127.0f, inv = d > 0 ? 1.0f / d : 0.0f;
    const uint16_t h = f32_to_f16(d);
    out.push_back(static_cast<uint8_t>(h & 0xff));
    out.push_back(static_cast<uint8_t>(h >> 8));
    for (size_t i = 0; i < 32; ++i)
      out.push_back(static_cast<uint8_t>(static_cast<int8_t>(std::lround(v[b + i] * inv))));
  }
  return out;
}
}  // namespace

std::vector<uint8_t> encode(const std::vector<float>& v, DType t) {
  if (t == DType::Q8_0) return encode_q8_0(v);  // v.size() a multiple of 32
  if (t == DType::MXFP4) {  // v.size() a multiple of 32; random weights are finite
    std::vector<uint8_t> b(v.size() / kMxfp4Block * kMxfp4BlockBytes);
    CHECK(quantize_mxfp4_row(v.data(), static_cast<int64_t>(v.size()), b.data()).ok());
    return b;
  }
  std::vector<uint8_t> b(v.size() * (t == DType::F32 ? 4 : 2));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&b[i * 4], &v[i], 4);
    } else {
      const uint16_t h = t == DType::F16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
      std::memcpy(&b[i * 2], &h, 2);
    }
  }
  return b;
}

}  // namespace random_model

namespace {

// The period of the sliding/global layer pattern: the option, else the variant's.
int32_t sliding_period(const RandomModelOptions& o, const ArchVariant& v) {
  return o.sliding_pattern > 0 ? o.sliding_pattern : v.sliding_period;
}

void set_layer_pattern(const RandomModelOptions& o, const ArchVariant& v, ModelConfig* c) {
  LayerConfig global;
  global.rope_theta = v.rope_theta;
  global.rotary_dim = v.rotary_divisor > 1 ? (c->head_dim / v.rotary_divisor) & ~1 : c->head_dim;
  c->layers.assign(static_cast<size_t>(c->n_layer), global);
  if (v.sliding_period <= 0) return;
  const int32_t period = sliding_period(o, v);
  for (int32_t i = 0; i < c->n_layer; ++i) {
    if ((i + 1) % period == 0) continue;
    LayerConfig& l = c->layers[i];
    l.sliding = true;
    l.window = o.sliding_window > 0 ? o.sliding_window : v.sliding_window;
    l.rope_theta = v.sliding_rope_theta > 0 ? v.sliding_rope_theta : v.rope_theta;
    l.rotary_dim = c->head_dim;
  }
}

}  // namespace

Expected<ModelConfig> random_model_config(const RandomModelOptions& o) {
  const ArchFamily* fam = find_family_gguf(o.arch);
  const ArchVariant* v = fam ? fam->variant(o.arch) : nullptr;
  if (!v)
    return Status::unsupported("make-model: unknown architecture '" + o.arch + "' (" +
                               writable_architectures() + ")");
  if (o.dtype != DType::F32 && o.dtype != DType::F16 && o.dtype != DType::BF16)
    return Status::invalid_argument(std::string("make-model: weight type ") + dtype_name(o.dtype) +
                                    " (f32, f16 or bf16)");
  if (o.n_head <= 0) return Status::invalid_argument("make-model: heads must be positive");
  if (o.experts_dtype && *o.experts_dtype != DType::MXFP4 && *o.experts_dtype != DType::F32 &&
      *o.experts_dtype != DType::F16 && *o.experts_dtype != DType::BF16)
    return Status::invalid_argument(std::string("make-model: experts type ") +
                                    dtype_name(*o.experts_dtype) + " (f32, f16, bf16 or mxfp4)");
  if (!o.outetts.empty() && o.outetts != "0.2" && o.outetts != "0.3")
    return Status::invalid_argument("make-model: OuteTTS version '" + o.outetts + "' (0.2 or 0.3)");
  ModelConfig c;
  c.arch = o.arch;
  c.n_vocab = o.n_vocab + (o.outetts.empty() ? 0 : outetts_token_count());
  c.n_embd = o.n_embd;
  c.n_layer = o.n_layer;
  c.n_head = o.n_head;
  c.n_head_kv = o.n_head_kv;
  c.head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  c.n_ff = o.n_ff > 0 ? o.n_ff : 2 * o.n_embd;
  c.max_ctx = o.ctx;
  c.norm_eps = v->norm_eps;
  c.pooling_type = o.pooling_type;
  c.rope_style = fam->gguf_rope_style;
  c.act = fam->act;
  c.tied_embeddings = o.tied.value_or(fam->tied_by_default);
  c.qkv_bias = fam->qkv_bias;
  c.qk_norm = fam->qk_norm;
  c.post_norms = fam->post_norms;
  c.scale_embeddings = fam->scale_embeddings;
  if (fam->gguf_sliding_pattern) c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  set_layer_pattern(o, *v, &c);
  if (v->yarn_factor > 0) {
    c.yarn.factor = v->yarn_factor;
    c.yarn.original_ctx = v->yarn_original_ctx;
    c.rope_freq_factors = yarn_rope(c.yarn, c.layers[0].rotary_dim, v->rope_theta, &c.rope_mscale);
    c.sliding_rope_scaled = true;
  }
  if (fam->moe.enabled()) {
    c.moe = fam->moe;
    if (o.n_expert > 0) c.moe.n_expert = o.n_expert;
    if (o.n_expert_used > 0) c.moe.n_expert_used = o.n_expert_used;
    c.moe.n_ff_expert = o.n_ff_expert > 0 ? o.n_ff_expert : std::max(c.n_ff / 2, 1);
    for (LayerConfig& l : c.layers) l.moe = true;
  } else if (o.n_expert > 0 || o.n_expert_used > 0 || o.n_ff_expert > 0) {
    return Status::invalid_argument("make-model: experts for " + o.arch +
                                    ", not a mixture-of-experts family");
  }
  if (fam->made_up) fam->made_up(&c);  // after the experts: a family may size its shared one
  if (o.llama3_rope_factor > 0) {
    if (!fam->gguf_rope_freqs)
      return Status::invalid_argument("make-model: llama3 RoPE scaling is for llama");
    c.rope_freq_factors = llama3_rope_freq_factors(c.layers[0].rotary_dim, c.layers[0].rope_theta,
                                                   o.llama3_rope_factor, 1.0f, 4.0f, 8192.0f);
  }
  RETURN_IF_ERROR(validate_config(c));
  return c;
}

namespace {

void write_gguf_hparams(const RandomModelOptions& o, const ModelConfig& c, GgufWriter& w) {
  const std::string a = c.arch;
  const LayerConfig* global = &c.layers[0];
  const LayerConfig* local = nullptr;
  for (const LayerConfig& l : c.layers) (l.sliding ? local : global) = &l;
  write_common_gguf_hparams(c, *global, "edge-random-" + a, w);
  // llama.cpp's MOSTLY_MXFP4_MOE (38) when the experts are MXFP4.
  w.set_u32("general.file_type",
            o.experts_dtype == DType::MXFP4 ? 38u : random_model::gguf_file_type(o.dtype));
  const ArchFamily* fam = find_family_gguf(a);
  if (fam->gguf_extras) fam->gguf_extras(c, &w);
  if (local && fam->gguf_sliding_pattern) {
    w.set_u32(a + ".attention.sliding_window", local->window);
    w.set_u32(a + ".edge.sliding_pattern", sliding_period(o, *fam->variant(a)));
    w.set_f32(a + ".edge.rope.freq_base_swa", local->rope_theta);
    w.set_u32(a + ".edge.rope.dimension_count_swa", local->rotary_dim);
  }
  if (c.attn_scale > 0)
    w.set_f32(a + ".edge.query_pre_attn_scalar", 1.0f / (c.attn_scale * c.attn_scale));
}

Status write_gguf(const RandomModelOptions& o, const ModelConfig& c, const Vocab& vocab,
                  const std::string& path) {
  GgufWriter w;
  write_gguf_hparams(o, c, w);
  RETURN_IF_ERROR(write_vocab_gguf(vocab, w));
  if (o.outetts == "0.3") w.set_string("tokenizer.chat_template", "outetts-0.3");
  if (c.arch == "gpt-oss") w.set_string("tokenizer.chat_template", harmony_chat_template());
  for (const random_model::Tensor& t : random_model::make_tensors(o, c)) {
    // llama.cpp convention: 1-D tensors (norms, biases), every bias (GPT-OSS's expert
    // biases are [n_expert, n_ff]: GGML's add_id takes them only as F32) and the DeltaNet
    // conv F32, matrices in the chosen type.
    const bool f32 = t.shape.size() == 1 || random_model::ends_with(t.name, ".bias") ||
                     random_model::ends_with(t.name, "ssm_conv1d.weight");
    DType dt = f32 ? DType::F32 : o.dtype;
    if (o.experts_dtype && random_model::ends_with(t.name, "_exps.weight")) dt = *o.experts_dtype;
    if (dt == DType::MXFP4 && t.shape.back() % kMxfp4Block != 0)
      return Status::invalid_argument("make-model: " + t.name + " has rows of " +
                                      std::to_string(t.shape.back()) +
                                      " weights; MXFP4 needs a multiple of 32");
    RETURN_IF_ERROR(random_model::add_generated_tensor(w, t, dt, "random model"));
  }
  if (!c.rope_freq_factors.empty() && c.yarn.factor <= 1.0f) {  // llama.cpp's Llama-3.1 form
    const std::vector<float>& f = c.rope_freq_factors;
    RETURN_IF_ERROR(w.add_tensor("rope_freqs.weight", DType::F32, {static_cast<int64_t>(f.size())},
                                 f.data(), f.size() * sizeof(float)));
  }
  return w.write(path, 32);
}

}  // namespace

Status write_random_model(const RandomModelOptions& o, const std::string& out) {
  ASSIGN_OR_RETURN(ModelConfig c, random_model_config(o));
  // GPT-OSS speaks harmony: its o200k-style byte-level vocabulary with the harmony tokens,
  // and the harmony chat template.
  ASSIGN_OR_RETURN(Vocab vocab, c.arch == "gpt-oss"
                                    ? make_synthetic_harmony_vocab(o.n_vocab, o.seed)
                                    : make_synthetic_vocab(o.n_vocab, o.seed));
  if (!o.outetts.empty()) append_outetts_tokens(vocab);
  if (vocab.n_tokens() != c.n_vocab)
    return Status::internal(
        fmt::format("synthetic vocabulary has {} tokens, wanted {}", vocab.n_tokens(), c.n_vocab));
  const bool gguf = out.size() > 5 && out.compare(out.size() - 5, 5, ".gguf") == 0;
  const ArchFamily* fam = find_family_gguf(c.arch);
  if (!gguf && o.experts_dtype == DType::MXFP4 && !(fam && fam->hf_fused_experts))
    return Status::invalid_argument(
        "make-model: MXFP4 experts of " + c.arch +
        " are written as GGUF (-o FILE.gguf); only gpt-oss's HF form has them");
  if (!gguf && !o.outetts.empty())
    return Status::invalid_argument(
        "make-model: an OuteTTS model is written as GGUF (-o FILE.gguf)");
  Status st = gguf ? write_gguf(o, c, vocab, out) : random_model::write_hf_dir(o, c, vocab, out);
  return st.with_context("writing random model " + out);
}

}  // namespace edge
