#include "model/arch/encoder_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/thread_pool.h"
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

void linear_rows(const KernelTable& k, ThreadPool& pool, const float* x, int64_t t,
                 const TensorView& w, const std::vector<float>& b, float* y) {
  matmul(k, x, t, w, y, pool);
  const int64_t out = w.shape[0];
  if (!b.empty())
    for (int64_t i = 0; i < t; ++i) k.add(y + i * out, b.data(), out);
}

void gelu_erf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678f));
}

namespace {

// An F32 [rows, cols] matrix as a matmul weight view.
TensorView f32_view(const std::vector<float>& m, int64_t rows, int64_t cols) {
  TensorView w;
  w.name = "encoder.attention";
  w.dtype = DType::F32;
  w.shape = {rows, cols};
  w.data = reinterpret_cast<const uint8_t*>(m.data());
  w.nbytes = static_cast<uint64_t>(rows * cols) * sizeof(float);
  return w;
}

}  // namespace

void attention_bidirectional(const KernelTable& k, ThreadPool& pool, const float* q,
                             const float* kk, const float* v, int64_t t, int32_t n_head,
                             int32_t head_dim, float* out) {
  const int64_t e = int64_t{n_head} * head_dim, hd = head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> qh(static_cast<size_t>(t * hd)), kh(qh.size()), vt(qh.size()), oh(qh.size()),
      sc(static_cast<size_t>(t * t));
  for (int64_t head = 0; head < n_head; ++head) {
    for (int64_t i = 0; i < t; ++i)
      for (int64_t c = 0; c < hd; ++c) {
        const int64_t src = i * e + head * hd + c;
        qh[static_cast<size_t>(i * hd + c)] = q[src];
        kh[static_cast<size_t>(i * hd + c)] = kk[src];
        vt[static_cast<size_t>(c * t + i)] = v[src];  // [hd][t]
      }
    matmul(k, qh.data(), t, f32_view(kh, t, hd), sc.data(), pool);  // [t][t] = q k^T
    pool.run([&](int tid, int nth) {
      const auto [r0, r1] = ThreadPool::split(t, tid, nth);
      for (int64_t r = r0; r < r1; ++r) {
        float* row = sc.data() + r * t;
        float mx = row[0];
        for (int64_t j = 1; j < t; ++j) mx = std::max(mx, row[j]);
        float sum = 0;
        for (int64_t j = 0; j < t; ++j) sum += (row[j] = std::exp((row[j] - mx) * scale));
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j < t; ++j) row[j] *= inv;
      }
    });
    matmul(k, sc.data(), t, f32_view(vt, hd, t), oh.data(), pool);  // [t][hd] = p v
    for (int64_t i = 0; i < t; ++i) std::copy_n(oh.begin() + i * hd, hd, out + i * e + head * hd);
  }
}

}  // namespace edge
