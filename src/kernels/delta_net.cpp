// The shape arithmetic and the gate pre-computation of kernels/delta_net.h (the parallel
// drivers are beside the other drivers in dispatch.cpp).
#include "kernels/delta_net.h"

#include <algorithm>
#include <cmath>

namespace edge {

int64_t delta_net_conv_state_floats(const DeltaNetShape& s) {
  return int64_t{s.conv_kernel - 1} * s.conv_channels();
}

int64_t delta_net_recurrent_state_floats(const DeltaNetShape& s) {
  return int64_t{s.n_v_heads} * s.d_k * s.d_v;
}

int64_t delta_net_state_bytes(const DeltaNetShape& s) {
  return static_cast<int64_t>(sizeof(float)) *
         (delta_net_conv_state_floats(s) + delta_net_recurrent_state_floats(s));
}

int64_t delta_net_scratch_floats(const DeltaNetShape& s) {
  // The chunk-wise form: q', k' [C, d_k], k'^T [d_k, C], Q'S0, K'S0, D [C, d_v], Q'K'^T,
  // K'K'^T [C, C], gc [C] (the layout of delta::Kernels::ChunkScratch); the reference's
  // token loop: 2 (d_k + d_v).
  constexpr int64_t C = kDeltaNetChunk;
  const int64_t chunk = 3 * C * (int64_t{s.d_k} + s.d_v) + 2 * C * C + C;
  return std::max<int64_t>(chunk, 2 * (int64_t{s.d_k} + s.d_v));
}

void delta_net_gates(const float* a, const float* b, const float* A_log, const float* dt_bias,
                     int64_t n, int32_t n_v_heads, float* g, float* beta) {
  for (int64_t t = 0; t < n; ++t)
    for (int32_t h = 0; h < n_v_heads; ++h) {
      const int64_t i = t * n_v_heads + h;
      const float x = a[i] + dt_bias[h];
      const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
      g[i] = -std::exp(A_log[h]) * softplus;
      beta[i] = 1.0f / (1.0f + std::exp(-b[i]));
    }
}

}  // namespace edge
