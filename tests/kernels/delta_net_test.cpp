// The Gated DeltaNet kernels (kernels/delta_net.h): the recurrence against a hand-worked
// example and an independent double-precision loop, the chunk-wise prefill against the
// token-by-token decode step (chunk boundaries, n not a multiple of 64, a non-zero state,
// more value heads than key heads under both head maps), the conv (prefill then decode)
// against a direct convolution, every SIMD variant against the reference, the parallel
// drivers against single calls, and the state's byte count.
#include "kernels/delta_net.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/delta_net_blocking.h"
#include "kernels/dense_isa.h"
#include "kernels/isa.h"

namespace edge {
namespace {

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// max |got - want| / max |want| (NaN anywhere in got counts as huge).
double scaled_err(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return 1e30;
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  return worst / scale;
}

// Random inputs of one DeltaNet layer for n tokens: conv-output-like q/k/v rows (with a
// stride wider than the q/k/v channels, as when they sit inside a larger buffer), gates
// from delta_net_gates over random logits, and a random non-zero starting state.
struct Inputs {
  DeltaNetShape shape;
  int64_t n = 0, stride = 0;
  std::vector<float> qkv, g, beta, state;

  Inputs(const DeltaNetShape& s, int64_t n_tokens, uint32_t seed) : shape(s), n(n_tokens) {
    stride = s.conv_channels() + 3;
    qkv = randn(static_cast<size_t>(n * stride), seed);
    const size_t nh = static_cast<size_t>(n * s.n_v_heads);
    const auto a = randn(nh, seed + 1), b = randn(nh, seed + 2, 2.0f);
    const auto A_log = randn(static_cast<size_t>(s.n_v_heads), seed + 3, 0.5f);
    const auto dt_bias = randn(static_cast<size_t>(s.n_v_heads), seed + 4);
    g.resize(nh), beta.resize(nh);
    delta_net_gates(a.data(), b.data(), A_log.data(), dt_bias.data(), n, s.n_v_heads, g.data(),
                    beta.data());
    state = randn(static_cast<size_t>(delta_net_recurrent_state_floats(s)), seed + 5, 0.3f);
  }
  DeltaNetArgs args(std::vector<float>* st, std::vector<float>* out) const {
    DeltaNetArgs a;
    a.shape = shape, a.qkv = qkv.data(), a.qkv_stride = stride;
    a.g = g.data(), a.beta = beta.data(), a.n = n;
    *st = state;
    out->assign(static_cast<size_t>(n * shape.value_dim()), NAN);
    a.state = st->data(), a.out = out->data();
    return a;
  }
};

enum class Form { kRecurrent, kChunked };

// Runs one form over all heads in `splits` uneven head ranges; returns the read-out and
// leaves the final state in *state.
std::vector<float> run(const KernelTable& k, Form f, const Inputs& in, std::vector<float>* state,
                       int splits = 1) {
  std::vector<float> out;
  const DeltaNetArgs a = in.args(state, &out);
  std::vector<float> scratch(static_cast<size_t>(delta_net_scratch_floats(in.shape)), NAN);
  const int32_t nv = in.shape.n_v_heads;
  for (int s = 0; s < splits; ++s) {
    const int32_t h0 = nv * s / splits, h1 = nv * (s + 1) / splits;
    (f == Form::kRecurrent ? k.delta_net_recurrent : k.delta_net_chunked)(a, h0, h1,
                                                                          scratch.data());
  }
  return out;
}

// The recurrence in double, written from the formulas of the model's reference code
// (decay, recall, delta, write, read-out), not from the kernels.
void recurrence_f64(const Inputs& in, std::vector<double>* out, std::vector<double>* state) {
  const DeltaNetShape& s = in.shape;
  const int64_t dk = s.d_k, dv = s.d_v;
  state->assign(in.state.begin(), in.state.end());
  out->assign(static_cast<size_t>(in.n * s.value_dim()), 0.0);
  std::vector<double> q(dk), k(dk), mem(dv);
  for (int64_t t = 0; t < in.n; ++t)
    for (int32_t h = 0; h < s.n_v_heads; ++h) {
      const int64_t kh = s.k_head_of(h);
      const float* row = in.qkv.data() + t * in.stride;
      double qq = 0, kk = 0;
      for (int64_t i = 0; i < dk; ++i) {
        q[i] = row[kh * dk + i], k[i] = row[s.key_dim() + kh * dk + i];
        qq += q[i] * q[i], kk += k[i] * k[i];
      }
      for (int64_t i = 0; i < dk; ++i) {
        q[i] /= std::sqrt(qq + 1e-6) * std::sqrt(double(dk));
        k[i] /= std::sqrt(kk + 1e-6);
      }
      double* S = state->data() + h * dk * dv;
      const double decay = std::exp(double(in.g[t * s.n_v_heads + h]));
      const double beta = in.beta[t * s.n_v_heads + h];
      for (int64_t i = 0; i < dk * dv; ++i) S[i] *= decay;
      for (int64_t j = 0; j < dv; ++j) {
        mem[j] = 0;
        for (int64_t i = 0; i < dk; ++i) mem[j] += S[i * dv + j] * k[i];
      }
      const float* v = row + 2 * s.key_dim() + h * dv;
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) S[i * dv + j] += k[i] * beta * (v[j] - mem[j]);
      for (int64_t j = 0; j < dv; ++j) {
        double o = 0;
        for (int64_t i = 0; i < dk; ++i) o += S[i * dv + j] * q[i];
        (*out)[t * s.value_dim() + h * dv + j] = o;
      }
    }
}

std::vector<float> to_f32(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

// Every SIMD dense table this CPU runs (the DeltaNet entries come with them).
std::vector<KernelTable> simd_tables() {
  return simd_dense_kernels();
}

// Shapes: one head each; value heads > key heads (ratio 2 and 4) under both maps; d_k != d_v
// and sizes that are not multiples of a vector (tails); the Qwen3-Next head size.
std::vector<DeltaNetShape> shapes() {
  using M = DeltaNetHeadMap;
  return {
      {1, 1, 16, 16, 4, M::kGrouped},   {2, 4, 32, 24, 4, M::kGrouped},
      {2, 4, 32, 24, 4, M::kTiled},     {1, 4, 20, 36, 4, M::kGrouped},
      {2, 2, 128, 128, 4, M::kGrouped},
  };
}

TEST(DeltaNet, StateBytesOfQwen3Next) {
  // Qwen3-Next-80B-A3B: 16 key heads, 32 value heads, d_k = d_v = 128, conv kernel 4.
  // Conv channels 2 * 16 * 128 + 32 * 128 = 8192; conv state 3 x 8192 floats = 98304 bytes;
  // recurrent state 32 x 128 x 128 floats = 2097152 bytes.
  const DeltaNetShape s{16, 32, 128, 128, 4, DeltaNetHeadMap::kGrouped};
  EXPECT_EQ(s.conv_channels(), 8192);
  EXPECT_EQ(delta_net_conv_state_floats(s), 24576);
  EXPECT_EQ(delta_net_recurrent_state_floats(s), 524288);
  EXPECT_EQ(delta_net_state_bytes(s), 98304 + 2097152);
  // The head maps: consecutive value heads share a key head, or the key heads repeat.
  EXPECT_EQ(s.k_head_of(0), 0);
  EXPECT_EQ(s.k_head_of(1), 0);
  EXPECT_EQ(s.k_head_of(31), 15);
  DeltaNetShape tiled = s;
  tiled.head_map = DeltaNetHeadMap::kTiled;
  EXPECT_EQ(tiled.k_head_of(1), 1);
  EXPECT_EQ(tiled.k_head_of(16), 0);
  EXPECT_EQ(tiled.k_head_of(31), 15);
}

TEST(DeltaNet, GatesAreDecayAndSigmoid) {
  // a + dt_bias = 0: softplus = ln 2; A_log = 0: g = -ln 2 (decay 1/2). b = 0: beta = 1/2.
  // a + dt_bias = 30 > 20: softplus = 30 (torch's threshold); A_log = ln 2: g = -60.
  const float a[2] = {-1.0f, 29.0f}, b[2] = {0.0f, -3.0f};
  const float A_log[2] = {0.0f, std::log(2.0f)}, dt_bias[2] = {1.0f, 1.0f};
  float g[2], beta[2];
  delta_net_gates(a, b, A_log, dt_bias, 1, 2, g, beta);
  EXPECT_NEAR(g[0], -std::log(2.0f), 1e-6);
  EXPECT_NEAR(beta[0], 0.5f, 1e-7);
  EXPECT_NEAR(g[1], -60.0f, 1e-4);
  EXPECT_NEAR(beta[1], 1.0f / (1.0f + std::exp(3.0f)), 1e-7);
}

// Two tokens of one head, d_k = d_v = 2, worked by hand from S0 = I:
//   t0: q = (1, 0), k = (3, 4) -> k' = (0.6, 0.8), v = (1, 2), decay 1/2, beta 1/2
//       S = S0 / 2; S^T k' = (0.3, 0.4); delta = (0.35, 0.8)
//       S = [[0.71, 0.48], [0.28, 1.14]]; o = S^T q' = (0.71, 0.48) / sqrt(2)
//   t1: q = (0, 2) -> q' = (0, 1) / sqrt(2), k = (0, 5) -> k' = (0, 1), v = (2, -1),
//       decay 1, beta 1: S^T k' = (0.28, 1.14); delta = (1.72, -2.14)
//       S = [[0.71, 0.48], [2, -1]] (a full write stores v under k'); o = (2, -1) / sqrt(2)
TEST(DeltaNet, HandWorkedTwoTokens) {
  DeltaNetShape s{1, 1, 2, 2, 4, DeltaNetHeadMap::kGrouped};
  const float qkv[2][6] = {{1, 0, 3, 4, 1, 2}, {0, 2, 0, 5, 2, -1}};
  const float g[2] = {std::log(0.5f), 0.0f}, beta[2] = {0.5f, 1.0f};
  const float r2 = std::sqrt(2.0f);
  const float want_out[4] = {0.71f / r2, 0.48f / r2, 2.0f / r2, -1.0f / r2};
  const float want_state[4] = {0.71f, 0.48f, 2.0f, -1.0f};
  std::vector<const KernelTable*> tables = {&reference_kernels()};
  const std::vector<KernelTable> simd = simd_tables();
  for (const KernelTable& t : simd) tables.push_back(&t);
  for (const KernelTable* k : tables)
    for (Form f : {Form::kRecurrent, Form::kChunked}) {
      float state[4] = {1, 0, 0, 1}, out[4] = {NAN, NAN, NAN, NAN};
      DeltaNetArgs a;
      a.shape = s, a.qkv = &qkv[0][0], a.qkv_stride = 6, a.g = g, a.beta = beta;
      a.state = state, a.out = out, a.n = 2;
      std::vector<float> scratch(static_cast<size_t>(delta_net_scratch_floats(s)));
      (f == Form::kRecurrent ? k->delta_net_recurrent : k->delta_net_chunked)(a, 0, 1,
                                                                              scratch.data());
      for (int i = 0; i < 4; ++i) {
        // 1e-6 under the norm's square root moves q' and k' by < 1e-6 relative.
        EXPECT_NEAR(out[i], want_out[i], 2e-6) << k->name << " form " << int(f) << " out " << i;
        EXPECT_NEAR(state[i], want_state[i], 2e-6) << k->name << " form " << int(f) << " S " << i;
      }
    }
}

TEST(DeltaNet, RecurrenceMatchesIndependentDoubleLoop) {
  uint32_t seed = 100;
  for (const DeltaNetShape& s : shapes()) {
    const Inputs in(s, 37, seed += 10);
    std::vector<double> want_out, want_state;
    recurrence_f64(in, &want_out, &want_state);
    std::vector<float> state;
    const auto out = run(reference_kernels(), Form::kRecurrent, in, &state);
    EXPECT_LT(scaled_err(out, to_f32(want_out)), 2e-5) << s.n_v_heads << "x" << s.d_k;
    EXPECT_LT(scaled_err(state, to_f32(want_state)), 2e-5) << s.n_v_heads << "x" << s.d_k;
  }
}

// The chunk-wise prefill is the same recurrence: 1 token, one chunk less one, exactly one,
// one plus a token, several boundaries with a short last chunk; from a non-zero state.
TEST(DeltaNet, ChunkedPrefillEqualsDecodeStepByStep) {
  uint32_t seed = 200;
  for (const DeltaNetShape& s : shapes())
    for (int64_t n : {1, 63, 64, 65, 200}) {
      if (s.d_k == 128 && n != 200) continue;  // the large head once, over 4 chunks
      const Inputs in(s, n, seed += 10);
      std::vector<float> st_rec, st_chunk;
      const auto want = run(reference_kernels(), Form::kRecurrent, in, &st_rec);
      const auto got = run(reference_kernels(), Form::kChunked, in, &st_chunk);
      EXPECT_LT(scaled_err(got, want), 5e-5) << "n=" << n << " heads " << s.n_v_heads;
      EXPECT_LT(scaled_err(st_chunk, st_rec), 5e-5) << "n=" << n << " heads " << s.n_v_heads;
    }
}

// The hardest case for the triangular solve: every token writes the same key with full
// strength and no decay (beta = 1, g = 0), so each row of (I + A) is all ones below the
// diagonal; and the opposite, a decay so strong that exp(gc) underflows to 0 inside a chunk.
TEST(DeltaNet, ChunkedPrefillStableAtTheExtremes) {
  const DeltaNetShape s{2, 4, 32, 24, 4, DeltaNetHeadMap::kGrouped};
  for (float g : {0.0f, -40.0f}) {
    Inputs in(s, 150, 250);
    for (int64_t t = 1; t < in.n; ++t)
      for (int64_t c = s.key_dim(); c < 2 * s.key_dim(); ++c)
        in.qkv[t * in.stride + c] = in.qkv[c];  // k of token 0, every token
    std::fill(in.g.begin(), in.g.end(), g);
    std::fill(in.beta.begin(), in.beta.end(), 1.0f);
    std::vector<double> want_out, want_state;
    recurrence_f64(in, &want_out, &want_state);
    std::vector<float> st;
    const auto got = run(reference_kernels(), Form::kChunked, in, &st);
    EXPECT_LT(scaled_err(got, to_f32(want_out)), 5e-5) << "g=" << g;
    EXPECT_LT(scaled_err(st, to_f32(want_state)), 5e-5) << "g=" << g;
  }
}

// Value heads > key heads: kGrouped and kTiled equal one key head per value head with the
// q/k channels copied in that order (repeat_interleave / repeat).
TEST(DeltaNet, HeadMapsEqualExplicitlyRepeatedKeys) {
  for (DeltaNetHeadMap map : {DeltaNetHeadMap::kGrouped, DeltaNetHeadMap::kTiled}) {
    const DeltaNetShape s{2, 6, 16, 8, 4, map};
    const Inputs in(s, 70, 300);
    DeltaNetShape full = s;
    full.n_k_heads = s.n_v_heads;
    Inputs rep(full, in.n, 301);
    rep.g = in.g, rep.beta = in.beta, rep.state = in.state;
    for (int64_t t = 0; t < in.n; ++t) {
      const float* src = in.qkv.data() + t * in.stride;
      float* dst = rep.qkv.data() + t * rep.stride;
      for (int32_t h = 0; h < s.n_v_heads; ++h)
        for (int32_t i = 0; i < s.d_k; ++i) {
          dst[h * s.d_k + i] = src[s.k_head_of(h) * s.d_k + i];
          dst[full.key_dim() + h * s.d_k + i] = src[s.key_dim() + s.k_head_of(h) * s.d_k + i];
        }
      for (int64_t j = 0; j < s.value_dim(); ++j)
        dst[2 * full.key_dim() + j] = src[2 * s.key_dim() + j];
    }
    for (Form f : {Form::kRecurrent, Form::kChunked}) {
      std::vector<float> st_a, st_b;
      const auto a = run(reference_kernels(), f, in, &st_a);
      const auto b = run(reference_kernels(), f, rep, &st_b);
      EXPECT_EQ(a, b) << "map " << int(map) << " form " << int(f);
      EXPECT_EQ(st_a, st_b) << "map " << int(map) << " form " << int(f);
    }
  }
}

// Direct causal conv over the whole sequence (history then x), in double.
std::vector<float> direct_conv(const std::vector<float>& hist, const std::vector<float>& x,
                               const std::vector<float>& w, int64_t n, int64_t C, int K) {
  std::vector<float> out(static_cast<size_t>(n * C));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int j = 0; j < K; ++j) {
        const int64_t p = t - (K - 1) + j;  // < 0: from the history (K-1 rows)
        acc += double(w[c * K + j]) * (p >= 0 ? x[p * C + c] : hist[(p + K - 1) * C + c]);
      }
      out[t * C + c] = static_cast<float>(acc / (1.0 + std::exp(-acc)));
    }
  return out;
}

