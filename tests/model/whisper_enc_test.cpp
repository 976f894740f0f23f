// The Whisper-style audio encoder and its ultravox / qwen2a projectors: a random-weight
// projector file in llama.cpp's clip layout loads, its forward pass matches a plain scalar
// implementation of the graph in whisper_enc.h, and bad files are refused by name.
#include "model/arch/whisper_enc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "convert/random_audio_projector.h"
#include "core/thread_pool.h"
#include "formats/wav.h"
#include "kernels/api.h"
#include "model/audio_input.h"
#include "model/model_test_util.h"

namespace edge {
namespace {

using Vec = std::vector<float>;

RandomAudioProjectorOptions tiny(AudioProjector p) {
  RandomAudioProjectorOptions o;
  o.projector = p;
  o.n_embd = 32;
  o.n_ff = 48;
  o.n_head = 4;
  o.n_layer = 2;
  o.n_mel = 16;
  o.n_ctx = 12;
  o.n_out = 24;
  o.stack = 3;
  o.n_mm_ff = 20;
  return o;
}

std::string write_tiny(const std::string& name, const RandomAudioProjectorOptions& o) {
  const std::string path = testing::temp_dir("whisper_" + name) + "/mmproj.gguf";
  const Status st = write_random_audio_projector(o, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return path;
}

void remove_file_dir(const std::string& path) {
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

// ---- a scalar reference of the graph, in double, straight from the file's tensors ----

struct Ref {
  const TensorSet& t;
  Vec get(const std::string& name) const {  // F32 copy of any tensor
    const TensorView* v = t.find(name);
    EXPECT_NE(v, nullptr) << name;
    Vec out(static_cast<size_t>(v->numel()));
    reference_kernels().convert_row(v->dtype, v->data, v->numel(), out.data());
    return out;
  }
};

// x [t][in] -> [t][out] with w [out][in], optional b.
Vec lin(const Vec& x, int64_t t, const Vec& w, const Vec* b, int64_t out) {
  const int64_t in = static_cast<int64_t>(w.size()) / out;
  Vec y(static_cast<size_t>(t * out));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? (*b)[o] : 0.0;
      for (int64_t k = 0; k < in; ++k) s += double{x[i * in + k]} * w[o * in + k];
      y[i * out + o] = static_cast<float>(s);
    }
  return y;
}

float gelu(float x) {
  return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
}

void norm_rows(Vec& x, int64_t rows, int64_t d, double eps, const Vec& g, const Vec* b) {
  for (int64_t r = 0; r < rows; ++r) {
    float* p = x.data() + r * d;
    double mean = 0, var = 0;
    if (b) {
      for (int64_t i = 0; i < d; ++i) mean += p[i];
      mean /= d;
    }
    for (int64_t i = 0; i < d; ++i) var += (p[i] - mean) * (p[i] - mean);
    var /= d;
    for (int64_t i = 0; i < d; ++i)
      p[i] = static_cast<float>((p[i] - mean) / std::sqrt(var + eps) * g[i] + (b ? (*b)[i] : 0.0));
  }
}

// conv1d k3 pad 1 stride s over x [c_in][t] (channel-major) -> [t_out][c_out], GELU.
Vec conv(const Vec& x, int64_t c_in, int64_t t, const Vec& w, const Vec& b, int64_t c_out,
         int64_t stride) {
  const int64_t t_out = (t - 1) / stride + 1;
  Vec y(static_cast<size_t>(t_out * c_out));
  for (int64_t o = 0; o < t_out; ++o)
    for (int64_t co = 0; co < c_out; ++co) {
      double s = b[co];
      for (int64_t ci = 0; ci < c_in; ++ci)
        for (int64_t j = 0; j < 3; ++j) {
          const int64_t src = o * stride + j - 1;
          if (src >= 0 && src < t) s += double{w[(co * c_in + ci) * 3 + j]} * x[ci * t + src];
        }
      y[o * c_out + co] = gelu(static_cast<float>(s));
    }
  return y;
}

Vec transpose(const Vec& x, int64_t rows, int64_t cols) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[c * rows + r] = x[r * cols + c];
  return y;
}

void ref_block(const Ref& r, const WhisperEncHparams& h, int l, Vec& x, int64_t n) {
  const int64_t e = h.n_embd, hd = h.head_dim();
  auto p = [l](const char* w) { return "a.blk." + std::to_string(l) + "." + w; };
  Vec a = x;
  const Vec l1b = r.get(p("ln1.bias"));
  norm_rows(a, n, e, h.eps, r.get(p("ln1.weight")), &l1b);
  const Vec qb = r.get(p("attn_q.bias")), vb = r.get(p("attn_v.bias")),
            ob = r.get(p("attn_out.bias"));
  const Vec q = lin(a, n, r.get(p("attn_q.weight")), &qb, e);
  const Vec k = lin(a, n, r.get(p("attn_k.weight")), nullptr, e);
  const Vec v = lin(a, n, r.get(p("attn_v.weight")), &vb, e);
  Vec att(x.size(), 0.0f);
  for (int64_t hh = 0; hh < h.n_head; ++hh)
    for (int64_t i = 0; i < n; ++i) {
      std::vector<double> s(static_cast<size_t>(n));
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double d = 0;
        for (int64_t c = 0; c < hd; ++c)
          d += double{q[i * e + hh * hd + c]} * k[j * e + hh * hd + c];
        s[j] = d / std::sqrt(double(hd));
        mx = std::max(mx, s[j]);
      }
      for (double& z : s) sum += (z = std::exp(z - mx));
      for (int64_t c = 0; c < hd; ++c) {
        double o = 0;
        for (int64_t j = 0; j < n; ++j) o += s[j] / sum * v[j * e + hh * hd + c];
        att[i * e + hh * hd + c] = static_cast<float>(o);
      }
    }
  const Vec o = lin(att, n, r.get(p("attn_out.weight")), &ob, e);
  for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
  a = x;
  const Vec lb = r.get(p("ln2.bias")), ub = r.get(p("ffn_up.bias")), db = r.get(p("ffn_down.bias"));
  norm_rows(a, n, e, h.eps, r.get(p("ln2.weight")), &lb);
  Vec mid = lin(a, n, r.get(p("ffn_up.weight")), &ub, h.n_ff);
  for (float& m : mid) m = gelu(m);
  const Vec d = lin(mid, n, r.get(p("ffn_down.weight")), &db, e);
  for (size_t i = 0; i < x.size(); ++i) x[i] += d[i];
}

Vec ref_project(const Ref& r, const WhisperEncHparams& h, Vec x, int64_t n) {
  if (h.projector == AudioProjector::kQwen2a) {
    const Vec fb = r.get("mm.a.fc.bias");
    return lin(x, n, r.get("mm.a.fc.weight"), &fb, h.n_out);
  }
  const int64_t ke = h.stack * h.n_embd, rows = (n + h.stack - 1) / h.stack, half = h.n_mm_ff / 2;
  x.resize(static_cast<size_t>(rows * ke), 0.0f);
  norm_rows(x, rows, ke, 1e-6, r.get("mm.a.norm_pre.weight"), nullptr);
  const Vec m = lin(x, rows, r.get("mm.a.mlp.1.weight"), nullptr, h.n_mm_ff);
  Vec g(static_cast<size_t>(rows * half));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < half; ++c) {
      const float b = m[i * h.n_mm_ff + half + c];
      g[i * half + c] = m[i * h.n_mm_ff + c] * b / (1.0f + std::exp(-b));
    }
  norm_rows(g, rows, half, 1e-6, r.get("mm.a.norm_mid.weight"), nullptr);
  return lin(g, rows, r.get("mm.a.mlp.2.weight"), nullptr, h.n_out);
}

