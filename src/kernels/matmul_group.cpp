// matmul() and matmul_group(): the parallel drivers of every projection. All weights of a
// group share the input x [n, in]; their work units (panels of 16 rows for packed weights,
// 16-row chunks for dense ones) form one list, split among the pool's threads by weight
// bytes, so q/k/v or gate/up run in one region with one fork/join. With int8 activations
// x is quantised once per distinct group size, before a barrier.
#include <algorithm>
#include <array>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/packed_api.h"

namespace edge {
namespace {

constexpr int64_t kUnitRows = 16;  // = kPanelRows: a dense unit matches a packed panel
constexpr int kMaxGroup = 8;       // weights per matmul_group call (q/k/v, gate/up)

// Per-thread scratch reused across calls: the pool's threads live as long as the pool,
// so decode does not allocate per matmul.
float* thread_scratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

MatmulRowsFn dense_fn(const KernelTable& k, DType t) {
  switch (t) {
    case DType::F32: return k.matmul_f32;
    case DType::F16: return k.matmul_f16;
    case DType::BF16: return k.matmul_bf16;
    default: return nullptr;
  }
}

// One weight of the group, resolved once per call.
struct Job {
  const TensorView* w = nullptr;
  float* y = nullptr;
  bool packed = false;
  PackedMatrixView pv;             // packed
  MatmulRowsFn dense = nullptr;    // dense
  uint64_t row_bytes = 0;          // dense
  int64_t units = 0;               // panels / 16-row chunks
  int64_t unit_cost = 0;           // bytes of one unit
  int64_t cost0 = 0;               // cost of the units of all earlier jobs
  int act = -1;                    // index of its quantised activations (A8), else -1
};

// First unit of job j whose start cost is >= c (units belong to the thread whose cost
// range holds their start, so adjacent threads' ranges tile each job exactly).
int64_t first_unit_at(const Job& j, int64_t c) {
  if (c <= j.cost0) return 0;
  const int64_t u = (c - j.cost0 + j.unit_cost - 1) / j.unit_cost;
  return std::min(u, j.units);
}

void run_units(const KernelTable& k, const PackedKernels& pk, const Job& j,
               const QuantizedActivations* acts, const float* x, int64_t n, int64_t u0,
               int64_t u1) {
  if (u0 >= u1) return;
  if (j.packed) {
    if (j.act >= 0)
      pk.a8(j.pv.fmt.kind)(j.pv, acts[j.act], u0, u1, j.y);
    else
      pk.a16(j.pv.fmt.kind)(j.pv, x, n, u0, u1, j.y);
    return;
  }
  const int64_t out = j.w->shape[0], in = j.w->shape[1];
  const int64_t r0 = u0 * kUnitRows, r1 = std::min(out, u1 * kUnitRows);
  j.dense(x, n, in, j.w->data, j.row_bytes, out, r0, r1, j.y,
          thread_scratch(static_cast<size_t>(kMatmulRowTile * in)));
}

}  // namespace

void matmul_group(const KernelTable& k, const float* x, int64_t n,
                  std::span<const TensorView* const> ws, std::span<float* const> ys,
                  ThreadPool& pool) {
  CHECK(ws.size() == ys.size() && ws.size() <= static_cast<size_t>(kMaxGroup));
  if (ws.empty() || n <= 0) return;
  const PackedKernels& pk = packed_kernels();
  std::array<Job, kMaxGroup> jobs;
  std::array<int32_t, kMaxGroup> groups{};  // distinct activation group sizes (A8)
  int n_groups = 0;
  int64_t total = 0;
  const int64_t in = ws[0]->shape.size() == 2 ? ws[0]->shape[1] : 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    const TensorView& w = *ws[i];
    CHECK(w.shape.size() == 2 && w.shape[1] == in);
    Job& j = jobs[i];
    j.w = &w;
    j.y = ys[i];
    j.packed = is_packed_dtype(w.dtype);
    if (j.packed) {
      j.pv = packed_matrix_view(w);
      j.units = PackedFormat::panels(j.pv.n);
      j.unit_cost = (in / j.pv.fmt.group) * packed_cell_bytes(j.pv.fmt.kind, j.pv.fmt.group);
      if (k.packed_int8_activations) {
        int gi = 0;
        while (gi < n_groups && groups[gi] != j.pv.fmt.group) ++gi;
        if (gi == n_groups) groups[n_groups++] = j.pv.fmt.group;
        j.act = gi;
      }
    } else {
      j.dense = dense_fn(k, w.dtype);
      CHECK_MSG(j.dense != nullptr, "matmul: unsupported weight dtype");
      j.row_bytes = w.nbytes / static_cast<uint64_t>(w.shape[0]);
      j.units = (w.shape[0] + kUnitRows - 1) / kUnitRows;
      j.unit_cost = static_cast<int64_t>(j.row_bytes) * kUnitRows;
    }
    j.cost0 = total;
    total += j.units * j.unit_cost;
  }
  // The caller's thread owns the activation buffers (one per distinct group size).
  thread_local std::array<ActivationBuffer, 3> act_bufs;
  CHECK(n_groups <= static_cast<int>(act_bufs.size()));
  std::array<QuantizedActivations, 3> acts{};
  for (int g = 0; g < n_groups; ++g) acts[g] = act_bufs[g].view(n, in, groups[g]);
  const size_t nj = ws.size();
  pool.run([&](int tid, int nth) {
    if (n_groups > 0) {
      auto [t0, t1] = ThreadPool::split(n, tid, nth);
      for (int g = 0; g < n_groups && t0 < t1; ++g) pk.quantize_act(x, acts[g], t0, t1);
      pool.barrier();
    }
    const int64_t c0 = total * tid / nth, c1 = total * (tid + 1) / nth;
    for (size_t i = 0; i < nj; ++i) {
      const Job& j = jobs[i];
      if (j.cost0 >= c1 || j.cost0 + j.units * j.unit_cost <= c0) continue;
      run_units(k, pk, j, acts.data(), x, n, first_unit_at(j, c0), first_unit_at(j, c1));
    }
  });
}

void matmul(const KernelTable& k, const float* x, int64_t n, const TensorView& w, float* y,
            ThreadPool& pool) {
  const TensorView* ws[1] = {&w};
  float* ys[1] = {y};
  matmul_group(k, x, n, ws, ys, pool);
}

}  // namespace edge