void run_conv(const KernelTable& k, const float* x, const std::vector<float>& w, float* state,
              float* out, int64_t n, int64_t C, int K, int splits) {
  DeltaConvArgs a;
  a.x = x, a.w = w.data(), a.state = state, a.out = out, a.n = n, a.channels = C, a.kernel = K;
  for (int s = 0; s < splits; ++s) k.delta_conv(a, C * s / splits, C * (s + 1) / splits);
}

// A prefill of n0 tokens then decode steps one token at a time, from a non-zero state,
// equal the direct convolution; the state ends as the last K-1 inputs. Every table.
TEST(DeltaNet, ConvPrefillThenDecodeEqualsDirectConvolution) {
  std::vector<const KernelTable*> tables = {&reference_kernels()};
  const std::vector<KernelTable> simd = simd_tables();
  for (const KernelTable& t : simd) tables.push_back(&t);
  for (const KernelTable* k : tables)
    for (int K : {4, 2, 5})
      for (int64_t C : {64, 37}) {
        const int64_t n0 = 9, n = 14;
        const auto x = randn(static_cast<size_t>(n * C), 400 + K);
        const auto w = randn(static_cast<size_t>(C * K), 401 + K, 0.5f);
        std::vector<float> state = randn(static_cast<size_t>((K - 1) * C), 402 + K);
        const auto want = direct_conv(state, x, w, n, C, K);
        std::vector<float> got(x);  // in place: out aliases x
        run_conv(*k, got.data(), w, state.data(), got.data(), n0, C, K, 3);
        for (int64_t t = n0; t < n; ++t)
          run_conv(*k, got.data() + t * C, w, state.data(), got.data() + t * C, 1, C, K, 1);
        EXPECT_LT(scaled_err(got, want), 1e-5) << k->name << " K=" << K << " C=" << C;
        const std::vector<float> last(x.end() - (K - 1) * C, x.end());
        EXPECT_EQ(state, last) << k->name << " K=" << K << " C=" << C;
      }
}

