// Scalar causal attention with optional sliding window and GQA over a paged cache of any
// KV element type, one (query, head) per task. Rows are converted to F32 one head slice
// at a time.
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace edge::ref {

// scratch: [n_keys + 2 * head_dim] floats (scores, then a converted K/V slice).
void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch) {
  const int64_t q_stride = static_cast<int64_t>(a.n_head) * a.head_dim;
  const int32_t group = a.n_head / a.n_head_kv;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t qi = t / a.n_head;
    const int32_t h = static_cast<int32_t>(t % a.n_head);
    const int32_t hk = h / group;
    const int64_t pos = a.pos0 + qi;
    const int64_t lo = a.window > 0 ? std::max<int64_t>(0, pos - a.window + 1) : 0;
    const float* q = a.q + qi * q_stride + static_cast<int64_t>(h) * a.head_dim;
    const int64_t n_keys = pos - lo + 1;
    float* scores = scratch;          // [n_keys]: scores[j - lo] for keys lo..pos
    float* row = scratch + n_keys;    // [head_dim]
    for (int64_t j = lo; j <= pos; ++j) {
      kv_load_head(a.k_type, a.k_row(j), a.n_head_kv, a.head_dim, hk, row);
      scores[j - lo] = dot(q, row, a.head_dim) * a.scale;
    }
    if (a.sinks) {
      // The sink joins the max and the denominator, never the values.
      const float sink = a.sinks[h];
      float mx = sink;
      for (int64_t j = 0; j < n_keys; ++j) mx = std::max(mx, scores[j]);
      float sum = std::exp(sink - mx);
      for (int64_t j = 0; j < n_keys; ++j) sum += scores[j] = std::exp(scores[j] - mx);
      for (int64_t j = 0; j < n_keys; ++j) scores[j] /= sum;
    } else {
      softmax(scores, n_keys);
    }
    float* o = a.out + qi * q_stride + static_cast<int64_t>(h) * a.head_dim;
    std::fill(o, o + a.head_dim, 0.0f);
    for (int64_t j = lo; j <= pos; ++j) {
      const float p = scores[j - lo];
      kv_load_head(a.v_type, a.v_row(j), a.n_head_kv, a.head_dim, hk, row);
      for (int32_t d = 0; d < a.head_dim; ++d) o[d] += p * row[d];
    }
  }
}

}  // namespace edge::ref
