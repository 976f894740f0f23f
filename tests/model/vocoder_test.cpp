// The WavTokenizer decoder as a Vocoder: loading a random-weight file in llama.cpp's
// layout, schema errors, determinism, and chunked decoding against whole utterances.
#include "model/vocoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "convert/random_vocoder.h"
#include "formats/gguf.h"
#include "model/model_test_util.h"

namespace edge {
namespace {

std::string random_vocoder(const std::string& name, RandomVocoderOptions o = {}) {
  const std::string path = testing::temp_dir("vocoder_" + name) + "/voc.gguf";
  const Status st = write_random_vocoder(o, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return path;
}

std::unique_ptr<Vocoder> load(const std::string& path) {
  auto v = Vocoder::load(path);
  EXPECT_TRUE(v.ok()) << v.status().to_string();
  return v.ok() ? std::move(v).value() : nullptr;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

// Copies a GGUF, letting `edit` drop (return false) or reshape a tensor on the way.
using TensorEdit = std::function<bool(const TensorView&, std::vector<int64_t>* shape)>;
std::string rewrite(const std::string& src, const std::string& name, const TensorEdit& edit,
                    const std::string& drop_key = "") {
  auto f = GgufFile::open(src);
  EXPECT_TRUE(f.ok());
  GgufWriter w;
  for (const auto& [k, v] : f->metadata())
    if (k != drop_key) w.set_value(k, v);
  for (const TensorView& t : f->tensors().all()) {
    std::vector<int64_t> shape = t.shape;
    if (!edit(t, &shape)) continue;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const uint64_t bytes = t.nbytes / t.numel() * n;
    std::vector<uint8_t> data(bytes, 0);
    std::memcpy(data.data(), t.data, std::min(bytes, t.nbytes));
    EXPECT_TRUE(w.add_tensor(t.name, t.dtype, shape, [data](uint8_t* dst, uint64_t nb) {
                   std::memcpy(dst, data.data(), nb);
                   return Status();
                 }).ok());
  }
  const std::string out = testing::temp_dir("vocoder_edit_" + name) + "/voc.gguf";
  EXPECT_TRUE(w.write(out).ok());
  return out;
}

TEST(Vocoder, LoadsLlamaCppLayoutAndDecodesHopSamplesPerCode) {
  auto v = load(random_vocoder("basic"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->hparams().n_vocab, 64);
  EXPECT_EQ(v->hparams().n_fft, 1280);
  EXPECT_EQ(v->samples_per_code(), 320);
  EXPECT_EQ(v->sample_rate(), 24000);
  const std::vector<int32_t> codes = testing::test_tokens(9, 64);
  auto pcm = v->decode(codes);
  ASSERT_TRUE(pcm.ok()) << pcm.status().to_string();
  ASSERT_EQ(pcm->size(), 9u * 320u);
  double energy = 0;
  for (float x : *pcm) {
    ASSERT_TRUE(std::isfinite(x));
    energy += x * x;
  }
  EXPECT_GT(energy / pcm->size(), 1e-8);  // not silence
}

TEST(Vocoder, DeterministicAndSeedDependent) {
  const std::vector<int32_t> codes = testing::test_tokens(12, 64, 3);
  auto a = load(random_vocoder("det_a"));
  auto b = load(random_vocoder("det_b"));
  RandomVocoderOptions other;
  other.seed = 2;
  auto c = load(random_vocoder("det_c", other));
  ASSERT_TRUE(a && b && c);
  auto pa = a->decode(codes), pa2 = a->decode(codes), pb = b->decode(codes), pc = c->decode(codes);
  ASSERT_TRUE(pa.ok() && pa2.ok() && pb.ok() && pc.ok());
  EXPECT_EQ(*pa, *pa2);
  EXPECT_EQ(*pa, *pb);  // same options, separate files: same weights
  EXPECT_GT(max_abs_diff(*pa, *pc), 1e-3f);
}

TEST(Vocoder, F16WeightsDecodeCloseToF32) {
  RandomVocoderOptions o;
  auto f32 = load(random_vocoder("f32", o));
  o.dtype = DType::F16;
  auto f16 = load(random_vocoder("f16", o));
  ASSERT_TRUE(f32 && f16);
  const std::vector<int32_t> codes = testing::test_tokens(10, 64, 5);
  auto a = f32->decode(codes), b = f16->decode(codes);
  ASSERT_TRUE(a.ok() && b.ok());
  float peak = 0;
  for (float x : *a) peak = std::max(peak, std::fabs(x));
  const float d = max_abs_diff(*a, *b);
  EXPECT_LT(d, 0.02f * peak);  // F16 rounding of the weights only
  EXPECT_GT(d, 0.0f);          // and it was read as F16, not silently as something else
}

TEST(Vocoder, MissingTensorIsNamed) {
  const std::string bad =
      rewrite(random_vocoder("missing"), "missing", [](const TensorView& t, std::vector<int64_t>*) {
        return t.name != "posnet.2.attn_k.weight";
      });
  auto v = Vocoder::load(bad);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_NE(v.status().message().find("posnet.2.attn_k.weight"), std::string::npos)
      << v.status().message();
}

TEST(Vocoder, MisShapedTensorIsNamedWithBothShapes) {
  const std::string bad = rewrite(random_vocoder("shape"), "shape",
                                  [](const TensorView& t, std::vector<int64_t>* shape) {
                                    if (t.name == "convnext.1.dw.weight") *shape = {32, 1, 5};
                                    return true;
                                  });
  auto v = Vocoder::load(bad);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidFormat);
  const std::string m = v.status().message();
  EXPECT_NE(m.find("convnext.1.dw.weight"), std::string::npos) << m;
  EXPECT_NE(m.find("[32, 1, 7]"), std::string::npos) << m;
  EXPECT_NE(m.find("[32, 1, 5]"), std::string::npos) << m;
}

TEST(Vocoder, MissingOrInconsistentHparamIsNamed) {
  const auto keep = [](const TensorView&, std::vector<int64_t>*) { return true; };
  auto v = Vocoder::load(rewrite(random_vocoder("hp_missing"), "hp_missing", keep,
                                 "wavtokenizer-dec.features_length"));
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("wavtokenizer-dec.features_length"), std::string::npos)
      << v.status().message();
  // 5 groups do not divide 32 channels: refused at the hparams, before any tensor is read.
  RandomVocoderOptions o;
  o.n_groups = 4;
  const std::string path = random_vocoder("hp_groups", o);
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  GgufWriter w;
  for (const auto& [k, val] : f->metadata()) w.set_value(k, val);
  w.set_u32("wavtokenizer-dec.attention.group_norm_groups", 5);
  for (const TensorView& t : f->tensors().all())
    ASSERT_TRUE(w.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok());
  const std::string bad = testing::temp_dir("vocoder_hp_groups_bad") + "/voc.gguf";
  ASSERT_TRUE(w.write(bad).ok());
  v = Vocoder::load(bad);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("group_norm_groups"), std::string::npos)
      << v.status().message();
}

TEST(Vocoder, RefusesOtherArchitecturesAndBadCodes) {
  const std::string lm = testing::temp_dir("vocoder_lm") + "/lm.gguf";
  ASSERT_TRUE(write_random_model(RandomModelOptions{}, lm).ok());
  auto v = Vocoder::load(lm);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnsupported);
  auto voc = load(random_vocoder("codes"));
  ASSERT_TRUE(voc);
  auto r = voc->decode({1, 2, 64});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  auto s = VocoderStream::create(*voc, {});
  ASSERT_TRUE(s.ok());
  const int32_t neg = -1;
  EXPECT_FALSE(s->decode_chunk(&neg, 1).ok());
}

// Feeds codes in chunks of `chunk` and concatenates everything returned.
std::vector<float> stream_decode(const Vocoder& v, const std::vector<int32_t>& codes, int64_t chunk,
                                 const VocoderStreamOptions& o, int64_t* before_finish = nullptr) {
  auto s = VocoderStream::create(v, o);
  EXPECT_TRUE(s.ok());
  std::vector<float> pcm;
  for (size_t i = 0; i < codes.size(); i += chunk) {
    const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(codes.size() - i));
    auto part = s->decode_chunk(codes.data() + i, n);
    EXPECT_TRUE(part.ok());
    pcm.insert(pcm.end(), part->begin(), part->end());
  }
  if (before_finish) *before_finish = static_cast<int64_t>(pcm.size());
  auto rest = s->finish();
  EXPECT_TRUE(rest.ok());
  pcm.insert(pcm.end(), rest->begin(), rest->end());
  return pcm;
}