// Rows wider than the conv's channels (the z gate after qkv in one projection output): the
// conv reads and writes only the first `channels` floats of each row.
TEST(DeltaNet, ConvRunsInsideWiderRows) {
  const int64_t C = 37, xs = C + 11, n = 7;
  const int K = 4;
  const auto wide = randn(static_cast<size_t>(n * xs), 450);
  const auto w = randn(static_cast<size_t>(C * K), 451, 0.5f);
  const auto hist = randn(static_cast<size_t>((K - 1) * C), 452);
  std::vector<float> x(static_cast<size_t>(n * C));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < C; ++c) x[t * C + c] = wide[t * xs + c];
  const auto want = direct_conv(hist, x, w, n, C, K);
  std::vector<const KernelTable*> tables = {&reference_kernels()};
  const std::vector<KernelTable> simd = simd_tables();
  for (const KernelTable& t : simd) tables.push_back(&t);
  for (const KernelTable* k : tables) {
    std::vector<float> got = wide, state = hist;
    DeltaConvArgs a;
    a.x = got.data(), a.w = w.data(), a.state = state.data(), a.out = got.data();
    a.n = n, a.channels = C, a.stride = xs, a.kernel = K;
    k->delta_conv(a, 0, C);
    std::vector<float> conv(x.size());
    for (int64_t t = 0; t < n; ++t)
      for (int64_t c = 0; c < xs; ++c) {
        if (c < C)
          conv[t * C + c] = got[t * xs + c];
        else
          EXPECT_EQ(got[t * xs + c], wide[t * xs + c]) << k->name << " wrote past the channels";
      }
    EXPECT_LT(scaled_err(conv, want), 1e-5) << k->name;
  }
}