Vec reference_forward(const TensorSet& t, const WhisperEncHparams& h, const Vec& mel,
                      int64_t frames) {
  const Ref r{t};
  const int64_t e = h.n_embd;
  const Vec c1 =
      conv(mel, h.n_mel, frames, r.get("a.conv1d.1.weight"), r.get("a.conv1d.1.bias"), e, 1);
  Vec x = conv(transpose(c1, frames, e), e, frames, r.get("a.conv1d.2.weight"),
               r.get("a.conv1d.2.bias"), e, 2);
  int64_t n = frames / 2;
  const Vec pos = r.get("a.position_embd.weight");
  for (int64_t i = 0; i < n * e; ++i) x[i] += pos[i];
  for (int l = 0; l < h.n_layer; ++l) ref_block(r, h, l, x, n);
  if (h.projector == AudioProjector::kQwen2a) {
    Vec p(static_cast<size_t>(n / 2 * e));
    for (int64_t i = 0; i < n / 2; ++i)
      for (int64_t c = 0; c < e; ++c)
        p[i * e + c] = 0.5f * (x[2 * i * e + c] + x[(2 * i + 1) * e + c]);
    x = p;
    n /= 2;
  }
  const Vec pb = r.get("a.post_ln.bias");
  norm_rows(x, n, e, h.eps, r.get("a.post_ln.weight"), &pb);
  Vec out = ref_project(r, h, x, n);
  out.resize(static_cast<size_t>(h.tokens_for_frames(frames) * h.n_out));
  return out;
}

Vec random_mel(int64_t n_mel, int64_t frames) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 0.5f);
  Vec m(static_cast<size_t>(n_mel * frames));
  for (float& v : m) v = d(rng);
  return m;
}

