// SigLIP/CLIP vision encoder: hyper-parameters, tensor schema, weight binding and the file
// loader. The forward pass is in clip_vision_forward.cpp.
#include "model/arch/clip_vision.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "core/check.h"
#include "kernels/api.h"
#include "quant/packed.h"

namespace edge {

namespace {

std::string vkey(const char* what) {
  return fmt::format("clip.vision.{}", what);
}

// A positive integer hparam; the error names the key.
Expected<int64_t> positive(const GgufFile& f, const std::string& key) {
  auto v = f.get_int(key);
  if (!v) return Status(v.status().code(), key + ": " + v.status().message());
  if (*v <= 0 || *v > (int64_t{1} << 24))
    return Status::invalid_format(fmt::format("{} = {}: out of range", key, *v));
  return *v;
}

constexpr VisionProjectorInfo kVisionProjectors[] = {
    {VisionProjector::kGemma3, "gemma3", "<start_of_image>", "<end_of_image>", true},
    {VisionProjector::kMlp, "mlp", "", "", false},
};

Expected<VisionProjector> read_projector(const GgufFile& f) {
  // Files with both modalities name each encoder's projector; vision-only ones the global key.
  std::string type = f.get_string_or(vkey("projector_type"), "");
  if (type.empty()) type = f.get_string_or("clip.projector_type", "");
  if (const VisionProjectorInfo* p = find_vision_projector(type)) return p->projector;
  if (type.empty()) return Status::not_found("clip.projector_type: missing");
  std::string names;  // "gemma3 and mlp"
  const size_t n = std::size(kVisionProjectors);
  for (size_t i = 0; i < n; ++i)
    names += std::string(i == 0 ? "" : i + 1 == n ? " and " : ", ") + kVisionProjectors[i].name;
  return Status::unsupported(
      fmt::format("clip.projector_type '{}': vision projectors are {}", type, names));
}

Status read_norm_constants(const GgufFile& f, ClipVisionHparams* h) {
  for (const char* k : {"image_mean", "image_std"}) {
    const std::string key = vkey(k);
    if (!f.find(key)) continue;  // mtmd's defaults: 0.5 (SigLIP)
    auto v = f.get_float_array(key);
    if (!v || v->size() != 3) return Status::invalid_format(key + ": expected 3 floats");
    float* dst = std::string(k) == "image_mean" ? h->mean : h->std;
    for (int c = 0; c < 3; ++c) dst[c] = static_cast<float>((*v)[static_cast<size_t>(c)]);
  }
  for (float s : h->std)
    if (!(s > 0)) return Status::invalid_format(vkey("image_std") + ": values must be positive");
  return Status();
}

// clip.vision.feature_layer: which hidden state feeds the projector (k = after k blocks).
// Granite stacks several; one is what the LLaVA family uses.
Status read_feature_layer(const GgufFile& f, ClipVisionHparams* h) {
  const std::string key = vkey("feature_layer");
  if (!f.find(key)) return Status();
  auto v = f.get_int_array(key);
  if (!v) return Status(v.status().code(), key + ": " + v.status().message());
  if (v->size() != 1)
    return Status::unsupported(fmt::format(
        "{}: {} values (stacked feature layers are not supported; one is)", key, v->size()));
  const int64_t k = v->front();
  if (k < 1 || k > h->n_layer)
    return Status::invalid_format(
        fmt::format("{} = {}: out of range 1..{} (block_count)", key, k, h->n_layer));
  h->feature_layer = k;
  return Status();
}

Status check_hparams(const ClipVisionHparams& h) {
  if (h.n_embd % h.n_head)
    return Status::invalid_format(fmt::format("{} = {} does not divide {} = {}",
                                              vkey("attention.head_count"), h.n_head,
                                              vkey("embedding_length"), h.n_embd));
  if (h.image_size % h.patch_size)
    return Status::invalid_format(fmt::format("{} = {} is not a multiple of {} = {}",
                                              vkey("image_size"), h.image_size, vkey("patch_size"),
                                              h.patch_size));
  if (h.projector == VisionProjector::kGemma3 && h.patches_per_side() % h.pool)
    return Status::invalid_format(fmt::format("{} = {} does not divide the {} patches per side",
                                              vkey("projector.scale_factor"), h.pool,
                                              h.patches_per_side()));
  return Status();
}

}  // namespace

const VisionProjectorInfo& vision_projector_info(VisionProjector p) {
  for (const VisionProjectorInfo& i : kVisionProjectors)
    if (i.projector == p) return i;
  CHECK_MSG(false, "a vision projector without a row in kVisionProjectors");
  return kVisionProjectors[0];
}

const VisionProjectorInfo* find_vision_projector(const std::string& name) {
  for (const VisionProjectorInfo& i : kVisionProjectors)
    if (name == i.name) return &i;
  return nullptr;
}

const char* vision_projector_name(VisionProjector p) {
  return vision_projector_info(p).name;
}

std::array<uint8_t, 3> ClipVisionHparams::pad_colour() const {
  if (projector == VisionProjector::kGemma3) return {0, 0, 0};
  std::array<uint8_t, 3> c{};
  for (int i = 0; i < 3; ++i)  // truncated, as LLaVA's expand2square
    c[static_cast<size_t>(i)] = static_cast<uint8_t>(std::clamp(mean[i] * 255.0f, 0.0f, 255.0f));
  return c;
}

std::vector<float> clip_vision_pixels(const ClipVisionHparams& h, const RgbImage& img) {
  const RgbImage sized =
      letterbox_image(img, h.image_size, h.image_size, h.filter(), h.pad_colour());
  return normalize_image(sized, h.mean, h.std);
}

int64_t ClipVisionHparams::n_tokens() const {
  if (projector == VisionProjector::kGemma3) return n_patches() / (pool * pool);
  return n_patches();
}

bool gguf_has_vision_encoder(const GgufFile& f) {
  return f.get_bool_or("clip.has_vision_encoder", false);
}

Expected<ClipVisionHparams> read_clip_vision_hparams(const GgufFile& f) {
  if (!gguf_has_vision_encoder(f))
    return Status::not_found("clip.has_vision_encoder: missing or false");
  ClipVisionHparams h;
  ASSIGN_OR_RETURN(h.projector, read_projector(f));
  ASSIGN_OR_RETURN(h.image_size, positive(f, vkey("image_size")));
  ASSIGN_OR_RETURN(h.patch_size, positive(f, vkey("patch_size")));
  ASSIGN_OR_RETURN(h.n_embd, positive(f, vkey("embedding_length")));
  ASSIGN_OR_RETURN(h.n_ff, positive(f, vkey("feed_forward_length")));
  ASSIGN_OR_RETURN(h.n_head, positive(f, vkey("attention.head_count")));
  ASSIGN_OR_RETURN(h.n_layer, positive(f, vkey("block_count")));
  ASSIGN_OR_RETURN(h.n_out, positive(f, vkey("projection_dim")));
  h.eps = static_cast<float>(f.get_float_or(vkey("attention.layer_norm_epsilon"), 1e-6));
  h.use_gelu = f.get_bool_or("clip.use_gelu", false);
  if (h.projector == VisionProjector::kGemma3) {
    h.pool = f.get_int_or(vkey("projector.scale_factor"), 4);
    if (h.pool <= 0 || h.pool > 64)
      return Status::invalid_format(
          fmt::format("{} = {}: out of range", vkey("projector.scale_factor"), h.pool));
  }
  RETURN_IF_ERROR(read_norm_constants(f, &h));
  RETURN_IF_ERROR(read_feature_layer(f, &h));
  const TensorSet& t = f.tensors();
  h.class_embd = t.find("v.class_embd") != nullptr;
  h.pre_ln = t.find("v.pre_ln.weight") != nullptr;
  h.post_ln = t.find("v.post_ln.weight") != nullptr;
  if (h.projector == VisionProjector::kMlp) {
    const TensorView* mm0 = t.find("mm.0.weight");
    if (!mm0 || mm0->shape.size() != 2)
      return Status::not_found("missing tensor mm.0.weight (2-D)");
    h.n_mm_ff = mm0->shape[0];
  }
  RETURN_IF_ERROR(check_hparams(h));
  return h;
}

void write_clip_vision_hparams(const ClipVisionHparams& h, const std::string& name, GgufWriter& w) {
  w.set_string("general.architecture", "clip");
  w.set_string("general.name", name);
  w.set_string("clip.projector_type", vision_projector_name(h.projector));
  w.set_bool("clip.has_vision_encoder", true);
  w.set_bool("clip.has_text_encoder", false);
  w.set_bool("clip.use_gelu", h.use_gelu);
  w.set_u32(vkey("image_size"), static_cast<uint32_t>(h.image_size));
  w.set_u32(vkey("patch_size"), static_cast<uint32_t>(h.patch_size));
  w.set_u32(vkey("embedding_length"), static_cast<uint32_t>(h.n_embd));
  w.set_u32(vkey("feed_forward_length"), static_cast<uint32_t>(h.n_ff));
  w.set_u32(vkey("attention.head_count"), static_cast<uint32_t>(h.n_head));
  w.set_u32(vkey("block_count"), static_cast<uint32_t>(h.n_layer));
  w.set_u32(vkey("projection_dim"), static_cast<uint32_t>(h.n_out));
  w.set_f32(vkey("attention.layer_norm_epsilon"), h.eps);
  if (h.projector == VisionProjector::kGemma3)
    w.set_u32(vkey("projector.scale_factor"), static_cast<uint32_t>(h.pool));
  if (h.feature_layer > 0)
    w.set_i32_array(vkey("feature_layer"), {static_cast<int32_t>(h.feature_layer)});
  w.set_f32_array(vkey("image_mean"), {h.mean[0], h.mean[1], h.mean[2]});
  w.set_f32_array(vkey("image_std"), {h.std[0], h.std[1], h.std[2]});
}

TensorSchema clip_vision_schema(const ClipVisionHparams& h) {
  TensorSchema s;
  const int64_t e = h.n_embd, p = h.patch_size;
  s.require("v.patch_embd.weight", {e, 3, p, p});
  s.require("v.patch_embd.bias", {e});
  s.require("v.position_embd.weight", {h.n_patches() + (h.class_embd ? 1 : 0), e});
  if (h.class_embd) s.require("v.class_embd", {e});
  for (const char* ln : {"v.pre_ln", "v.post_ln"})
    if (std::string(ln) == "v.pre_ln" ? h.pre_ln : h.post_ln) {
      s.require(fmt::format("{}.weight", ln), {e});
      s.require(fmt::format("{}.bias", ln), {e});
    }
  for (int64_t l = 0; l < h.n_layer; ++l) {
    auto n = [l](const char* what, const char* suffix) {
      return fmt::format("v.blk.{}.{}.{}", l, what, suffix);
    };
    for (const char* ln : {"ln1", "ln2"}) {
      s.require(n(ln, "weight"), {e});
      s.require(n(ln, "bias"), {e});
    }
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      s.require(n(m, "weight"), {e, e});
      s.require(n(m, "bias"), {e});
    }
    s.require(n("ffn_up", "weight"), {h.n_ff, e});
    s.require(n("ffn_up", "bias"), {h.n_ff});
    s.require(n("ffn_down", "weight"), {e, h.n_ff});
    s.require(n("ffn_down", "bias"), {e});
  }
  if (h.projector == VisionProjector::kGemma3) {
    s.require("mm.soft_emb_norm.weight", {e});
    s.require("mm.input_projection.weight", {e, h.n_out});  // transposed: [E, D]
  } else {
    s.require("mm.0.weight", {h.n_mm_ff, e});
    s.require("mm.0.bias", {h.n_mm_ff});
    s.require("mm.2.weight", {h.n_out, h.n_mm_ff});
    s.require("mm.2.bias", {h.n_out});
  }
  return s;
}