TEST(DeltaNet, GatedRmsNormMatchesFormula) {
  const int64_t rows = 5, dim = 36;
  const auto x = randn(rows * dim, 500), z = randn(rows * dim, 501), w = randn(dim, 502);
  std::vector<float> want(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + 1e-6);
    for (int64_t i = 0; i < dim; ++i) {
      const double zi = z[r * dim + i];
      want[r * dim + i] =
          static_cast<float>(x[r * dim + i] * inv * w[i] * zi / (1 + std::exp(-zi)));
    }
  }
  std::vector<const KernelTable*> tables = {&reference_kernels()};
  const std::vector<KernelTable> simd = simd_tables();
  for (const KernelTable& t : simd) tables.push_back(&t);
  for (const KernelTable* k : tables) {
    std::vector<float> y(x);  // in place
    k->rmsnorm_gated(y.data(), w.data(), z.data(), y.data(), rows, dim, 1e-6f);
    EXPECT_LT(scaled_err(y, want), 1e-5) << k->name;
  }
}

// One test per compiled dense variant (the DeltaNet entries install with it): both forms
// against the reference on every shape, in uneven head ranges. A variant this CPU cannot
// run is SKIPPED under its own name.
class DeltaNetVariant : public ::testing::TestWithParam<KernelVariant> {};