float max_abs(const Vec& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::abs(x));
  return m;
}

void check_against_reference(AudioProjector p, int64_t frames, int64_t expect_tokens) {
  const std::string path = write_tiny(audio_projector_name(p), tiny(p));
  auto m = load_audio_encoder(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const WhisperEncHparams& h = m->hparams;
  EXPECT_EQ(h.projector, p);
  EXPECT_EQ(h.n_ctx, 12);
  EXPECT_EQ(h.tokens_for_frames(frames), expect_tokens);
  const Vec mel = random_mel(h.n_mel, frames);
  ThreadPool pool(2);
  const Vec got = whisper_enc_forward({select_kernels(), pool}, h, m->weights, mel.data(), frames);
  const Vec want = reference_forward(m->file.tensors(), h, mel, frames);
  ASSERT_EQ(got.size(), static_cast<size_t>(expect_tokens * h.n_out));
  ASSERT_EQ(want.size(), got.size());
  float err = 0;
  for (size_t i = 0; i < got.size(); ++i) err = std::max(err, std::abs(got[i] - want[i]));
  EXPECT_LT(err, 1e-4f * std::max(1.0f, max_abs(want))) << "max |diff| " << err;
  EXPECT_GT(max_abs(want), 0.1f);  // not a degenerate all-zero output
  remove_file_dir(path);
}

TEST(WhisperEnc, UltravoxMatchesScalarReference) {
  // 22 frames -> 11 positions -> 4 stacked rows of 3; llama.cpp's count ceil(22/3)/2 = 4.
  check_against_reference(AudioProjector::kUltravox, 22, 4);
}

TEST(WhisperEnc, Qwen2aMatchesScalarReference) {
  check_against_reference(AudioProjector::kQwen2a, 24, 6);  // 24 -> 12 -> pool 6
}

TEST(WhisperEnc, F16AndQ8_0WeightsCloseToF32) {
  // Q8_0 matrices (the 3-D conv kernels stay F16, as llama.cpp writes them) are repacked
  // at load and run through the packed matmul. Widths are multiples of 32 for Q8_0 rows.
  ThreadPool pool(1);
  const Vec mel = random_mel(32, 24);
  Vec ref;
  for (DType dt : {DType::F32, DType::F16, DType::Q8_0}) {
    RandomAudioProjectorOptions o = tiny(AudioProjector::kUltravox);
    o.n_mel = 32;
    o.n_ff = 64;
    o.n_out = 32;
    o.n_mm_ff = 64;
    o.stack = 2;
    o.dtype = dt;
    const std::string path = write_tiny(std::string("dt_") + dtype_name(dt), o);
    auto m = load_audio_encoder(path);
    ASSERT_TRUE(m.ok()) << dtype_name(dt) << ": " << m.status().to_string();
    if (dt == DType::Q8_0) EXPECT_GT(m->prepared.repacked, 0);
    const Vec y =
        whisper_enc_forward({select_kernels(), pool}, m->hparams, m->weights, mel.data(), 24);
    remove_file_dir(path);
    if (dt == DType::F32) {
      ref = y;
      continue;
    }
    ASSERT_EQ(y.size(), ref.size());
    EXPECT_LT(testing::rel_diff(y, ref), 0.05) << dtype_name(dt);
  }
}

TEST(WhisperEnc, FootprintCountsWeightsAndOneChunksActivations) {
  RandomAudioProjectorOptions o = tiny(AudioProjector::kUltravox);
  o.n_mel = 32;
  o.n_ff = 64;
  o.n_out = 32;
  o.n_mm_ff = 64;
  const std::string f32 = write_tiny("fp_f32", o);
  o.dtype = DType::Q8_0;
  const std::string q8 = write_tiny("fp_q8", o);
  auto a = audio_encoder_footprint(f32), b = audio_encoder_footprint(q8);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(a->weights_mapped, 0u);
  EXPECT_EQ(a->weights_anon, 0u);
  EXPECT_GT(b->weights_anon, 0u);  // Q8_0 matrices are repacked
  // At least 30 s of samples three times over, and the block activations at 1500 positions.
  EXPECT_GT(a->activations, 3u * 480000u * 4u);
  EXPECT_EQ(a->activations, b->activations);
  remove_file_dir(f32);
  remove_file_dir(q8);
}

TEST(WhisperEnc, EncodeAudioGivesOneChunkPer30Seconds) {
  RandomAudioProjectorOptions o = tiny(AudioProjector::kQwen2a);
  o.n_ctx = 1500;
  o.n_mel = 80;
  const std::string path = write_tiny("chunks", o);
  auto m = load_audio_encoder(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  Vec pcm(16000, 0.0f);
  for (size_t i = 0; i < pcm.size(); ++i) pcm[i] = 0.3f * std::sin(0.05f * static_cast<float>(i));
  ThreadPool pool(2);
  int64_t n_tokens = 0;
  auto e = encode_audio({select_kernels(), pool}, *m, pcm.data(), static_cast<int64_t>(pcm.size()),
                        &n_tokens);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(n_tokens, 750);  // 3000 frames -> 1500 -> 750
  EXPECT_EQ(e->size(), static_cast<size_t>(750 * 24));
  remove_file_dir(path);
}

TEST(WhisperEnc, EmbedWavRefusesLongAndBadClips) {
  RandomAudioProjectorOptions o = tiny(AudioProjector::kQwen2a);
  o.n_ctx = 1500;
  const std::string path = write_tiny("embed", o);
  auto m = load_audio_encoder(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ThreadPool pool(1);
  const Vec pcm(2 * 8000, 0.1f);  // 2 s at 8 kHz
  const std::vector<uint8_t> wav = encode_wav16(pcm.data(), static_cast<int64_t>(pcm.size()), 8000);
  auto too_long = embed_wav({select_kernels(), pool}, *m, wav.data(), wav.size(), 1.5);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_long.status().message().find("2.0 s"), std::string::npos)
      << too_long.status().message();
  const uint8_t junk[16] = {'I', 'D', '3', 4};
  auto bad = embed_wav({select_kernels(), pool}, *m, junk, sizeof(junk));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidFormat);
  auto ok = embed_wav({select_kernels(), pool}, *m, wav.data(), wav.size(), 3.0);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->n_tokens, 750);
  EXPECT_EQ(ok->n_embd, 24);
  EXPECT_DOUBLE_EQ(ok->seconds, 2.0);
  remove_file_dir(path);
}