TEST(VocoderStream, ExactModeInAnyChunkingEqualsWholeUtterance) {
  auto v = load(random_vocoder("stream_exact"));
  ASSERT_TRUE(v);
  const std::vector<int32_t> codes = testing::test_tokens(45, 64, 11);
  auto whole = v->decode(codes);
  ASSERT_TRUE(whole.ok());
  for (int64_t chunk : {1, 7, 32, 45}) {
    const std::vector<float> pcm = stream_decode(*v, codes, chunk, {});
    EXPECT_LT(max_abs_diff(pcm, *whole), 1e-4f) << "chunk " << chunk;
  }
}

TEST(VocoderStream, WindowedModeIsChunkingInvariantAndStreams) {
  auto v = load(random_vocoder("stream_window"));
  ASSERT_TRUE(v);
  const std::vector<int32_t> codes = testing::test_tokens(45, 64, 13);
  const VocoderStreamOptions o{.window = 8, .context = 6, .lookahead = 3};
  auto whole = v->decode_windowed(codes, o);
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(whole->size(), 45u * 320u);
  for (int64_t chunk : {1, 7, 32, 45}) {
    int64_t early = 0;
    const std::vector<float> pcm = stream_decode(*v, codes, chunk, o, &early);
    EXPECT_LT(max_abs_diff(pcm, *whole), 1e-4f) << "chunk " << chunk;
    if (chunk < 45) {
      EXPECT_GT(early, 0) << "chunk " << chunk << ": no PCM before finish()";
    }
  }
}

