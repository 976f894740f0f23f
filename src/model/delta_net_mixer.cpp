#include "model/delta_net_mixer.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/thread_pool.h"

namespace edge {

namespace {

template <typename V>
void fit(V& v, int64_t size) {
  if (static_cast<int64_t>(v.size()) < size) v.resize(static_cast<size_t>(size));
}

// Rows from which the gated norm is split over the pool (prefill), as the forward's
// elementwise work.
constexpr int64_t kParallelRowsFrom = 16;

}  // namespace

DeltaNetMixer::DeltaNetMixer(const ModelConfig& c, int64_t max_tokens) {
  if (c.n_recurrent_layers() == 0) return;
  const DeltaNetShape& s = c.linear;
  fit(qkv_, max_tokens * s.conv_channels());
  fit(z_, max_tokens * s.value_dim());
  fit(alpha_, max_tokens * s.n_v_heads);
  fit(beta_, max_tokens * s.n_v_heads);
  fit(o_, max_tokens * s.value_dim());
  if (c.linear_fused_qkvz) {
    fit(qkvz_, max_tokens * (s.conv_channels() + s.value_dim()));
    fit(ba_, max_tokens * 2 * s.n_v_heads);
  }
}

int64_t DeltaNetMixer::scratch_bytes_for(const ModelConfig& c, int64_t max_tokens) {
  if (c.n_recurrent_layers() == 0) return 0;
  const DeltaNetShape& s = c.linear;
  int64_t per_token = s.conv_channels() + 2 * s.value_dim() + 2 * int64_t{s.n_v_heads};
  if (c.linear_fused_qkvz) per_token *= 2;  // qkvz_ and ba_ hold the same floats once more
  return max_tokens * per_token * static_cast<int64_t>(sizeof(float));
}

uint64_t DeltaNetMixer::scratch_bytes() const {
  return (qkv_.capacity() + z_.capacity() + alpha_.capacity() + beta_.capacity() + o_.capacity() +
          qkvz_.capacity() + ba_.capacity()) *
         sizeof(float);
}

// In place: alpha -> g = a * softplus(alpha + dt) (a = -exp(A_log) < 0, so g <= 0), beta ->
// sigmoid(beta). softplus(x) is x above 20, as torch's. [n, H] scalars: nothing to
// vectorise for next to the projections.
void DeltaNetMixer::gates(const ModelConfig& c, const LayerWeights& w, int64_t n) {
  const int32_t H = c.linear.n_v_heads;
  for (int64_t t = 0; t < n; ++t)
    for (int32_t h = 0; h < H; ++h) {
      const int64_t i = t * H + h;
      const float x = alpha_[static_cast<size_t>(i)] + w.ssm_dt[static_cast<size_t>(h)];
      const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
      alpha_[static_cast<size_t>(i)] = w.ssm_a[static_cast<size_t>(h)] * softplus;
      beta_[static_cast<size_t>(i)] = 1.0f / (1.0f + std::exp(-beta_[static_cast<size_t>(i)]));
    }
}

// The delta rule of every slice: single decode tokens of all sequences in one region,
// each longer slice chunk-wise on its own (its heads split among the threads).
void DeltaNetMixer::delta_rule(const ModelConfig& c, const KernelTable& k,
                               std::span<const DeltaNetSlice> slices, ThreadPool& pool) {
  const DeltaNetShape& s = c.linear;
  const int64_t C = s.conv_channels(), V = s.value_dim(), H = s.n_v_heads;
  const int64_t conv_floats = delta_net_conv_state_floats(s);
  decode_.clear();
  for (const DeltaNetSlice& sl : slices) {
    DeltaNetArgs a;
    a.shape = s;
    a.qkv = qkv_.data() + sl.t0 * C;
    a.qkv_stride = C;
    a.g = alpha_.data() + sl.t0 * H;
    a.beta = beta_.data() + sl.t0 * H;
    a.state = sl.state + conv_floats;
    a.out = o_.data() + sl.t0 * V;
    a.n = sl.n;
    if (sl.snapshots) {  // token by token (the decode form), the state kept after each
      const int64_t delta_floats = delta_net_recurrent_state_floats(s);
      delta_net_decode_kept(k, a, sl.snapshots + conv_floats, conv_floats + delta_floats, pool);
    } else if (sl.n == 1) {
      decode_.push_back(a);
    } else {
      delta_net_prefill(k, a, pool);
    }
  }
  if (!decode_.empty()) delta_net_decode(k, decode_, pool);
}

// The projections into qkv_ [n, C] (q, k, v channels), z_ [n, V], alpha_ and beta_ [n, H].
// Qwen3-Next's fused ssm_in row of a token is, per key head kh, [q (d_k), k (d_k), v (r d_v),
// z (r d_v)] with r = H / K value heads; ssm_ba's is per key head [beta (r), alpha (r)].
// Value head kh r + j is then the j-th of key head kh: the grouped order.
void DeltaNetMixer::project(const ModelConfig& c, const LayerWeights& w, const KernelTable& k,
                            const float* xn, int64_t n, ThreadPool& pool) {
  if (!c.linear_fused_qkvz) {
    const TensorView* ws[4] = {&w.ssm_qkv, &w.ssm_z, &w.ssm_alpha, &w.ssm_beta};
    float* ys[4] = {qkv_.data(), z_.data(), alpha_.data(), beta_.data()};
    return matmul_group(k, xn, n, ws, ys, pool);
  }
  const DeltaNetShape& s = c.linear;
  const TensorView* ws[2] = {&w.ssm_in, &w.ssm_ba};
  float* ys[2] = {qkvz_.data(), ba_.data()};
  matmul_group(k, xn, n, ws, ys, pool);
  const int64_t K = s.n_k_heads, H = s.n_v_heads, r = H / K, dk = s.d_k;
  const int64_t C = s.conv_channels(), V = s.value_dim(), vr = r * s.d_v;
  const int64_t per_kh = 2 * dk + 2 * vr;
  for (int64_t t = 0; t < n; ++t) {
    const float* in = qkvz_.data() + t * (C + V);
    const float* ba = ba_.data() + t * 2 * H;
    float* qkv = qkv_.data() + t * C;
    for (int64_t kh = 0; kh < K; ++kh) {
      const float* g = in + kh * per_kh;
      std::copy_n(g, dk, qkv + kh * dk);                        // q
      std::copy_n(g + dk, dk, qkv + K * dk + kh * dk);          // k
      std::copy_n(g + 2 * dk, vr, qkv + 2 * K * dk + kh * vr);  // v of its r value heads
      std::copy_n(g + 2 * dk + vr, vr, z_.data() + t * V + kh * vr);
      std::copy_n(ba + kh * 2 * r, r, beta_.data() + t * H + kh * r);
      std::copy_n(ba + kh * 2 * r + r, r, alpha_.data() + t * H + kh * r);
    }
  }
}

void DeltaNetMixer::run(const ModelConfig& c, const LayerWeights& w, const KernelTable& k,
                        const float* xn, int64_t n, std::span<const DeltaNetSlice> slices, float* y,
                        ThreadPool& pool) {
  const DeltaNetShape& s = c.linear;
  const int64_t C = s.conv_channels();
  project(c, w, k, xn, n, pool);
  const int64_t conv_floats = delta_net_conv_state_floats(s);
  const int64_t state_floats = conv_floats + delta_net_recurrent_state_floats(s);
  for (const DeltaNetSlice& sl : slices) {
    CHECK(sl.state != nullptr && sl.t0 >= 0 && sl.n > 0 && sl.t0 + sl.n <= n);
    if (sl.snapshots) {  // token by token, the conv state kept after each
      for (int64_t t = 0; t < sl.n; ++t) {
        DeltaConvArgs a;
        a.x = a.out = qkv_.data() + (sl.t0 + t) * C;
        a.w = w.ssm_conv.data();
        a.state = sl.state;
        a.n = 1;
        a.channels = C;
        a.kernel = s.conv_kernel;
        k.delta_conv(a, 0, C);
        std::copy_n(sl.state, conv_floats, sl.snapshots + t * state_floats);
      }
      continue;
    }
    DeltaConvArgs a;
    a.x = qkv_.data() + sl.t0 * C;
    a.w = w.ssm_conv.data();
    a.state = sl.state;
    a.out = qkv_.data() + sl.t0 * C;
    a.n = sl.n;
    a.channels = C;
    a.kernel = s.conv_kernel;
    // A decode token's conv is C x K multiply-adds: cheaper on this thread than a fork/join.
    if (sl.n == 1)
      k.delta_conv(a, 0, C);
    else
      delta_net_conv(k, a, pool);
  }
  gates(c, w, n);
  delta_rule(c, k, slices, pool);
  // Gated RMSNorm per value head: rows [n * H, d_v].
  const int64_t rows = n * s.n_v_heads;
  auto norm = [&](int64_t r0, int64_t r1) {
    k.rmsnorm_gated(o_.data() + r0 * s.d_v, w.ssm_norm.data(), z_.data() + r0 * s.d_v,
                    o_.data() + r0 * s.d_v, r1 - r0, s.d_v, c.norm_eps);
  };
  if (n < kParallelRowsFrom || pool.size() == 1) {
    norm(0, rows);
  } else {
    pool.run([&](int tid, int nth) {
      const auto [r0, r1] = ThreadPool::split(rows, tid, nth);
      if (r0 < r1) norm(r0, r1);
    });
  }
  matmul(k, o_.data(), n, w.ssm_out, y, pool);
}

}  // namespace edge
