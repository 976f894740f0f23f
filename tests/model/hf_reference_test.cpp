// An independent oracle for the families without an external reference: a naive
// double-precision forward written from the Hugging Face modelling semantics (HF tensor
// names, rotate-half RoPE, Gemma's x*(1+w) norms, layer_types, per-type theta and partial
// rotary), reading config.json and model.safetensors directly — none of the engine's
// config parsing, name mapping or kernels. The engine's logits (from the HF directory and
// from the GGUF file) must match it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "formats/hf_config.h"
#include "model_test_util.h"

namespace edge {
namespace {

using Mat = std::vector<double>;  // row-major

struct HfRef {
  nlohmann::json cfg;
  std::map<std::string, Mat> w;
  std::map<std::string, std::vector<int64_t>> shape;
  bool gemma = false;

  const Mat& at(const std::string& n) const {
    auto it = w.find(n);
    if (it == w.end()) ADD_FAILURE() << "no tensor " << n;
    return it->second;
  }
  int64_t rows(const std::string& n) const { return shape.at(n)[0]; }

  // y[out] = W[out, in] x[in] (+ b)
  std::vector<double> linear(const std::string& name, const std::vector<double>& x) const {
    const Mat& m = at(name + ".weight");
    const int64_t out = rows(name + ".weight"), in = static_cast<int64_t>(x.size());
    std::vector<double> y(out, 0.0);
    for (int64_t r = 0; r < out; ++r)
      for (int64_t i = 0; i < in; ++i) y[r] += m[r * in + i] * x[i];
    if (w.count(name + ".bias"))
      for (int64_t r = 0; r < out; ++r) y[r] += at(name + ".bias")[r];
    return y;
  }

  void rmsnorm(double* x, int64_t n, const std::string& name) const {
    const Mat& g = at(name);
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
    const double inv = 1.0 / std::sqrt(ss / n + cfg["rms_norm_eps"].get<double>());
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] * inv * (gemma ? 1.0 + g[i] : g[i]);
  }

  // HF apply_rotary_pos_emb on the first rd dims: x*cos + rotate_half(x)*sin.
  static void rope(double* x, int rd, double theta, int64_t pos) {
    std::vector<double> y(x, x + rd);
    for (int i = 0; i < rd; ++i) {
      const int j = i % (rd / 2);
      const double ang = pos / std::pow(theta, 2.0 * j / rd);
      const double rot = i < rd / 2 ? -y[i + rd / 2] : y[i - rd / 2];
      x[i] = y[i] * std::cos(ang) + rot * std::sin(ang);
    }
  }

