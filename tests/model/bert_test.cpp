// BERT-family text encoders (model/arch/bert.h): random-weight files made by
// write_random_bert load as encoders with their WordPiece tokenizer; bert_encode matches a
// plain double-precision implementation of the graph for bert, nomic-bert and the
// cross-encoder head; a batch gives each sequence what it gives alone; bad files and the
// decoder pass are refused by name.
#include "model/arch/bert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "convert/random_bert.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "model/forward.h"
#include "model/model_test_util.h"

namespace edge {
namespace {

using Vec = std::vector<double>;

RandomBertOptions tiny(const std::string& arch, bool rerank = false) {
  RandomBertOptions o;
  o.arch = arch;
  o.n_layer = 2;
  o.n_embd = 32;
  o.n_head = 4;
  o.n_vocab = 300;
  o.ctx = 64;
  o.rerank = rerank;
  o.seed = 5;
  return o;
}

std::string write_tiny(const std::string& name, const RandomBertOptions& o) {
  const std::string path = testing::temp_dir("bert_" + name) + "/model.gguf";
  const Status st = write_random_bert(o, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return path;
}

// ---- the graph of bert.h in double, straight from the file's tensors ----

struct Ref {
  const GgufFile& f;
  Vec get(const std::string& name) const {
    const TensorView* v = f.tensors().find(name);
    EXPECT_NE(v, nullptr) << name;
    std::vector<float> out(static_cast<size_t>(v->numel()));
    reference_kernels().convert_row(v->dtype, v->data, v->numel(), out.data());
    return Vec(out.begin(), out.end());
  }
};

// y [t][out] = x [t][in] w^T (+ b); w [out][in].
Vec lin(const Vec& x, int64_t t, const Vec& w, const Vec* b, int64_t out) {
  const int64_t in = static_cast<int64_t>(w.size()) / out;
  Vec y(static_cast<size_t>(t * out));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? (*b)[o] : 0.0;
      for (int64_t k = 0; k < in; ++k) s += x[i * in + k] * w[o * in + k];
      y[i * out + o] = s;
    }
  return y;
}

void layer_norm(Vec& x, int64_t t, int64_t e, const Vec& g, const Vec& b, double eps) {
  for (int64_t i = 0; i < t; ++i) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < e; ++j) m += x[i * e + j];
    m /= e;
    for (int64_t j = 0; j < e; ++j) v += (x[i * e + j] - m) * (x[i * e + j] - m);
    v /= e;
    for (int64_t j = 0; j < e; ++j) x[i * e + j] = (x[i * e + j] - m) / std::sqrt(v + eps) * g[j] + b[j];
  }
}

void rope_neox(Vec& x, int64_t t, int64_t heads, int64_t hd, double theta) {
  for (int64_t i = 0; i < t; ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t p = 0; p < hd / 2; ++p) {
        const double a = i * std::pow(theta, -2.0 * p / hd);
        double& u = x[(i * heads + h) * hd + p];
        double& v = x[(i * heads + h) * hd + p + hd / 2];
        const double nu = u * std::cos(a) - v * std::sin(a), nv = u * std::sin(a) + v * std::cos(a);
        u = nu, v = nv;
      }
}

Vec attend(const Vec& q, const Vec& k, const Vec& v, int64_t t, int64_t heads, int64_t hd) {
  const int64_t e = heads * hd;
  Vec out(static_cast<size_t>(t * e), 0.0);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < t; ++i) {
      Vec p(static_cast<size_t>(t));
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < t; ++j) {
        double s = 0;
        for (int64_t c = 0; c < hd; ++c) s += q[i * e + h * hd + c] * k[j * e + h * hd + c];
        p[j] = s / std::sqrt(double(hd));
        mx = std::max(mx, p[j]);
      }
      for (double& x : p) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < t; ++j)
        for (int64_t c = 0; c < hd; ++c) out[i * e + h * hd + c] += p[j] / sum * v[j * e + h * hd + c];
    }
  return out;
}

