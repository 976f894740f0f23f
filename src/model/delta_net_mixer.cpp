#include "model/delta_net_mixer.h"

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
}

int64_t DeltaNetMixer::scratch_bytes_for(const ModelConfig& c, int64_t max_tokens) {
  if (c.n_recurrent_layers() == 0) return 0;
  const DeltaNetShape& s = c.linear;
  const int64_t floats =
      max_tokens * (s.conv_channels() + 2 * s.value_dim() + 2 * int64_t{s.n_v_heads});
  return floats * static_cast<int64_t>(sizeof(float));
}

uint64_t DeltaNetMixer::scratch_bytes() const {
  return (qkv_.capacity() + z_.capacity() + alpha_.capacity() + beta_.capacity() +
          o_.capacity()) *
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
    if (sl.n == 1)
      decode_.push_back(a);
    else
      delta_net_prefill(k, a, pool);
  }
  if (!decode_.empty()) delta_net_decode(k, decode_, pool);
}

void DeltaNetMixer::run(const ModelConfig& c, const LayerWeights& w, const KernelTable& k,
                        const float* xn, int64_t n, std::span<const DeltaNetSlice> slices,
                        float* y, ThreadPool& pool) {
  const DeltaNetShape& s = c.linear;
  const int64_t C = s.conv_channels();
  const TensorView* ws[4] = {&w.ssm_qkv, &w.ssm_z, &w.ssm_alpha, &w.ssm_beta};
  float* ys[4] = {qkv_.data(), z_.data(), alpha_.data(), beta_.data()};
  matmul_group(k, xn, n, ws, ys, pool);
  for (const DeltaNetSlice& sl : slices) {
    CHECK(sl.state != nullptr && sl.t0 >= 0 && sl.n > 0 && sl.t0 + sl.n <= n);
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
