#include "model/moe_ffn.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/thread_pool.h"

namespace edge {

namespace {

// Rows from which elementwise work is split over the pool (as ForwardPass does).
constexpr int64_t kParallelRowsFrom = 16;

template <typename V>
void fit(V& v, int64_t size) {
  if (static_cast<int64_t>(v.size()) < size) v.resize(static_cast<size_t>(size));
}

template <class Fn>
void for_rows(ThreadPool& pool, int64_t rows, Fn&& fn) {
  if (rows < kParallelRowsFrom || pool.size() == 1) {
    fn(int64_t{0}, rows);
    return;
  }
  pool.run([&](int tid, int nth) {
    const auto [r0, r1] = ThreadPool::split(rows, tid, nth);
    if (r0 < r1) fn(r0, r1);
  });
}

// GPT-OSS's alpha in g * sigmoid(alpha g).
constexpr float kClampedSwiGluAlpha = 1.702f;

}  // namespace

void glu_rows(const KernelTable& k, const ModelConfig& c, float* gate, const float* up,
              int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
    float* g = gate + r * width;
    const float* u = up + r * width;
    if (c.act == Activation::kSwiGluClamped) {
      // g * sigmoid(a g) = silu(a g) / a, with g clamped above and up clamped both ways.
      const float lim = c.swiglu_limit;
      for (int64_t i = 0; i < width; ++i) g[i] = std::min(g[i], lim) * kClampedSwiGluAlpha;
      k.silu(g, width);
      for (int64_t i = 0; i < width; ++i)
        g[i] = g[i] * (1.0f / kClampedSwiGluAlpha) * (std::clamp(u[i], -lim, lim) + 1.0f);
      continue;
    }
    if (c.act == Activation::kGeGlu)
      k.gelu(g, width);
    else
      k.silu(g, width);
    k.mul(g, u, width);
  }
}

MoeFfn::MoeFfn(const ModelConfig& c, int64_t max_tokens) {
  const MoeConfig& m = c.moe;
  if (!m.enabled()) return;
  const int64_t rows = max_tokens * m.n_expert_used;
  fit(logits_, max_tokens * m.n_expert);
  choices_.reserve(static_cast<size_t>(rows));
  first_row_.resize(static_cast<size_t>(m.n_expert) + 1);
  row_of_.resize(static_cast<size_t>(rows));
  token_of_.resize(static_cast<size_t>(rows));
  fit(xg_, rows * c.n_embd);
  fit(gate_, rows * m.n_ff_expert);
  fit(up_, rows * m.n_ff_expert);
  if (m.n_ff_shared > 0) {
    fit(sgate_, max_tokens * m.n_ff_shared);
    fit(sup_, max_tokens * m.n_ff_shared);
    fit(sout_, max_tokens * c.n_embd);
  }
  jobs_.reserve(static_cast<size_t>(2 * m.n_expert));
}

int64_t MoeFfn::scratch_bytes_for(const ModelConfig& c, int64_t max_tokens) {
  const MoeConfig& m = c.moe;
  if (!m.enabled()) return 0;
  const int64_t rows = max_tokens * m.n_expert_used;
  const int64_t floats = max_tokens * m.n_expert + rows * (c.n_embd + 2 * m.n_ff_expert) +
                         (m.n_ff_shared > 0 ? max_tokens * (2 * m.n_ff_shared + c.n_embd) : 0);
  return floats * static_cast<int64_t>(sizeof(float));
}

uint64_t MoeFfn::scratch_bytes() const {
  return (logits_.capacity() + xg_.capacity() + gate_.capacity() + up_.capacity() +
          sgate_.capacity() + sup_.capacity() + sout_.capacity()) *
         sizeof(float);
}

// logits_ [n, n_expert] and choices_ [n * k].
void MoeFfn::route(const ModelConfig& c, const LayerWeights& w, const KernelTable& k,
                   const float* xn, int64_t n, ThreadPool& pool) {
  const MoeConfig& m = c.moe;
  const int64_t ne = m.n_expert, kk = m.n_expert_used;
  matmul(k, xn, n, w.router, logits_.data(), pool);
  choices_.resize(static_cast<size_t>(n * kk));
  for_rows(pool, n, [&](int64_t t0, int64_t t1) {
    std::vector<float> scratch(static_cast<size_t>(ne));
    for (int64_t t = t0; t < t1; ++t) {
      float* lg = logits_.data() + t * ne;
      if (!w.router_bias.empty()) k.add(lg, w.router_bias.data(), ne);
      route_token(m, lg, w.selection_bias, scratch.data(), choices_.data() + t * kk);
    }
  });
}

// Grouped rows: expert e's are [first_row_[e], first_row_[e + 1]), in token order within.
void MoeFfn::group_by_expert(const ModelConfig& c, int64_t n) {
  const int64_t ne = c.moe.n_expert, kk = c.moe.n_expert_used;
  std::fill(first_row_.begin(), first_row_.end(), 0);
  for (int64_t i = 0; i < n * kk; ++i) ++first_row_[static_cast<size_t>(choices_[i].expert) + 1];
  for (int64_t e = 0; e < ne; ++e) first_row_[e + 1] += first_row_[e];
  std::vector<int32_t> fill(first_row_.begin(), first_row_.end() - 1);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < kk; ++j) {
      const int32_t r = fill[static_cast<size_t>(choices_[t * kk + j].expert)]++;
      row_of_[t * kk + j] = r;
      token_of_[r] = static_cast<int32_t>(t);
    }
}