  std::vector<std::vector<double>> forward(const std::vector<int32_t>& toks) const;
};

std::vector<std::vector<double>> HfRef::forward(const std::vector<int32_t>& toks) const {
  const int64_t D = cfg["hidden_size"], H = cfg["num_attention_heads"],
                KV = cfg["num_key_value_heads"], hd = cfg["head_dim"], L = cfg["num_hidden_layers"];
  const int64_t T = static_cast<int64_t>(toks.size());
  const Mat& emb = at("model.embed_tokens.weight");
  std::vector<std::vector<double>> x(T, std::vector<double>(D));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < D; ++i) x[t][i] = emb[toks[t] * D + i] * (gemma ? std::sqrt(double(D)) : 1.0);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    bool sliding = false;
    double theta = cfg.value("rope_theta", 10000.0), partial = cfg.value("partial_rotary_factor", 1.0);
    if (gemma && cfg["layer_types"][l] == "sliding_attention") {
      sliding = true;
      theta = cfg["rope_local_base_freq"];
      partial = cfg.value("local_partial_rotary_factor", 1.0);
    }
    const int rd = static_cast<int>(std::lround(hd * partial));
    const int64_t window = sliding ? cfg["sliding_window"].get<int64_t>() : T + 1;
    const double scale = 1.0 / std::sqrt(gemma ? cfg["query_pre_attn_scalar"].get<double>() : double(hd));
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> h = x[t];
      rmsnorm(h.data(), D, p + "input_layernorm.weight");
      q[t] = linear(p + "self_attn.q_proj", h);
      k[t] = linear(p + "self_attn.k_proj", h);
      v[t] = linear(p + "self_attn.v_proj", h);
      for (int64_t hh = 0; hh < H; ++hh) {
        if (w.count(p + "self_attn.q_norm.weight")) rmsnorm(&q[t][hh * hd], hd, p + "self_attn.q_norm.weight");
        rope(&q[t][hh * hd], rd, theta, t);
      }
      for (int64_t hh = 0; hh < KV; ++hh) {
        if (w.count(p + "self_attn.k_norm.weight")) rmsnorm(&k[t][hh * hd], hd, p + "self_attn.k_norm.weight");
        rope(&k[t][hh * hd], rd, theta, t);
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> att(H * hd, 0.0);
      for (int64_t hh = 0; hh < H; ++hh) {
        const int64_t kh = hh / (H / KV);
        std::vector<double> s;
        for (int64_t j = 0; j <= t; ++j) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i) d += q[t][hh * hd + i] * k[j][kh * hd + i];
          s.push_back(t - j < window ? d * scale : -INFINITY);
        }
        double mx = -INFINITY, sum = 0;
        for (double e : s) mx = std::max(mx, e);
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = 0; j <= t; ++j)
          for (int64_t i = 0; i < hd; ++i) att[hh * hd + i] += s[j] / sum * v[j][kh * hd + i];
      }
      std::vector<double> o = linear(p + "self_attn.o_proj", att);
      if (gemma) rmsnorm(o.data(), D, p + "post_attention_layernorm.weight");
      for (int64_t i = 0; i < D; ++i) x[t][i] += o[i];
      std::vector<double> h = x[t];
      rmsnorm(h.data(), D, p + (gemma ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight"));
      std::vector<double> g = linear(p + "mlp.gate_proj", h), u = linear(p + "mlp.up_proj", h);
      for (size_t i = 0; i < g.size(); ++i) {
        const double a = g[i];
        g[i] = (gemma ? 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)))
                      : a / (1 + std::exp(-a))) * u[i];
      }
      std::vector<double> f = linear(p + "mlp.down_proj", g);
      if (gemma) rmsnorm(f.data(), D, p + "post_feedforward_layernorm.weight");
      for (int64_t i = 0; i < D; ++i) x[t][i] += f[i];
    }
  }
  const std::string head = w.count("lm_head.weight") ? "lm_head" : "model.embed_tokens";
  std::vector<std::vector<double>> logits;
  for (int64_t t = 0; t < T; ++t) {
    rmsnorm(x[t].data(), D, "model.norm.weight");
    logits.push_back(linear(head, x[t]));
  }
  return logits;
}

HfRef read_hf(const std::string& dir) {
  HfRef r;
  auto d = HfModelDir::open(dir);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  r.cfg = d->config;
  r.gemma = r.cfg["model_type"] != "llama" && r.cfg["model_type"] != "qwen2" && r.cfg["model_type"] != "qwen3";
  for (const TensorView& t : d->weights.tensors().all()) {
    EXPECT_EQ(t.dtype, DType::F32) << t.name;
    const float* f = reinterpret_cast<const float*>(t.data);
    r.w[t.name] = Mat(f, f + t.numel());
    r.shape[t.name] = t.shape;
  }
  return r;
}

class HfReference : public ::testing::TestWithParam<std::string> {};

TEST_P(HfReference, EngineMatchesNaiveHfForward) {
  RandomModelOptions o;
  o.arch = GetParam();
  o.n_layer = 4;  // spark: 3 sliding + 1 global; gemma3 (pattern 2 here): 2 + 2
  o.sliding_pattern = o.arch == "gemma3" ? 2 : 0;
  o.n_embd = 32;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.head_dim = 16;
  o.n_ff = 48;
  o.n_vocab = 420;
  o.sliding_window = 4;
  o.seed = 5;
  const std::string dir = testing::temp_dir("hfref_" + GetParam());
  ASSERT_TRUE(write_random_model(o, dir + "/hf").ok());
  ASSERT_TRUE(write_random_model(o, dir + "/m.gguf").ok());
  HfRef ref = read_hf(dir + "/hf");
  const std::vector<int32_t> toks = testing::test_tokens(10, o.n_vocab, 11);
  const auto want = ref.forward(toks);
  for (const char* src : {"/hf", "/m.gguf"}) {
    auto m = testing::load_or_die(dir + src);
    ASSERT_TRUE(m);
    const std::vector<float> got = testing::prefill_logits(*m, toks);
    ASSERT_EQ(got.size(), toks.size() * o.n_vocab);
    double worst = 0, scale = 0;
    for (size_t t = 0; t < toks.size(); ++t)
      for (int32_t i = 0; i < o.n_vocab; ++i) {
        worst = std::max(worst, std::abs(got[t * o.n_vocab + i] - want[t][i]));
        scale = std::max(scale, std::abs(want[t][i]));
      }
    EXPECT_LT(worst / scale, 1e-4) << src;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfReference,
                         ::testing::Values("llama", "qwen2", "qwen3", "gemma3", "spark"));

}  // namespace
}  // namespace edge