TEST_P(DeltaNetVariant, MatchesReference) {
  const KernelVariant& v = GetParam();
  const std::string missing = isa_missing_features(v.isa, cpu_info());
  if (!missing.empty()) GTEST_SKIP() << v.name << " not exercised: this CPU lacks " << missing;
  const KernelTable* k = nullptr;
  const std::vector<KernelTable> simd = simd_tables();
  for (const KernelTable& t : simd)
    if (std::string(t.name) == v.name) k = &t;
  ASSERT_NE(k, nullptr) << v.name << " runs here but is not among simd_dense_kernels()";
  uint32_t seed = 600;
  for (const DeltaNetShape& s : shapes())
    for (int64_t n : {1, 3, 100}) {
      const Inputs in(s, n, seed += 10);
      for (Form f : {Form::kRecurrent, Form::kChunked}) {
        std::vector<float> st_ref, st_simd;
        const auto want = run(reference_kernels(), f, in, &st_ref);
        const auto got = run(*k, f, in, &st_simd, 3);
        EXPECT_LT(scaled_err(got, want), 2e-5) << v.name << " form " << int(f) << " n=" << n;
        EXPECT_LT(scaled_err(st_simd, st_ref), 2e-5) << v.name << " form " << int(f);
      }
    }
}

std::vector<KernelVariant> dense_variants() {
  std::vector<KernelVariant> out;
  for (const KernelVariant& v : kernel_variants())
    if (std::string(v.family) == "dense") out.push_back(v);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Isa, DeltaNetVariant, ::testing::ValuesIn(dense_variants()),
                         [](const ::testing::TestParamInfo<KernelVariant>& i) {
                           return std::string(i.param.name);
                         });

