// matmul() and matmul_group(): the parallel drivers of every projection. All weights of a
// group share the input x [n, in]; their work units (panels of 16 rows for packed weights,
// 16-row chunks for dense ones) form one list, split among the pool's threads by weight
// bytes, so q/k/v or gate/up run in one region with one fork/join. With int8 activations
// x is quantised once per distinct group size, before a barrier.
//
// Each thread owns one contiguous segment of the units (equal weight bytes) and works
// through it front to back, so its reads form one stream the hardware prefetcher follows;
// a thread that finishes early takes chunks from the back of another's segment, so a thread
// slowed by preemption or a slower memory path does not hold the region up. (The earlier
// split, 70% static and the rest in chunks handed out in turn, interleaved the two threads'
// tails. Measured on a Zen 5 VM with the one-panel AVX-512 GEMV of the same change: decode
// x1.11 on W4A8 g128 and x1.25 on repacked Q4_0, 8 interleaved passes.)
#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "core/work_segment.h"
#include "kernels/api.h"
#include "kernels/packed_api.h"

namespace edge {
namespace {

constexpr int64_t kUnitRows = 16;  // = kPanelRows: a dense unit matches a packed panel
constexpr int kMaxGroup = 8;       // weights per matmul_group call (q/k/v, gate/up)
// Work split (see matmul_group): the bytes a thread takes at a time from a segment. A
// decode chunk streams in a few us; a prefill chunk is about one cache block of the GEMM
// (its token tiles re-read activations once per chunk).
constexpr int64_t kDecodeChunkBytes = 48 << 10;
constexpr int64_t kPrefillChunkBytes = 256 << 10;
constexpr int64_t kPrivateActTokens = 4;

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

// One projection, resolved once per call.
struct Job {
  const TensorView* w = nullptr;
  const float* x = nullptr;        // [n, in]
  int64_t n = 0;
  float* y = nullptr;              // [n, out]
  bool packed = false;
  PackedMatrixView pv;             // packed
  MatmulRowsFn dense = nullptr;    // dense
  uint64_t row_bytes = 0;          // dense
  int64_t units = 0;               // panels / 16-row chunks
  int64_t unit_bytes = 0;          // weight bytes of one unit
  int64_t unit_cost = 0;           // its share of the work: bytes, times tokens past decode
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

// An input to quantise (A8): one per distinct (x, n, group) among the jobs.
struct ActInput {
  const float* x = nullptr;
  int64_t n = 0, in = 0, row0 = 0;  // row0: its first row among all inputs' rows
  int32_t group = 0;
};

struct Plan {
  std::vector<Job> jobs;
  std::vector<int64_t> first;  // [jobs + 1] global index of each job's first unit
  std::vector<ActInput> inputs;
  int64_t total_cost = 0, input_rows = 0, max_n = 0;