TEST(VocoderStream, OneWindowOverTheWholeUtteranceIsExact) {
  auto v = load(random_vocoder("stream_one_window"));
  ASSERT_TRUE(v);
  const std::vector<int32_t> codes = testing::test_tokens(20, 64, 17);
  auto exact = v->decode(codes);
  auto windowed = v->decode_windowed(codes, {.window = 20});
  ASSERT_TRUE(exact.ok() && windowed.ok());
  EXPECT_LT(max_abs_diff(*windowed, *exact), 1e-5f);
}

TEST(VocoderStream, ExactDecodingIsNotCausal) {
  // Why the exact stream returns nothing before finish(): the first code's samples change
  // when later codes arrive (pos-net group norms and attention span the utterance). If
  // this ever fails, the model became causal and the stream could emit earlier.
  auto v = load(random_vocoder("noncausal"));
  ASSERT_TRUE(v);
  const std::vector<int32_t> codes = testing::test_tokens(24, 64, 19);
  auto full = v->decode(codes);
  auto prefix = v->decode(std::vector<int32_t>(codes.begin(), codes.begin() + 12));
  ASSERT_TRUE(full.ok() && prefix.ok());
  const std::vector<float> head(full->begin(), full->begin() + 320);
  const std::vector<float> head_prefix(prefix->begin(), prefix->begin() + 320);
  EXPECT_GT(max_abs_diff(head, head_prefix), 1e-3f);
  int64_t early = -1;
  stream_decode(*v, codes, 5, {}, &early);
  EXPECT_EQ(early, 0);
}

}  // namespace
}  // namespace edge