// The final hidden rows [t][E] of one sequence.
Vec reference_hidden(const GgufFile& f, const ModelConfig& c, bool nomic, const std::vector<int32_t>& ids) {
  const Ref r{f};
  const int64_t e = c.n_embd, t = static_cast<int64_t>(ids.size()), ff = c.n_ff, hd = c.head_dim;
  const Vec tok = r.get("token_embd.weight"), types = r.get("token_types.weight");
  const Vec pos = nomic ? Vec() : r.get("position_embd.weight");
  Vec x(static_cast<size_t>(t * e));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < e; ++j)
      x[i * e + j] = tok[ids[i] * e + j] + types[j] + (nomic ? 0.0 : pos[i * e + j]);
  layer_norm(x, t, e, r.get("token_embd_norm.weight"), r.get("token_embd_norm.bias"), c.norm_eps);
  for (int l = 0; l < c.n_layer; ++l) {
    auto n = [l](const char* w, const char* s = "weight") { return layer_name(l, w, s); };
    Vec q, k, v;
    if (nomic) {
      const Vec qkv = lin(x, t, r.get(n("attn_qkv")), nullptr, 3 * e);
      for (int64_t i = 0; i < t; ++i) {
        q.insert(q.end(), qkv.begin() + i * 3 * e, qkv.begin() + i * 3 * e + e);
        k.insert(k.end(), qkv.begin() + i * 3 * e + e, qkv.begin() + i * 3 * e + 2 * e);
        v.insert(v.end(), qkv.begin() + i * 3 * e + 2 * e, qkv.begin() + (i + 1) * 3 * e);
      }
      rope_neox(q, t, c.n_head, hd, c.layers[0].rope_theta);
      rope_neox(k, t, c.n_head, hd, c.layers[0].rope_theta);
    } else {
      const Vec bq = r.get(n("attn_q", "bias")), bk = r.get(n("attn_k", "bias")), bv = r.get(n("attn_v", "bias"));
      q = lin(x, t, r.get(n("attn_q")), &bq, e);
      k = lin(x, t, r.get(n("attn_k")), &bk, e);
      v = lin(x, t, r.get(n("attn_v")), &bv, e);
    }
    const Vec a = attend(q, k, v, t, c.n_head, hd);
    const Vec bo = nomic ? Vec() : r.get(n("attn_output", "bias"));
    const Vec o = lin(a, t, r.get(n("attn_output")), nomic ? nullptr : &bo, e);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    layer_norm(x, t, e, r.get(n("attn_output_norm")), r.get(n("attn_output_norm", "bias")), c.norm_eps);
    Vec mid;
    if (nomic) {
      const Vec g = lin(x, t, r.get(n("ffn_gate")), nullptr, ff);
      mid = lin(x, t, r.get(n("ffn_up")), nullptr, ff);
      for (size_t i = 0; i < mid.size(); ++i) mid[i] *= g[i] / (1 + std::exp(-g[i]));
    } else {
      const Vec bu = r.get(n("ffn_up", "bias"));
      mid = lin(x, t, r.get(n("ffn_up")), &bu, ff);
      for (double& m : mid)
        m = 0.5 * m * (1 + std::tanh(std::sqrt(2 / M_PI) * (m + 0.044715 * m * m * m)));
    }
    const Vec bd = nomic ? Vec() : r.get(n("ffn_down", "bias"));
    const Vec f2 = lin(mid, t, r.get(n("ffn_down")), nomic ? nullptr : &bd, e);
    for (size_t i = 0; i < x.size(); ++i) x[i] += f2[i];
    layer_norm(x, t, e, r.get(n("layer_output_norm")), r.get(n("layer_output_norm", "bias")), c.norm_eps);
  }
  return x;
}