// The NEON variant's geometry (4 lanes, 8 vectors per decode block, tails of 1-3 lanes)
// with portable 4-lane primitives, so its use of the shared template is checked on a CPU
// that cannot run NEON (this x86 machine; arm_neon/delta_net_neon.cpp only compiles here).
struct FourLanePrims {
  using V = std::array<float, 4>;
  static constexpr int kW = 4;
  static constexpr int kDecodeVecs = 8;
  static V zero() { return {0, 0, 0, 0}; }
  static V set1(float x) { return {x, x, x, x}; }
  static V load(const float* p) { return {p[0], p[1], p[2], p[3]}; }
  static void store(float* p, V v) { std::copy(v.begin(), v.end(), p); }
  static V load_n(const float* p, int64_t rem) {
    V v = zero();
    for (int64_t i = 0; i < std::min<int64_t>(rem, 4); ++i) v[i] = p[i];
    return v;
  }
  static void store_n(float* p, int64_t rem, V v) {
    for (int64_t i = 0; i < std::min<int64_t>(rem, 4); ++i) p[i] = v[i];
  }
  template <class F>
  static V map(V a, V b, F f) {
    for (int i = 0; i < 4; ++i) a[i] = f(a[i], b[i]);
    return a;
  }
  static V fma(V a, V b, V c) {
    for (int i = 0; i < 4; ++i) c[i] = std::fma(a[i], b[i], c[i]);
    return c;
  }
  static V mul(V a, V b) {
    return map(a, b, [](float x, float y) { return x * y; });
  }
  static V sub(V a, V b) {
    return map(a, b, [](float x, float y) { return x - y; });
  }
  static V silu(V a) {
    return map(a, a, [](float x, float) { return x / (1 + std::exp(-x)); });
  }
  static float hsum(V v) { return (v[0] + v[1]) + (v[2] + v[3]); }
};