  // Global index of the first unit whose start cost is >= c.
  int64_t unit_at(int64_t c) const {
    for (size_t i = 0; i < jobs.size(); ++i)
      if (c <= jobs[i].cost0 + jobs[i].units * jobs[i].unit_cost)
        return first[i] + first_unit_at(jobs[i], c);
    return first[jobs.size()];
  }
};

void run_units(const PackedKernels& pk, const Job& j, const QuantizedActivations* acts, int64_t u0,
               int64_t u1) {
  if (u0 >= u1) return;
  if (j.packed) {
    if (j.act >= 0)
      pk.a8(j.pv.fmt.kind)(j.pv, acts[j.act], u0, u1, j.y);
    else
      pk.a16(j.pv.fmt.kind)(j.pv, j.x, j.n, u0, u1, j.y);
    return;
  }
  const int64_t out = j.w->shape[0], in = j.w->shape[1];
  const int64_t r0 = u0 * kUnitRows, r1 = std::min(out, u1 * kUnitRows);
  j.dense(j.x, j.n, in, j.w->data, j.row_bytes, out, r0, r1, j.y,
          thread_scratch(static_cast<size_t>(kMatmulRowTile * in)));
}

// Global units [g0, g1), possibly spanning several jobs.
void run_global(const PackedKernels& pk, const Plan& plan, const QuantizedActivations* acts,
                int64_t g0, int64_t g1) {
  for (size_t i = 0; i < plan.jobs.size() && g0 < g1; ++i) {
    const int64_t f = plan.first[i], e = plan.first[i + 1];
    if (g0 >= e || g1 <= f) continue;
    run_units(pk, plan.jobs[i], acts, std::max(g0, f) - f, std::min(g1, e) - f);
  }
}

// Index of the input (x, n, group) among plan's, added if new.
int input_index(Plan* plan, const float* x, int64_t n, int64_t in, int32_t group) {
  for (size_t i = 0; i < plan->inputs.size(); ++i) {
    const ActInput& a = plan->inputs[i];
    if (a.x == x && a.n == n && a.in == in && a.group == group) return static_cast<int>(i);
  }
  plan->inputs.push_back({x, n, in, plan->input_rows, group});
  plan->input_rows += n;
  return static_cast<int>(plan->inputs.size() - 1);
}

// Fills plan's jobs (those with tokens) and, with int8 activations, the inputs to quantise.
void resolve(const KernelTable& k, std::span<const MatmulJob> in_jobs, Plan* plan) {
  plan->jobs.clear();
  plan->inputs.clear();
  plan->first.assign(1, 0);
  plan->total_cost = plan->input_rows = plan->max_n = 0;
  for (const MatmulJob& mj : in_jobs) {
    if (mj.n <= 0) continue;
    const TensorView& w = *mj.w;
    CHECK(w.shape.size() == 2);
    const int64_t in = w.shape[1];
    Job j;
    j.w = &w;
    j.x = mj.x;
    j.n = mj.n;
    j.y = mj.y;
    j.packed = is_packed_dtype(w.dtype);
    if (j.packed) {
      j.pv = packed_matrix_view(w);
      j.units = PackedFormat::panels(j.pv.n);
      j.unit_bytes = (in / j.pv.fmt.group) * packed_cell_bytes(j.pv.fmt.kind, j.pv.fmt.group);
      if (k.packed_int8_activations) j.act = input_index(plan, mj.x, mj.n, in, j.pv.fmt.group);
    } else {
      j.dense = dense_fn(k, w.dtype);
      CHECK_MSG(j.dense != nullptr, "matmul: unsupported weight dtype");
      j.row_bytes = w.nbytes / static_cast<uint64_t>(w.shape[0]);
      j.units = (w.shape[0] + kUnitRows - 1) / kUnitRows;
      j.unit_bytes = static_cast<int64_t>(j.row_bytes) * kUnitRows;
    }
    // Decode streams weights (bytes decide); a prefill GEMM computes n rows per byte read.
    j.unit_cost = j.unit_bytes * (mj.n <= kPrivateActTokens ? 1 : mj.n);
    j.cost0 = plan->total_cost;
    plan->total_cost += j.units * j.unit_cost;
    plan->first.push_back(plan->first.back() + j.units);
    plan->max_n = std::max(plan->max_n, mj.n);
    plan->jobs.push_back(j);
  }
}

// Segments for the calling thread's regions (one region at a time per pool).
WorkSegment* segments(int n) {
  thread_local std::unique_ptr<WorkSegment[]> segs;
  thread_local int capacity = 0;
  if (capacity < n) {
    segs = std::make_unique<WorkSegment[]>(static_cast<size_t>(n));
    capacity = n;
  }
  return segs.get();
}

}  // namespace

// Activation buffers per thread, pool threads included, one per distinct input. At
// namespace scope so that every thread that touches it constructs (and at exit destroys)
// its own copy: a block-scope thread_local used from a lambda on another thread is never
// constructed there.
namespace {
thread_local std::vector<ActivationBuffer> t_act_bufs;
thread_local std::vector<QuantizedActivations> t_act_views;
thread_local Plan t_plan;

// This thread's views of the plan's inputs, in its own buffers.
QuantizedActivations* thread_views(const Plan& plan) {
  if (t_act_bufs.size() < plan.inputs.size()) t_act_bufs.resize(plan.inputs.size());
  t_act_views.resize(plan.inputs.size());
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const ActInput& a = plan.inputs[i];
    t_act_views[i] = t_act_bufs[i].view(a.n, a.in, a.group);
  }
  return t_act_views.data();
}

// Quantises rows [r0, r1) of all inputs' rows (inputs back to back) into views.
void quantize_rows(const PackedKernels& pk, const Plan& plan, const QuantizedActivations* views,
                   int64_t r0, int64_t r1) {
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const ActInput& a = plan.inputs[i];
    const int64_t t0 = std::max<int64_t>(r0 - a.row0, 0), t1 = std::min(r1 - a.row0, a.n);
    if (t0 < t1) quantize_activations(pk, a.x, views[i], t0, t1);
  }
}

}  // namespace

