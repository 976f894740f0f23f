#include "model/moe_routing.h"

#include <algorithm>
#include <cmath>

namespace edge {

namespace {

// Indices of the k largest scores [n] into out (descending; ties: lower index first).
void top_k(const float* score, int32_t n, int32_t k, ExpertChoice* out) {
  for (int32_t j = 0; j < k; ++j) out[j] = {-1, 0.0f};
  for (int32_t e = 0; e < n; ++e) {
    // Insertion into the sorted list of the best so far (k is small: 1 to 16).
    int32_t at = k;
    while (at > 0 && (out[at - 1].expert < 0 || score[e] > score[out[at - 1].expert])) --at;
    if (at == k) continue;
    for (int32_t j = k - 1; j > at; --j) out[j] = out[j - 1];
    out[at] = {e, 0.0f};
  }
}

void softmax_in_place(float* x, int32_t n) {
  float mx = x[0];
  for (int32_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  float sum = 0.0f;
  for (int32_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  for (int32_t i = 0; i < n; ++i) x[i] /= sum;
}

}  // namespace

void route_token(const MoeConfig& m, const float* logits, std::span<const float> selection_bias,
                 float* scratch, ExpertChoice* out) {
  const int32_t n = m.n_expert, k = m.n_expert_used;
  switch (m.gating) {
    case ExpertGating::kSoftmax:
      std::copy_n(logits, n, scratch);
      softmax_in_place(scratch, n);
      top_k(scratch, n, k, out);
      for (int32_t j = 0; j < k; ++j) out[j].weight = scratch[out[j].expert];
      break;
    case ExpertGating::kSoftmaxSelected: {
      top_k(logits, n, k, out);
      float* w = scratch;
      for (int32_t j = 0; j < k; ++j) w[j] = logits[out[j].expert];
      softmax_in_place(w, k);
      for (int32_t j = 0; j < k; ++j) out[j].weight = w[j];
      break;
    }
    case ExpertGating::kSigmoid: {
      // Choose on sigmoid + bias, weigh by the sigmoid alone.
      for (int32_t e = 0; e < n; ++e)
        scratch[e] = 1.0f / (1.0f + std::exp(-logits[e])) +
                     (selection_bias.empty() ? 0.0f : selection_bias[static_cast<size_t>(e)]);
      top_k(scratch, n, k, out);
      for (int32_t j = 0; j < k; ++j)
        out[j].weight = 1.0f / (1.0f + std::exp(-logits[out[j].expert]));
      break;
    }
  }
  if (m.norm_topk) {
    float sum = 0.0f;
    for (int32_t j = 0; j < k; ++j) sum += out[j].weight;
    if (sum > 0.0f)
      for (int32_t j = 0; j < k; ++j) out[j].weight /= sum;
  }
  if (m.weights_scale != 1.0f)
    for (int32_t j = 0; j < k; ++j) out[j].weight *= m.weights_scale;
}

}  // namespace edge