namespace {

class Binder {
 public:
  explicit Binder(const TensorSet& t) : t_(t) {}
  // F32 copy of a vector (any shape, numel values; a plain-typed tensor).
  Status operator()(const std::string& name, std::vector<float>* out) const {
    ASSIGN_OR_RETURN(const TensorView* v, get(name));
    if (is_packed_dtype(v->dtype))
      return Status::unsupported(fmt::format("tensor {}: a vector must be F32, F16 or BF16", name));
    out->resize(static_cast<size_t>(v->numel()));
    reference_kernels().convert_row(v->dtype, v->data, v->numel(), out->data());
    return Status();
  }
  // In-place 2-D view (a packed matrix as it is; a plain one reshaped to [dim 0, rest]).
  Status operator()(const std::string& name, TensorView* out) const {
    ASSIGN_OR_RETURN(const TensorView* v, get(name));
    *out = *v;
    if (v->shape.size() != 2 && is_packed_dtype(v->dtype))
      return Status::unsupported(
          fmt::format("tensor {}: a packed {}-D tensor", name, v->shape.size()));
    const int64_t rows = v->shape.front();
    out->shape = {rows, rows > 0 ? v->numel() / rows : 0};
    return Status();
  }

 private:
  Expected<const TensorView*> get(const std::string& name) const {
    const TensorView* v = t_.find(name);
    if (!v) return Status::not_found("missing tensor " + name);
    return v;
  }
  const TensorSet& t_;
};

Status bind_layer(const Binder& b, int64_t l, ClipVisionWeights::Layer* w) {
  auto n = [l](const char* what) { return fmt::format("v.blk.{}.{}", l, what); };
  RETURN_IF_ERROR(b(n("ln1.weight"), &w->ln1_w));
  RETURN_IF_ERROR(b(n("ln1.bias"), &w->ln1_b));
  RETURN_IF_ERROR(b(n("ln2.weight"), &w->ln2_w));
  RETURN_IF_ERROR(b(n("ln2.bias"), &w->ln2_b));
  RETURN_IF_ERROR(b(n("attn_q.weight"), &w->q_w));
  RETURN_IF_ERROR(b(n("attn_q.bias"), &w->q_b));
  RETURN_IF_ERROR(b(n("attn_k.weight"), &w->k_w));
  RETURN_IF_ERROR(b(n("attn_k.bias"), &w->k_b));
  RETURN_IF_ERROR(b(n("attn_v.weight"), &w->v_w));
  RETURN_IF_ERROR(b(n("attn_v.bias"), &w->v_b));
  RETURN_IF_ERROR(b(n("attn_out.weight"), &w->o_w));
  RETURN_IF_ERROR(b(n("attn_out.bias"), &w->o_b));
  RETURN_IF_ERROR(b(n("ffn_up.weight"), &w->up_w));
  RETURN_IF_ERROR(b(n("ffn_up.bias"), &w->up_b));
  RETURN_IF_ERROR(b(n("ffn_down.weight"), &w->down_w));
  return b(n("ffn_down.bias"), &w->down_b);
}

// mm.input_projection [E, D] -> F32 [D, E] (rows read through the embedding-row path,
// which reads every plain and packed type).
Status bind_input_projection(const TensorSet& t, const ClipVisionHparams& h, ClipVisionWeights* w) {
  const TensorView* v = t.find("mm.input_projection.weight");
  if (!v) return Status::not_found("missing tensor mm.input_projection.weight");
  const int64_t e = h.n_embd, d = h.n_out;
  std::vector<float> row(static_cast<size_t>(d));
  w->in_proj_t.assign(static_cast<size_t>(d * e), 0.0f);
  for (int64_t r = 0; r < e; ++r) {
    embedding_row(reference_kernels(), *v, r, row.data());
    for (int64_t c = 0; c < d; ++c)
      w->in_proj_t[static_cast<size_t>(c * e + r)] = row[static_cast<size_t>(c)];
  }
  w->in_proj.name = "mm.input_projection.weight^T";
  w->in_proj.dtype = DType::F32;
  w->in_proj.shape = {d, e};
  w->in_proj.data = reinterpret_cast<const uint8_t*>(w->in_proj_t.data());
  w->in_proj.nbytes = static_cast<uint64_t>(d * e) * sizeof(float);
  return Status();
}

}  // namespace