void matmul_jobs(const KernelTable& k, std::span<const MatmulJob> jobs, ThreadPool& pool) {
  Plan& plan = t_plan;  // the calling thread's; pool threads only read it
  resolve(k, jobs, &plan);
  if (plan.jobs.empty()) return;
  const PackedKernels& pk = packed_kernels();
  // Decode (few tokens each): every thread quantises all inputs itself, no barrier.
  const bool private_acts = plan.max_n <= kPrivateActTokens;
  const QuantizedActivations* shared = private_acts ? nullptr : thread_views(plan);
  // Work split: one segment of equal cost per thread, stolen from at its back (see above).
  CHECK_MSG(plan.first.back() < (int64_t{1} << 32), "matmul: too many work units");
  const int nth_pool = pool.size();
  WorkSegment* segs = segments(nth_pool);
  // Prefill claims whole panel pairs (the AVX-512 tiles' unit; a lone panel runs a one-panel
  // pass: 3.3% of a W4A8 pp512's samples on Zen 4 when chunks of 15 and 5 panels were the rule).
  const int64_t align = private_acts ? 1 : 2;
  const int64_t units = plan.first.back();
  const auto boundary = [&](int t) {
    return t == nth_pool ? units : plan.unit_at(plan.total_cost * t / nth_pool) / align * align;
  };
  for (int t = 0; t < nth_pool; ++t) segs[t].reset(boundary(t), boundary(t + 1));
  const int64_t chunk_bytes = private_acts ? kDecodeChunkBytes : kPrefillChunkBytes;
  const int64_t chunk = std::max<int64_t>(1, chunk_bytes / plan.jobs[0].unit_bytes);
  pool.run([&](int tid, int nth) {
    const QuantizedActivations* acts = shared;
    if (!plan.inputs.empty() && private_acts) {
      QuantizedActivations* own = thread_views(plan);
      quantize_rows(pk, plan, own, 0, plan.input_rows);
      acts = own;
    } else if (!plan.inputs.empty()) {
      auto [r0, r1] = ThreadPool::split(plan.input_rows, tid, nth);
      if (r0 < r1) quantize_rows(pk, plan, shared, r0, r1);
      pool.barrier();
    }
    int64_t u0 = 0, u1 = 0;
    while (segs[tid].take(chunk, false, &u0, &u1, align)) run_global(pk, plan, acts, u0, u1);
    for (int v = 1; v < nth; ++v) {
      WorkSegment& victim = segs[(tid + v) % nth];
      while (victim.take(chunk, true, &u0, &u1, align)) run_global(pk, plan, acts, u0, u1);
    }
  });
}

void matmul_group(const KernelTable& k, const float* x, int64_t n,
                  std::span<const TensorView* const> ws, std::span<float* const> ys,
                  ThreadPool& pool) {
  CHECK(ws.size() == ys.size() && ws.size() <= static_cast<size_t>(kMaxGroup));
  if (ws.empty() || n <= 0) return;
  std::array<MatmulJob, kMaxGroup> jobs;
  for (size_t i = 0; i < ws.size(); ++i) {
    CHECK(ws[i]->shape.size() == 2 && ws[i]->shape[1] == ws[0]->shape[1]);
    jobs[i] = MatmulJob{ws[i], x, n, ys[i]};
  }
  matmul_jobs(k, std::span<const MatmulJob>(jobs.data(), ws.size()), pool);
}

void matmul(const KernelTable& k, const float* x, int64_t n, const TensorView& w, float* y,
            ThreadPool& pool) {
  const TensorView* ws[1] = {&w};
  float* ys[1] = {y};
  matmul_group(k, x, n, ws, ys, pool);
}

}  // namespace edge