// Gate/up of every chosen expert in one region, the GLU, then the down projections in a
// second; the down outputs [rows, n_embd] overwrite the gathered inputs in xg_.
void MoeFfn::experts(const ModelConfig& c, const LayerWeights& w, const KernelTable& k,
                     const float* xn, ThreadPool& pool) {
  const MoeConfig& m = c.moe;
  const int64_t d = c.n_embd, ff = m.n_ff_expert, rows = first_row_.back();
  for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) std::copy_n(xn + token_of_[r] * d, d, xg_.data() + r * d);
  });
  jobs_.clear();
  for (int32_t e = 0; e < m.n_expert; ++e) {
    const int64_t r = first_row_[e], cnt = first_row_[e + 1] - r;
    if (cnt == 0) continue;
    jobs_.push_back({&w.gate_exps[e], xg_.data() + r * d, cnt, gate_.data() + r * ff});
    jobs_.push_back({&w.up_exps[e], xg_.data() + r * d, cnt, up_.data() + r * ff});
  }
  matmul_jobs(k, jobs_, pool);
  // Expert of each grouped row (for the biases): rows are grouped, so walk the bounds.
  for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    int32_t e = static_cast<int32_t>(std::upper_bound(first_row_.begin(), first_row_.end(), r0) -
                                     first_row_.begin()) -
                1;
    for (int64_t r = r0; r < r1; ++r) {
      while (r >= first_row_[e + 1]) ++e;
      if (!w.gate_exps_bias.empty()) {
        k.add(gate_.data() + r * ff, w.gate_exps_bias.data() + e * ff, ff);
        k.add(up_.data() + r * ff, w.up_exps_bias.data() + e * ff, ff);
      }
      glu_rows(k, c, gate_.data() + r * ff, up_.data() + r * ff, 1, ff);
    }
  });
  jobs_.clear();
  for (int32_t e = 0; e < m.n_expert; ++e) {
    const int64_t r = first_row_[e], cnt = first_row_[e + 1] - r;
    if (cnt > 0) jobs_.push_back({&w.down_exps[e], gate_.data() + r * ff, cnt, xg_.data() + r * d});
  }
  matmul_jobs(k, jobs_, pool);
}

// y += the shared expert's FFN of xn (times sigmoid(xn . shexp_gate) when gated).
void MoeFfn::shared_expert(const ModelConfig& c, const LayerWeights& w, const KernelTable& k,
                           const float* xn, int64_t n, float* y, ThreadPool& pool) {
  const int64_t d = c.n_embd, ffs = c.moe.n_ff_shared;
  const TensorView* ws[2] = {&w.gate_shexp, &w.up_shexp};
  float* ys[2] = {sgate_.data(), sup_.data()};
  matmul_group(k, xn, n, ws, ys, pool);
  for_rows(pool, n, [&](int64_t t0, int64_t t1) {
    glu_rows(k, c, sgate_.data() + t0 * ffs, sup_.data() + t0 * ffs, t1 - t0, ffs);
  });
  matmul(k, sgate_.data(), n, w.down_shexp, sout_.data(), pool);
  for_rows(pool, n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* so = sout_.data() + t * d;
      if (!w.shexp_gate.empty()) {
        float dot = 0.0f;
        for (int64_t i = 0; i < d; ++i) dot += xn[t * d + i] * w.shexp_gate[static_cast<size_t>(i)];
        const float s = 1.0f / (1.0f + std::exp(-dot));
        for (int64_t i = 0; i < d; ++i) so[i] *= s;
      }
      k.add(y + t * d, so, d);
    }
  });
}

void MoeFfn::run(const ModelConfig& c, const LayerWeights& w, const KernelTable& k, const float* xn,
                 int64_t n, float* y, ThreadPool& pool) {
  const int64_t d = c.n_embd, kk = c.moe.n_expert_used;
  CHECK(n * kk <= static_cast<int64_t>(row_of_.size()));
  route(c, w, k, xn, n, pool);
  group_by_expert(c, n);
  experts(c, w, k, xn, pool);
  // y[t] = sum over its choices in selection order (the same sum whatever the batch).
  for_rows(pool, n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* yt = y + t * d;
      std::fill_n(yt, d, 0.0f);
      for (int64_t j = 0; j < kk; ++j) {
        const ExpertChoice& ch = choices_[t * kk + j];
        const float* src = xg_.data() + static_cast<int64_t>(row_of_[t * kk + j]) * d;
        if (!w.down_exps_bias.empty()) {
          const float* b = w.down_exps_bias.data() + static_cast<int64_t>(ch.expert) * d;
          for (int64_t i = 0; i < d; ++i) yt[i] += ch.weight * (src[i] + b[i]);
        } else {
          for (int64_t i = 0; i < d; ++i) yt[i] += ch.weight * src[i];
        }
      }
    }
  });
  if (c.moe.n_ff_shared > 0) shared_expert(c, w, k, xn, n, y, pool);
}

}  // namespace edge