// ---- schema and hparam errors ----

TensorSet edited(const TensorSet& src, const std::string& name, std::vector<int64_t> shape) {
  TensorSet out;
  for (TensorView t : src.all()) {
    if (t.name == name) {
      if (shape.empty()) continue;  // dropped
      t.shape = shape;
    }
    EXPECT_TRUE(out.add(t).ok());
  }
  return out;
}

TEST(WhisperEnc, SchemaNamesMissingAndMisShapedTensors) {
  const std::string path = write_tiny("schema", tiny(AudioProjector::kUltravox));
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  auto h = read_whisper_enc_hparams(*f);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  const TensorSchema s = whisper_enc_schema(*h);
  EXPECT_TRUE(s.check(f->tensors()).ok());
  Status missing = s.check(edited(f->tensors(), "a.blk.1.attn_k.weight", {}));
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("a.blk.1.attn_k.weight"), std::string::npos)
      << missing.message();
  Status shape = s.check(edited(f->tensors(), "mm.a.mlp.2.weight", {24, 12}));
  EXPECT_EQ(shape.code(), StatusCode::kInvalidFormat);
  EXPECT_NE(shape.message().find("mm.a.mlp.2.weight"), std::string::npos);
  EXPECT_NE(shape.message().find("[24, 10]"), std::string::npos) << shape.message();
  EXPECT_NE(shape.message().find("[24, 12]"), std::string::npos) << shape.message();
  Status conv = s.check(edited(f->tensors(), "a.conv1d.1.weight", {32, 80, 3}));
  EXPECT_NE(conv.message().find("[32, 16, 3]"), std::string::npos) << conv.message();
  remove_file_dir(path);
}

TEST(WhisperEnc, HparamErrorsNameTheKey) {
  const std::string dir = testing::temp_dir("whisper_keys");
  auto try_keys = [&](const std::function<void(GgufWriter&)>& fill) {
    GgufWriter w;
    w.set_string("general.architecture", "clip");
    fill(w);
    EXPECT_TRUE(w.write(dir + "/k.gguf").ok());
    auto f = GgufFile::open(dir + "/k.gguf");
    EXPECT_TRUE(f.ok());
    auto h = read_whisper_enc_hparams(*f);
    EXPECT_FALSE(h.ok());
    return h.ok() ? std::string() : h.status().message();
  };
  EXPECT_NE(try_keys([](GgufWriter&) {}).find("clip.has_audio_encoder"), std::string::npos);
  EXPECT_NE(try_keys([](GgufWriter& w) {
              w.set_bool("clip.has_audio_encoder", true);
              w.set_string("clip.projector_type", "mlp");
            }).find("'mlp'"),
            std::string::npos);
  EXPECT_NE(try_keys([](GgufWriter& w) {
              w.set_bool("clip.has_audio_encoder", true);
              w.set_string("clip.projector_type", "qwen2a");
            }).find("clip.audio.embedding_length"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace edge