Expected<ClipVisionWeights> bind_clip_vision_weights(const ClipVisionHparams& h,
                                                     const TensorSet& t) {
  Binder b(t);
  ClipVisionWeights w;
  RETURN_IF_ERROR(b("v.patch_embd.weight", &w.patch_w));
  if (is_packed_dtype(w.patch_w.dtype))
    return Status::unsupported("tensor v.patch_embd.weight: must be F32, F16 or BF16");
  RETURN_IF_ERROR(b("v.patch_embd.bias", &w.patch_b));
  RETURN_IF_ERROR(b("v.position_embd.weight", &w.pos));
  if (h.class_embd) RETURN_IF_ERROR(b("v.class_embd", &w.cls));
  if (h.pre_ln) {
    RETURN_IF_ERROR(b("v.pre_ln.weight", &w.pre_ln_w));
    RETURN_IF_ERROR(b("v.pre_ln.bias", &w.pre_ln_b));
  }
  if (h.post_ln) {
    RETURN_IF_ERROR(b("v.post_ln.weight", &w.post_ln_w));
    RETURN_IF_ERROR(b("v.post_ln.bias", &w.post_ln_b));
  }
  w.layers.resize(static_cast<size_t>(h.n_layer));
  for (int64_t l = 0; l < h.n_layer; ++l)
    RETURN_IF_ERROR(bind_layer(b, l, &w.layers[static_cast<size_t>(l)]));
  if (h.projector == VisionProjector::kGemma3) {
    RETURN_IF_ERROR(b("mm.soft_emb_norm.weight", &w.soft_norm));
    RETURN_IF_ERROR(bind_input_projection(t, h, &w));
  } else {
    RETURN_IF_ERROR(b("mm.0.weight", &w.mm0_w));
    RETURN_IF_ERROR(b("mm.0.bias", &w.mm0_b));
    RETURN_IF_ERROR(b("mm.2.weight", &w.mm2_w));
    RETURN_IF_ERROR(b("mm.2.bias", &w.mm2_b));
  }
  return w;
}