TEST(DeltaNet, NeonGeometryEmulatedMatchesReference) {
  KernelTable k = reference_kernels();
  delta::Kernels<FourLanePrims>::install(&k);
  uint32_t seed = 800;
  for (const DeltaNetShape& s : shapes())
    for (int64_t n : {1, 100}) {
      const Inputs in(s, n, seed += 10);
      for (Form f : {Form::kRecurrent, Form::kChunked}) {
        std::vector<float> st_ref, st_emu;
        const auto want = run(reference_kernels(), f, in, &st_ref);
        const auto got = run(k, f, in, &st_emu, 3);
        EXPECT_LT(scaled_err(got, want), 2e-5) << "form " << int(f) << " n=" << n;
        EXPECT_LT(scaled_err(st_emu, st_ref), 2e-5) << "form " << int(f) << " n=" << n;
      }
    }
  const int64_t C = 37, n = 6;  // a 1-lane tail
  const auto x = randn(n * C, 810), w = randn(C * 4, 811);
  std::vector<float> st0 = randn(3 * C, 812), st1 = st0, y0(x.size()), y1(x.size());
  run_conv(reference_kernels(), x.data(), w, st0.data(), y0.data(), n, C, 4, 1);
  run_conv(k, x.data(), w, st1.data(), y1.data(), n, C, 4, 2);
  EXPECT_LT(scaled_err(y1, y0), 1e-6);
  EXPECT_EQ(st1, st0);
}

