// The SigLIP/CLIP vision encoder and its gemma3 / mlp projectors: a random-weight projector
// file in llama.cpp's clip layout loads, its forward pass matches a plain scalar
// implementation of the graph in clip_vision.h (written from the graph, in double), a Q8_0
// file stays close to the F32 one, and bad files are refused naming the key or tensor.
#include "model/arch/clip_vision.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "convert/random_vision_projector.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "model/image_encoder.h"
#include "model/model_test_util.h"

namespace edge {
namespace {

using Vec = std::vector<double>;

RandomVisionProjectorOptions tiny(VisionProjector p) {
  RandomVisionProjectorOptions o;
  o.projector = p;
  o.image_size = 32;
  o.patch_size = 4;  // 8x8 patches
  o.n_embd = 32;
  o.n_ff = 64;
  o.n_head = 4;
  o.n_layer = 2;
  o.n_out = 64;
  o.pool = 2;  // gemma3: 4x4 = 16 tokens
  o.n_mm_ff = 96;
  o.class_embd = p == VisionProjector::kMlp;
  return o;
}

std::string write_tiny(const std::string& name, const RandomVisionProjectorOptions& o) {
  const std::string path = testing::temp_dir("clip_" + name) + "/mmproj.gguf";
  const Status st = write_random_vision_projector(o, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return path;
}

// ---- the scalar reference, from the graph in clip_vision.h ----------------------------

struct Ref {
  const GgufFile& f;
  Vec t(const std::string& name) const {
    const TensorView* v = f.tensors().find(name);
    EXPECT_NE(v, nullptr) << name;
    EXPECT_EQ(v->dtype, DType::F32) << name;
    const float* p = reinterpret_cast<const float*>(v->data);
    return Vec(p, p + v->numel());
  }
};

// y [n][out] = x [n][in] . W^T + b, W [out][in].
Vec lin(const Vec& x, int64_t n, const Vec& w, const Vec* b, int64_t out) {
  const int64_t in = static_cast<int64_t>(w.size()) / out;
  Vec y(static_cast<size_t>(n * out));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? (*b)[o] : 0.0;
      for (int64_t k = 0; k < in; ++k) s += x[i * in + k] * w[o * in + k];
      y[i * out + o] = s;
    }
  return y;
}

void layer_norm(Vec& x, int64_t n, int64_t d, const Vec& g, const Vec& b, double eps) {
  for (int64_t i = 0; i < n; ++i) {
    double m = 0, v = 0;
    for (int64_t k = 0; k < d; ++k) m += x[i * d + k];
    m /= d;
    for (int64_t k = 0; k < d; ++k) v += (x[i * d + k] - m) * (x[i * d + k] - m);
    v /= d;
    for (int64_t k = 0; k < d; ++k)
      x[i * d + k] = (x[i * d + k] - m) / std::sqrt(v + eps) * g[k] + b[k];
  }
}

double act(double x, bool gelu) {
  if (gelu) return 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
  return x / (1 + std::exp(-1.702 * x));
}

std::vector<float> reference(const GgufFile& f, const ClipVisionHparams& h,
                             const std::vector<float>& px) {
  Ref r{f};
  const int64_t e = h.n_embd, s = h.image_size, p = h.patch_size, g = s / p, n = g * g;
  const int64_t first = h.class_embd ? 1 : 0, t = n + first, hd = e / h.n_head;
  Vec x(static_cast<size_t>(t * e), 0.0);
  const Vec pw = r.t("v.patch_embd.weight"), pb = r.t("v.patch_embd.bias"),
            pos = r.t("v.position_embd.weight");
  for (int64_t py = 0; py < g; ++py)
    for (int64_t pxi = 0; pxi < g; ++pxi)
      for (int64_t o = 0; o < e; ++o) {
        double acc = pb[o];
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t ky = 0; ky < p; ++ky)
            for (int64_t kx = 0; kx < p; ++kx)
              acc += pw[((o * 3 + c) * p + ky) * p + kx] *
                     px[(c * s + py * p + ky) * s + pxi * p + kx];
        x[(first + py * g + pxi) * e + o] = acc;
      }
  if (h.class_embd) {
    const Vec cls = r.t("v.class_embd");
    std::copy(cls.begin(), cls.end(), x.begin());
  }
  for (size_t i = 0; i < x.size(); ++i) x[i] += pos[i];
  if (h.pre_ln) layer_norm(x, t, e, r.t("v.pre_ln.weight"), r.t("v.pre_ln.bias"), h.eps);
  for (int64_t l = 0; l < h.blocks_run(); ++l) {
    auto W = [&](const char* m) { return r.t(fmt::format("v.blk.{}.{}", l, m)); };
    Vec nx = x;
    layer_norm(nx, t, e, W("ln1.weight"), W("ln1.bias"), h.eps);
    const Vec bq = W("attn_q.bias"), bk = W("attn_k.bias"), bv = W("attn_v.bias"),
              bo = W("attn_out.bias");
    const Vec q = lin(nx, t, W("attn_q.weight"), &bq, e),
              k = lin(nx, t, W("attn_k.weight"), &bk, e),
              v = lin(nx, t, W("attn_v.weight"), &bv, e);
    Vec att(static_cast<size_t>(t * e), 0.0);
    for (int64_t hh = 0; hh < h.n_head; ++hh)
      for (int64_t i = 0; i < t; ++i) {
        Vec sc(static_cast<size_t>(t));
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < t; ++j) {
          double d = 0;
          for (int64_t c = 0; c < hd; ++c) d += q[i * e + hh * hd + c] * k[j * e + hh * hd + c];
          sc[j] = d / std::sqrt(double(hd));
          mx = std::max(mx, sc[j]);
        }
        for (int64_t j = 0; j < t; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
        for (int64_t j = 0; j < t; ++j)
          for (int64_t c = 0; c < hd; ++c)
            att[i * e + hh * hd + c] += sc[j] / sum * v[j * e + hh * hd + c];
      }
    const Vec o = lin(att, t, W("attn_out.weight"), &bo, e);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    nx = x;
    layer_norm(nx, t, e, W("ln2.weight"), W("ln2.bias"), h.eps);
    const Vec bu = W("ffn_up.bias"), bd = W("ffn_down.bias");
    Vec up = lin(nx, t, W("ffn_up.weight"), &bu, h.n_ff);
    for (double& u : up) u = act(u, h.use_gelu);
    const Vec dn = lin(up, t, W("ffn_down.weight"), &bd, e);
    for (size_t i = 0; i < x.size(); ++i) x[i] += dn[i];
  }
  if (h.post_ln) layer_norm(x, t, e, r.t("v.post_ln.weight"), r.t("v.post_ln.bias"), h.eps);
  Vec out;
  if (h.projector == VisionProjector::kGemma3) {
    const int64_t k = h.pool, go = g / k;
    Vec pooled(static_cast<size_t>(go * go * e), 0.0);
    for (int64_t y = 0; y < g; ++y)
      for (int64_t xx = 0; xx < g; ++xx)
        for (int64_t c = 0; c < e; ++c)
          pooled[((y / k) * go + xx / k) * e + c] += x[(y * g + xx) * e + c] / (k * k);
    const Vec sn = r.t("mm.soft_emb_norm.weight"),
              ip = r.t("mm.input_projection.weight");  // [E, D]
    for (int64_t i = 0; i < go * go; ++i) {
      double ms = 0;
      for (int64_t c = 0; c < e; ++c) ms += pooled[i * e + c] * pooled[i * e + c];
      const double inv = 1 / std::sqrt(ms / e + h.eps);
      for (int64_t c = 0; c < e; ++c) pooled[i * e + c] *= inv * sn[c];
    }
    out.assign(static_cast<size_t>(go * go * h.n_out), 0.0);
    for (int64_t i = 0; i < go * go; ++i)
      for (int64_t d = 0; d < h.n_out; ++d)
        for (int64_t c = 0; c < e; ++c)
          out[i * h.n_out + d] += pooled[i * e + c] * ip[c * h.n_out + d];
  } else {
    const Vec patches(x.begin() + first * e, x.end()), b0 = r.t("mm.0.bias"), b2 = r.t("mm.2.bias");
    Vec mid = lin(patches, n, r.t("mm.0.weight"), &b0, h.n_mm_ff);
    for (double& m : mid) m = act(m, true);
    out = lin(mid, n, r.t("mm.2.weight"), &b2, h.n_out);
  }
  return std::vector<float>(out.begin(), out.end());
}

std::vector<float> test_pixels(int64_t s) {
  std::vector<float> px(static_cast<size_t>(3 * s * s));
  for (size_t i = 0; i < px.size(); ++i) px[i] = std::sin(0.05f * static_cast<float>(i)) * 1.5f;
  return px;
}

void check_against_reference(VisionProjector p) {
  const std::string path = write_tiny(vision_projector_name(p), tiny(p));
  auto m = load_vision_encoder(path, 2);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ClipVisionHparams& h = (*m)->hparams;
  EXPECT_EQ(h.n_tokens(), p == VisionProjector::kGemma3 ? 16 : 64);
  ThreadPool pool(2);
  const std::vector<float> px = test_pixels(h.image_size);
  const std::vector<float> got =
      clip_vision_forward({select_kernels(), pool}, h, (*m)->weights, px.data());
  const std::vector<float> want = reference((*m)->file, h, px);
  ASSERT_EQ(got.size(), static_cast<size_t>(h.n_tokens() * h.n_out));
  EXPECT_LT(testing::rel_diff(got, want), 1e-4);
}

// The projector table: each row found by its file name, and the prompt markers and
// attention the server and the CLI frame image rows with (mtmd's).
TEST(ClipVision, ProjectorTableNamesAndMarkers) {
  for (VisionProjector p : {VisionProjector::kGemma3, VisionProjector::kMlp}) {
    const VisionProjectorInfo& info = vision_projector_info(p);
    EXPECT_EQ(info.projector, p);
    EXPECT_EQ(find_vision_projector(info.name), &info);
    EXPECT_STREQ(vision_projector_name(p), info.name);
  }
  const VisionProjectorInfo& gemma3 = vision_projector_info(VisionProjector::kGemma3);
  EXPECT_STREQ(gemma3.image_begin, "<start_of_image>");
  EXPECT_STREQ(gemma3.image_end, "<end_of_image>");
  EXPECT_TRUE(gemma3.bidirectional);
  const VisionProjectorInfo& mlp = vision_projector_info(VisionProjector::kMlp);
  EXPECT_STREQ(mlp.image_begin, "");
  EXPECT_STREQ(mlp.image_end, "");
  EXPECT_FALSE(mlp.bidirectional);
  EXPECT_EQ(find_vision_projector("ldp"), nullptr);
}

TEST(ClipVision, Gemma3MatchesTheScalarGraph) {
  check_against_reference(VisionProjector::kGemma3);
}
TEST(ClipVision, MlpWithClassTokenMatchesTheScalarGraph) {
  check_against_reference(VisionProjector::kMlp);
}

// clip.vision.feature_layer k feeds the hidden state after k blocks to the projector (the
// later stored blocks are not run); without it every block runs.
TEST(ClipVision, FeatureLayerPicksTheHiddenState) {
  RandomVisionProjectorOptions o = tiny(VisionProjector::kMlp);
  o.feature_layer = 1;
  auto one = load_vision_encoder(write_tiny("feature1", o), 2);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ((*one)->hparams.blocks_run(), 1);
  o.feature_layer = 0;
  auto all = load_vision_encoder(write_tiny("feature_all", o), 2);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_EQ((*all)->hparams.blocks_run(), 2);
  ThreadPool pool(2);
  const std::vector<float> px = test_pixels(o.image_size);
  const std::vector<float> a =
      clip_vision_forward({select_kernels(), pool}, (*one)->hparams, (*one)->weights, px.data());
  const std::vector<float> b =
      clip_vision_forward({select_kernels(), pool}, (*all)->hparams, (*all)->weights, px.data());
  EXPECT_LT(testing::rel_diff(a, reference((*one)->file, (*one)->hparams, px)), 1e-4);
  EXPECT_GT(testing::rel_diff(a, b), 1e-2);  // the second block is not run
}

TEST(ClipVision, Q8_0AndF16FilesStayCloseToF32) {
  ThreadPool pool(2);
  for (VisionProjector p : {VisionProjector::kGemma3, VisionProjector::kMlp}) {
    std::vector<float> ref;
    for (DType dt : {DType::F32, DType::F16, DType::Q8_0}) {
      RandomVisionProjectorOptions o = tiny(p);
      o.dtype = dt;
      auto m = load_vision_encoder(
          write_tiny(std::string(vision_projector_name(p)) + dtype_name(dt), o), 2);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      const std::vector<float> px = test_pixels(o.image_size);
      const std::vector<float> got =
          clip_vision_forward({select_kernels(), pool}, (*m)->hparams, (*m)->weights, px.data());
      if (dt == DType::F32)
        ref = got;
      else
        EXPECT_LT(testing::rel_diff(got, ref), 0.05)
            << vision_projector_name(p) << " " << dtype_name(dt);
    }
  }
}

TEST(ClipVision, FootprintCountsWeightsAndActivations) {
  RandomVisionProjectorOptions o = tiny(VisionProjector::kGemma3);
  const std::string f32 = write_tiny("fp32", o);
  o.dtype = DType::Q8_0;
  const std::string q8 = write_tiny("fpq8", o);
  auto a = vision_encoder_footprint(f32), b = vision_encoder_footprint(q8);
  ASSERT_TRUE(a.ok() && b.ok());
  auto m = load_vision_encoder(f32, 1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(a->weights_mapped, (*m)->weight_bytes);   // every plain tensor stays mapped
  EXPECT_EQ(a->weights_anon, uint64_t{32 * 64 * 4});  // the transposed input projection
  EXPECT_GT(b->weights_anon, a->weights_anon);        // Q8_0 matrices are repacked
  EXPECT_EQ(a->activations, (*m)->activation_bytes());
  EXPECT_GT(a->activations, uint64_t{65 * 6 * 32 * 4});
}

// Rewrites a projector file with `edit` applied to the tensor list / keys.
std::string rewrite(const std::string& src, const std::string& name, const std::string& drop,
                    const std::string& key, uint32_t key_value) {
  auto f = GgufFile::open(src);
  EXPECT_TRUE(f.ok());
  GgufWriter w;
  for (const auto& [k, v] : f->metadata()) w.set_value(k, v);
  if (!key.empty()) w.set_u32(key, key_value);
  for (const TensorView& t : f->tensors().all())
    if (t.name != drop) EXPECT_TRUE(w.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
  const std::string out = testing::temp_dir("clip_bad_" + name) + "/bad.gguf";
  EXPECT_TRUE(w.write(out).ok());
  return out;
}

TEST(ClipVision, BadFilesAreRefusedNamingTheKeyOrTensor) {
  const std::string good = write_tiny("schema", tiny(VisionProjector::kGemma3));
  auto missing = load_vision_encoder(rewrite(good, "missing", "v.blk.1.ffn_down.weight", "", 0), 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("v.blk.1.ffn_down.weight"), std::string::npos)
      << missing.status().to_string();
  auto shape = load_vision_encoder(rewrite(good, "shape", "", "clip.vision.projection_dim", 48), 1);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("mm.input_projection.weight"), std::string::npos)
      << shape.status().to_string();
  auto feature =
      load_vision_encoder(rewrite(good, "feature", "", "clip.vision.feature_layer", 3), 1);
  ASSERT_FALSE(feature.ok());  // not an array of one layer index
  EXPECT_NE(feature.status().message().find("clip.vision.feature_layer"), std::string::npos)
      << feature.status().to_string();
  auto key = load_vision_encoder(rewrite(good, "key", "", "clip.vision.patch_size", 5), 1);
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("clip.vision.patch_size"), std::string::npos)
      << key.status().to_string();
}

}  // namespace
}  // namespace edge
