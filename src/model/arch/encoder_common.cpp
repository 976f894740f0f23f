#include "model/arch/encoder_common.h"

#include <fmt/format.h>

#include <cmath>

#include "kernels/api.h"
#include "quant/packed.h"

namespace edge {

Expected<int64_t> gguf_positive_int(const GgufFile& f, const std::string& key, int64_t max) {
  auto v = f.get_int(key);
  if (!v) return Status(v.status().code(), key + ": " + v.status().message());
  if (*v <= 0 || *v > max)
    return Status::invalid_format(fmt::format("{} = {}: out of range", key, *v));
  return *v;
}

Status WeightBinder::operator()(const std::string& name, std::vector<float>* out) const {
  const TensorView* v = t_.find(name);
  if (!v) return Status::not_found("missing tensor " + name);
  if (is_packed_dtype(v->dtype))
    return Status::unsupported(fmt::format("tensor {}: a vector must be F32, F16 or BF16", name));
  out->resize(static_cast<size_t>(v->numel()));
  reference_kernels().convert_row(v->dtype, v->data, v->numel(), out->data());
  return Status();
}

Status WeightBinder::operator()(const std::string& name, TensorView* out) const {
  const TensorView* v = t_.find(name);
  if (!v) return Status::not_found("missing tensor " + name);
  *out = *v;
  if (is_packed_dtype(v->dtype)) {  // packed matrices are bound as they are
    if (v->shape.size() == 2) return Status();
    return Status::unsupported(
        fmt::format("tensor {}: a packed {}-D tensor", name, v->shape.size()));
  }
  const int64_t rows = v->shape.front();
  out->shape = {rows, rows > 0 ? v->numel() / rows : 0};
  return Status();
}

void gelu_erf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678f));
}

void attention_bidirectional(const KernelTable& k, ThreadPool& pool, const float* q,
                             const float* kk, const float* v, int64_t t, int32_t n_head,
                             int32_t head_dim, float* out) {
  const uint8_t* storage[2];
  const int64_t width = int64_t{n_head} * head_dim;
  std::vector<AttentionArgs> args(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) {
    AttentionArgs& a = args[static_cast<size_t>(i)];
    a.n_head = a.n_head_kv = n_head;
    a.head_dim = head_dim;
    a.contiguous_f32(kk, v, storage);  // every query shares the one cache
    a.q = q + i * width;
    a.out = out + i * width;
    a.n_q = 1;
    a.pos0 = t - 1;  // after every key: a causal kernel then sees all t
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  }
  attention_batch(k, args, pool);
}

}  // namespace edge