std::vector<float> encode(const Model& m, const std::vector<std::vector<int32_t>>& seqs,
                          EncoderPooling pooling) {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  for (const auto& s : seqs) {
    tokens.insert(tokens.end(), s.begin(), s.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  const BertExec ex{m.kernels(), m.pool()};
  return bert_encode(ex, m.config(), *m.encoder_hparams(), *m.encoder_weights(), tokens, offsets, pooling);
}

class BertFamily : public ::testing::TestWithParam<const char*> {};

TEST_P(BertFamily, LoadsAsAnEncoderAndMatchesTheDoublePrecisionGraph) {
  const std::string arch = GetParam();
  const bool nomic = arch == "nomic-bert";
  const std::string path = write_tiny(arch, tiny(arch));
  auto m = testing::load_or_die(path);
  ASSERT_NE(m, nullptr);
  const ModelConfig& c = m->config();
  EXPECT_TRUE(c.encoder_only);
  EXPECT_EQ(c.arch, arch);
  EXPECT_EQ(c.pooling_type, nomic ? 1 : 2);
  ASSERT_NE(m->tokenizer(), nullptr);
  const Vocab& v = m->tokenizer()->vocab();
  const std::vector<int32_t> ids = m->tokenizer()->encode("Hello world, the cats!", true);
  const std::vector<int32_t> want = {v.cls_id,          v.find("\xE2\x96\x81" "hello"),
                                     v.find("\xE2\x96\x81" "world"), v.find("\xE2\x96\x81" ","),
                                     v.find("\xE2\x96\x81" "the"),   v.find("\xE2\x96\x81" "cat"),
                                     v.find("s"),                 v.find("\xE2\x96\x81" "!"),
                                     v.sep_id};
  EXPECT_EQ(ids, want);

  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  const Vec ref = reference_hidden(*f, c, nomic, ids);
  const int64_t e = c.n_embd, t = static_cast<int64_t>(ids.size());
  for (EncoderPooling p : {EncoderPooling::kMean, EncoderPooling::kCls, EncoderPooling::kLast}) {
    const std::vector<float> got = encode(*m, {ids}, p);
    ASSERT_EQ(got.size(), static_cast<size_t>(e));
    for (int64_t j = 0; j < e; ++j) {
      double want_j = 0;
      if (p == EncoderPooling::kMean) {
        for (int64_t i = 0; i < t; ++i) want_j += ref[i * e + j] / t;
      } else {
        want_j = ref[(p == EncoderPooling::kLast ? t - 1 : 0) * e + j];
      }
      EXPECT_NEAR(got[j], want_j, 2e-4) << "pooling " << int(p) << " value " << j;
    }
  }
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_P(BertFamily, ABatchGivesEachSequenceWhatItGivesAlone) {
  const std::string arch = GetParam();
  const std::string path = write_tiny(arch + "_batch", tiny(arch));
  auto m = testing::load_or_die(path);
  ASSERT_NE(m, nullptr);
  const std::vector<std::vector<int32_t>> seqs = {
      {2, 40, 41, 42, 3}, {2, 50, 3}, {2, 60, 61, 62, 63, 64, 65, 66, 67, 3}};
  const std::vector<float> all = encode(*m, seqs, EncoderPooling::kMean);
  const int64_t e = m->config().n_embd;
  ASSERT_EQ(all.size(), seqs.size() * e);
  for (size_t s = 0; s < seqs.size(); ++s) {
    const std::vector<float> one = encode(*m, {seqs[s]}, EncoderPooling::kMean);
    for (int64_t j = 0; j < e; ++j) EXPECT_NEAR(all[s * e + j], one[j], 1e-5) << s << " " << j;
  }
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

INSTANTIATE_TEST_SUITE_P(Archs, BertFamily, ::testing::Values("bert", "nomic-bert"));

TEST(BertCrossEncoder, RankScoreIsTheHeadOverTheFirstRow) {
  const std::string path = write_tiny("rank", tiny("bert", true));
  auto m = testing::load_or_die(path);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->config().pooling_type, 4);
  ASSERT_TRUE(m->encoder_hparams()->cls_head);
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  const std::vector<std::vector<int32_t>> pairs = {{2, 40, 41, 3, 3, 50, 51, 52, 3},
                                                   {2, 40, 41, 3, 3, 60, 3}};
  const std::vector<float> scores = encode(*m, pairs, EncoderPooling::kRank);
  ASSERT_EQ(scores.size(), 2u);
  const Ref r{*f};
  const int64_t e = m->config().n_embd;
  for (size_t s = 0; s < pairs.size(); ++s) {
    const Vec hid = reference_hidden(*f, m->config(), false, pairs[s]);
    const Vec cls(hid.begin(), hid.begin() + e), b = r.get("cls.bias"), bo = r.get("cls.output.bias");
    Vec d = lin(cls, 1, r.get("cls.weight"), &b, e);
    for (double& x : d) x = std::tanh(x);
    const Vec out = lin(d, 1, r.get("cls.output.weight"), &bo, 1);
    EXPECT_NEAR(scores[s], out[0], 2e-4) << s;
  }
  EXPECT_NE(scores[0], scores[1]);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(BertErrors, TheDecoderPassAndBadFilesAreRefusedByName) {
  const std::string path = write_tiny("errors", tiny("bert"));
  auto m = testing::load_or_die(path);
  ASSERT_NE(m, nullptr);
  auto pass = ForwardPass::create(*m, 16);
  ASSERT_FALSE(pass.ok());
  EXPECT_NE(pass.status().message().find("text encoder"), std::string::npos) << pass.status().to_string();
  // A rank pooling without the head, and a causal "bert", are refused by their keys.
  RandomBertOptions o = tiny("bert");
  o.pooling_type = 4;
  EXPECT_FALSE(write_random_bert(o, testing::temp_dir("bert_bad") + "/x.gguf").ok());
  o = tiny("bert");
  o.arch = "roberta";
  const Status s = write_random_bert(o, testing::temp_dir("bert_bad2") + "/x.gguf");
  EXPECT_NE(s.message().find("roberta"), std::string::npos) << s.to_string();
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace
}  // namespace edge
