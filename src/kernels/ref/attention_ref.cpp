// Scalar causal attention with optional sliding window and GQA, one (query, head) per task.
#include <algorithm>

#include "kernels/ref/ref_kernels.h"

namespace edge::ref {

void attention(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch) {
  const int64_t q_stride = static_cast<int64_t>(a.n_head) * a.head_dim;
  const int64_t kv_stride = static_cast<int64_t>(a.n_head_kv) * a.head_dim;
  const int32_t group = a.n_head / a.n_head_kv;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t qi = t / a.n_head;
    const int32_t h = static_cast<int32_t>(t % a.n_head);
    const int64_t pos = a.pos0 + qi;
    const int64_t lo = a.window > 0 ? std::max<int64_t>(0, pos - a.window + 1) : 0;
    const float* q = a.q + qi * q_stride + static_cast<int64_t>(h) * a.head_dim;
    const int64_t kv_off = static_cast<int64_t>(h / group) * a.head_dim;
    // scores[j - lo] for keys lo..pos: [pos - lo + 1]
    const int64_t n_keys = pos - lo + 1;
    for (int64_t j = lo; j <= pos; ++j)
      scratch[j - lo] = dot(q, a.k + j * kv_stride + kv_off, a.head_dim) * a.scale;
    softmax(scratch, n_keys);
    float* o = a.out + qi * q_stride + static_cast<int64_t>(h) * a.head_dim;
    std::fill(o, o + a.head_dim, 0.0f);
    for (int64_t j = lo; j <= pos; ++j) {
      const float p = scratch[j - lo];
      const float* v = a.v + j * kv_stride + kv_off;
      for (int32_t d = 0; d < a.head_dim; ++d) o[d] += p * v[d];
    }
  }
}

}  // namespace edge::ref
