// A naive Qwen3-TTS talker + code predictor for tests, written from Qwen's modelling code
// independently of src/model: F32 weights read by their HF names, every step recomputes
// the whole sequence (no KV cache), rotate-half RoPE at positions 0..n-1, causal GQA
// attention, greedy decoding with the repetition penalty and Qwen's masks. Slow and
// simple, so that a wrong order of operations in the engine shows as different codes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "formats/hf_config.h"
#include "model/arch/qwen3_tts.h"

namespace edge::testing {

class Qwen3TtsReference {
 public:
  Qwen3TtsReference(const HfModelDir& d, const Qwen3TtsConfig& c) : d_(d), c_(c) {}

  // Matrix [rows, cols] (or vector) by HF name, as F32.
  std::vector<float> w(const std::string& name) const {
    const TensorView* t = d_.weights.tensors().find(name);
    EXPECT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dtype, DType::F32) << name;
    std::vector<float> v(static_cast<size_t>(t->numel()));
    std::memcpy(v.data(), t->data, v.size() * 4);
    return v;
  }
  // y[n, out] = x[n, in] W^T (+ b).
  static std::vector<float> linear(const std::vector<float>& x, int64_t n,
                                   const std::vector<float>& wt, int64_t out,
                                   const std::vector<float>* b = nullptr) {
    const int64_t in = static_cast<int64_t>(x.size()) / n;
    std::vector<float> y(static_cast<size_t>(n * out));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        double s = b ? (*b)[o] : 0.0;
        for (int64_t k = 0; k < in; ++k) s += double(x[i * in + k]) * wt[o * in + k];
        y[i * out + o] = static_cast<float>(s);
      }
    return y;
  }
  static void rmsnorm(float* x, int64_t d, const float* g, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += double(x[i]) * x[i];
    const double r = 1.0 / std::sqrt(ss / d + eps);
    for (int64_t i = 0; i < d; ++i) x[i] = static_cast<float>(x[i] * r) * g[i];
  }
  std::vector<float> row(const std::string& name, int64_t id, int64_t width) const {
    const std::vector<float> t = w(name);
    return std::vector<float>(t.begin() + id * width, t.begin() + (id + 1) * width);
  }

  // Final-normed hidden rows [n, E] of the decoder under prefix over input rows x [n, E].
  std::vector<float> decoder(const ModelConfig& m, const std::string& prefix,
                             std::vector<float> x) const {
    const int64_t e = m.n_embd, hd = m.head_dim, nh = m.n_head, nkv = m.n_head_kv;
    const int64_t n = static_cast<int64_t>(x.size()) / e;
    for (int l = 0; l < m.n_layer; ++l) {
      const std::string p = prefix + "layers." + std::to_string(l) + ".";
      std::vector<float> xn = x;
      const std::vector<float> g1 = w(p + "input_layernorm.weight");
      for (int64_t i = 0; i < n; ++i) rmsnorm(&xn[i * e], e, g1.data(), m.norm_eps);
      std::vector<float> q = linear(xn, n, w(p + "self_attn.q_proj.weight"), nh * hd);
      std::vector<float> k = linear(xn, n, w(p + "self_attn.k_proj.weight"), nkv * hd);
      const std::vector<float> v = linear(xn, n, w(p + "self_attn.v_proj.weight"), nkv * hd);
      const std::vector<float> qn = w(p + "self_attn.q_norm.weight"),
                               kn = w(p + "self_attn.k_norm.weight");
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t h = 0; h < nh; ++h) rope(&q[(i * nh + h) * hd], hd, qn.data(), m, i);
        for (int64_t h = 0; h < nkv; ++h) rope(&k[(i * nkv + h) * hd], hd, kn.data(), m, i);
      }
      std::vector<float> att(static_cast<size_t>(n * nh * hd), 0.0f);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t h = 0; h < nh; ++h) {
          const int64_t kh = h / (nh / nkv);
          std::vector<double> s(static_cast<size_t>(i + 1));
          double mx = -1e30, sum = 0;
          for (int64_t j = 0; j <= i; ++j) {
            double d = 0;
            for (int64_t t = 0; t < hd; ++t)
              d += double(q[(i * nh + h) * hd + t]) * k[(j * nkv + kh) * hd + t];
            s[j] = d / std::sqrt(double(hd));
            mx = std::max(mx, s[j]);
          }
          for (double& z : s) sum += z = std::exp(z - mx);
          for (int64_t j = 0; j <= i; ++j)
            for (int64_t t = 0; t < hd; ++t)
              att[(i * nh + h) * hd + t] +=
                  static_cast<float>(s[j] / sum * v[(j * nkv + kh) * hd + t]);
        }
      const std::vector<float> o = linear(att, n, w(p + "self_attn.o_proj.weight"), e);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      xn = x;
      const std::vector<float> g2 = w(p + "post_attention_layernorm.weight");
      for (int64_t i = 0; i < n; ++i) rmsnorm(&xn[i * e], e, g2.data(), m.norm_eps);
      std::vector<float> gate = linear(xn, n, w(p + "mlp.gate_proj.weight"), m.n_ff);
      const std::vector<float> up = linear(xn, n, w(p + "mlp.up_proj.weight"), m.n_ff);
      for (size_t i = 0; i < gate.size(); ++i)
        gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
      const std::vector<float> down = linear(gate, n, w(p + "mlp.down_proj.weight"), e);
      for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
    }
    const std::vector<float> gf = w(prefix + "norm.weight");
    for (int64_t i = 0; i < n; ++i) rmsnorm(&x[i * e], e, gf.data(), m.norm_eps);
    return x;
  }

  // text ids -> linear_fc2(silu(linear_fc1(text_embedding))) rows [n, E].
  std::vector<float> text_rows(const std::vector<int32_t>& ids) const {
    const int64_t th = c_.text_hidden, n = static_cast<int64_t>(ids.size());
    std::vector<float> x;
    for (int32_t id : ids) {
      const std::vector<float> r = row("talker.model.text_embedding.weight", id, th);
      x.insert(x.end(), r.begin(), r.end());
    }
    const std::vector<float> b1 = w("talker.text_projection.linear_fc1.bias"),
                             b2 = w("talker.text_projection.linear_fc2.bias");
    std::vector<float> y = linear(x, n, w("talker.text_projection.linear_fc1.weight"), th, &b1);
    for (float& z : y) z = z / (1.0f + std::exp(-z));
    return linear(y, n, w("talker.text_projection.linear_fc2.weight"), c_.talker.n_embd, &b2);
  }
  std::vector<float> codec(int32_t id) const {
    return row("talker.model.codec_embedding.weight", id, c_.talker.n_embd);
  }

  // Greedy frames [n_frames, groups] for the non-streaming CustomVoice prompt.
  std::vector<int32_t> generate(const std::vector<int32_t>& chat, const std::string& speaker,
                                const std::string& language, int frames, float penalty) const;

 private:
  static void rope(float* x, int64_t hd, const float* norm, const ModelConfig& m, int64_t pos) {
    rmsnorm(x, hd, norm, m.norm_eps);
    const double theta = m.layers[0].rope_theta;
    for (int64_t j = 0; j < hd / 2; ++j) {
      const double a = pos * std::pow(theta, -2.0 * j / hd);
      const double x1 = x[j], x2 = x[j + hd / 2];
      x[j] = static_cast<float>(x1 * std::cos(a) - x2 * std::sin(a));
      x[j + hd / 2] = static_cast<float>(x2 * std::cos(a) + x1 * std::sin(a));
    }
  }
  const HfModelDir& d_;
  const Qwen3TtsConfig& c_;
};