namespace {

uint64_t vision_activation_bytes(const ClipVisionHparams& h) {
  const uint64_t n = static_cast<uint64_t>(h.n_patches() + 1);
  // Residual, normed, q, k, v, attention out: 6 x [n, E]; the MLP [n, n_ff]; the im2col
  // rows [n, 3 P P]; one head's q, k, v, out [n, E / heads] and scores [n, n].
  const uint64_t rows =
      n * static_cast<uint64_t>(6 * h.n_embd + h.n_ff + 3 * h.patch_size * h.patch_size +
                                4 * h.head_dim()) +
      n * n;
  return rows * sizeof(float);
}

}  // namespace

uint64_t VisionEncoderModel::activation_bytes() const {
  return vision_activation_bytes(hparams);
}

Expected<VisionFootprint> vision_encoder_footprint(const std::string& path) {
  auto f = GgufFile::open(path);
  if (!f) return f.status();
  auto h = read_clip_vision_hparams(*f);
  if (!h) return Status(h.status().code(), path + ": " + h.status().message());
  VisionFootprint fp;
  for (const TensorView& t : f->tensors().all()) {
    const bool plain = t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16 ||
                       is_packed_dtype(t.dtype);
    (plain ? fp.weights_mapped : fp.weights_anon) += t.nbytes;
  }
  // gemma3's input projection is transposed into an F32 copy at load.
  if (h->projector == VisionProjector::kGemma3)
    fp.weights_anon += static_cast<uint64_t>(h->n_embd * h->n_out) * 4;
  fp.activations = vision_activation_bytes(*h);
  return fp;
}

Expected<std::unique_ptr<VisionEncoderModel>> load_vision_encoder(const std::string& path,
                                                                  int threads) {
  auto f = GgufFile::open(path);
  if (!f) return f.status();
  auto m = std::make_unique<VisionEncoderModel>();
  m->file = std::move(*f);
  auto h = read_clip_vision_hparams(m->file);
  if (!h) return Status(h.status().code(), path + ": " + h.status().message());
  m->hparams = *h;
  ASSIGN_OR_RETURN(m->prepared, prepare_gguf_tensors(m->file, threads));
  if (Status s = clip_vision_schema(m->hparams).check(m->prepared.tensors); !s.ok())
    return Status(s.code(), path + ": " + s.message());
  ASSIGN_OR_RETURN(m->weights, bind_clip_vision_weights(m->hparams, m->prepared.tensors));
  for (const TensorView& t : m->prepared.tensors.all()) m->weight_bytes += t.nbytes;
  return m;
}

}  // namespace edge