// The drivers split heads (and sequences) among threads: results equal single calls of the
// table the engine uses, bit for bit.
TEST(DeltaNet, ParallelDriversEqualSingleCalls) {
  const KernelTable& k = select_kernels();
  ThreadPool pool(2);
  const DeltaNetShape s{2, 4, 32, 24, 4, DeltaNetHeadMap::kGrouped};
  const Inputs in(s, 130, 700);
  std::vector<float> st_want, st_got, out_got;
  const auto want = run(k, Form::kChunked, in, &st_want);
  DeltaNetArgs a = in.args(&st_got, &out_got);
  delta_net_prefill(k, a, pool);
  EXPECT_EQ(out_got, want);
  EXPECT_EQ(st_got, st_want);

  // Decode: two sequences of one token, each with its own state.
  const Inputs in0(s, 1, 710), in1(s, 1, 720);
  std::vector<float> w0s, w1s, g0s, g1s, g0o, g1o;
  const auto w0 = run(k, Form::kRecurrent, in0, &w0s), w1 = run(k, Form::kRecurrent, in1, &w1s);
  const DeltaNetArgs as[2] = {in0.args(&g0s, &g0o), in1.args(&g1s, &g1o)};
  delta_net_decode(k, as, pool);
  EXPECT_EQ(g0o, w0);
  EXPECT_EQ(g1o, w1);
  EXPECT_EQ(g0s, w0s);
  EXPECT_EQ(g1s, w1s);

  // A verify step's tokens one by one, the state kept after each: the outputs and states of
  // five single decode steps, bit for bit.
  const Inputs five(s, 5, 740);
  const int64_t sf = delta_net_recurrent_state_floats(s), stride = sf + 7;
  std::vector<float> st_steps = five.state, out_steps(static_cast<size_t>(5 * s.value_dim()));
  std::vector<float> kept_want(static_cast<size_t>(5 * stride), -1.0f);
  std::vector<float> scratch(static_cast<size_t>(delta_net_scratch_floats(s)));
  for (int64_t t = 0; t < 5; ++t) {
    DeltaNetArgs one;
    one.shape = s, one.qkv = five.qkv.data() + t * five.stride, one.qkv_stride = five.stride;
    one.g = five.g.data() + t * s.n_v_heads, one.beta = five.beta.data() + t * s.n_v_heads;
    one.state = st_steps.data(), one.out = out_steps.data() + t * s.value_dim(), one.n = 1;
    k.delta_net_recurrent(one, 0, s.n_v_heads, scratch.data());
    std::copy_n(st_steps.begin(), sf, kept_want.begin() + t * stride);
  }
  std::vector<float> st_kept, out_kept, kept(static_cast<size_t>(5 * stride), -1.0f);
  delta_net_decode_kept(k, five.args(&st_kept, &out_kept), kept.data(), stride, pool);
  EXPECT_EQ(out_kept, out_steps);
  EXPECT_EQ(st_kept, st_steps);
  EXPECT_EQ(kept, kept_want);

  // Conv.
  const int64_t C = 100, n = 5;
  const auto x = randn(n * C, 730), w = randn(C * 4, 731);
  std::vector<float> st0 = randn(3 * C, 732), st1 = st0, y0(x.size()), y1(x.size());
  run_conv(k, x.data(), w, st0.data(), y0.data(), n, C, 4, 1);
  DeltaConvArgs c;
  c.x = x.data(), c.w = w.data(), c.state = st1.data(), c.out = y1.data(), c.n = n;
  c.channels = C, c.kernel = 4;
  delta_net_conv(k, c, pool);
  EXPECT_EQ(y1, y0);
  EXPECT_EQ(st1, st0);
}

}  // namespace
}  // namespace edge