inline std::vector<int32_t> Qwen3TtsReference::generate(const std::vector<int32_t>& chat,
                                                        const std::string& speaker,
                                                        const std::string& language, int frames,
                                                        float penalty) const {
  const int64_t e = c_.talker.n_embd, pe = c_.predictor.n_embd, cb = c_.predictor.n_vocab;
  const Qwen3TtsLanguage* lang = c_.find_language(language);
  std::vector<int32_t> codec_ids = {c_.codec.think,
                                    c_.codec.think_bos,
                                    lang->codec_id,
                                    c_.codec.think_eos,
                                    c_.find_speaker(speaker)->codec_id,
                                    c_.codec.pad,
                                    c_.codec.bos};
  const std::vector<float> special = text_rows({c_.text.tts_pad, c_.text.tts_bos, c_.text.tts_eos});
  auto add = [](std::vector<float>& a, const std::vector<float>& b, int64_t off) {
    for (size_t i = 0; i < b.size(); ++i) a[off + i] += b[i];
  };
  std::vector<float> seq = text_rows({chat[0], chat[1], chat[2]});
  for (size_t j = 0; j + 1 < codec_ids.size(); ++j) {
    std::vector<float> r(special.begin() + (j + 2 < codec_ids.size() ? 0 : e),
                         special.begin() + (j + 2 < codec_ids.size() ? e : 2 * e));
    add(r, codec(codec_ids[j]), 0);
    seq.insert(seq.end(), r.begin(), r.end());
  }
  std::vector<int32_t> text(chat.begin() + 3, chat.end() - 5);
  std::vector<float> tr = text_rows(text);
  tr.insert(tr.end(), special.begin() + 2 * e, special.end());
  for (size_t i = 0; i <= text.size(); ++i)
    add(tr, codec(c_.codec.pad), static_cast<int64_t>(i) * e);
  seq.insert(seq.end(), tr.begin(), tr.end());
  std::vector<float> last(special.begin(), special.begin() + e);
  add(last, codec(c_.codec.bos), 0);
  seq.insert(seq.end(), last.begin(), last.end());

  std::vector<int32_t> out, seen;
  const std::vector<float> head = w("talker.codec_head.weight");
  for (int f = 0; f < frames; ++f) {
    const std::vector<float> hs = decoder(c_.talker, "talker.model.", seq);
    const std::vector<float> h(hs.end() - e, hs.end());
    std::vector<float> lg = linear(h, 1, head, c_.talker.n_vocab);
    for (int32_t id : seen) lg[id] = lg[id] < 0 ? lg[id] * penalty : lg[id] / penalty;
    for (int64_t id = cb; id < c_.talker.n_vocab; ++id)
      if (id != c_.codec.eos || f < 2) lg[id] = -INFINITY;
    std::vector<int32_t> frame = {
        static_cast<int32_t>(std::max_element(lg.begin(), lg.end()) - lg.begin())};
    if (frame[0] == c_.codec.eos) break;
    if (std::find(seen.begin(), seen.end(), frame[0]) == seen.end()) seen.push_back(frame[0]);
    // The code predictor over [h, codec(c0)], then its own embedding of each code.
    std::vector<float> cp_in = h, sum = codec(frame[0]);
    const std::vector<float> c0 = codec(frame[0]);
    cp_in.insert(cp_in.end(), c0.begin(), c0.end());
    for (int g = 1; g < c_.n_code_groups; ++g) {
      std::vector<float> x = cp_in;
      if (c_.has_projection()) {
        const std::vector<float> b = w("talker.code_predictor.small_to_mtp_projection.bias");
        x = linear(cp_in, static_cast<int64_t>(cp_in.size()) / e,
                   w("talker.code_predictor.small_to_mtp_projection.weight"), pe, &b);
      }
      const std::vector<float> ph = decoder(c_.predictor, "talker.code_predictor.model.", x);
      const std::vector<float> lgc = linear(std::vector<float>(ph.end() - pe, ph.end()), 1,
                                            w(qwen3_tts_predictor_head_name(g - 1)), cb);
      frame.push_back(static_cast<int32_t>(std::max_element(lgc.begin(), lgc.end()) - lgc.begin()));
      const std::vector<float> emb =
          row(qwen3_tts_predictor_embedding_name(g - 1), frame.back(), e);
      cp_in.insert(cp_in.end(), emb.begin(), emb.end());
      add(sum, emb, 0);
    }
    out.insert(out.end(), frame.begin(), frame.end());
    add(sum, std::vector<float>(special.begin(), special.begin() + e), 0);  // + tts_pad
    seq.insert(seq.end(), sum.begin(), sum.end());
  }
  return out;
}

}  // namespace edge::testing
