// Fills the kernel table once: the scalar reference, with AVX2 or AVX-512 variants
// installed over a copy of it according to the CPU's features.
#include "core/check.h"
#include "core/cpu_info.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/dense_isa.h"
#include "kernels/packed_api.h"
#include "kernels/ref/ref_kernels.h"

#include <algorithm>
#include <tuple>
#include <vector>

namespace edge {

const char* rope_style_name(RopeStyle s) {
  return s == RopeStyle::kInterleaved ? "interleaved" : "neox";
}

const KernelTable& reference_kernels() {
  static const KernelTable table = [] {
    KernelTable t;
    t.name = "ref";
    t.matmul_f32 = ref::matmul_f32;
    t.matmul_f16 = ref::matmul_f16;
    t.matmul_bf16 = ref::matmul_bf16;
    t.convert_row = ref::convert_row;
    t.rmsnorm = ref::rmsnorm;
    t.rope = ref::rope;
    t.softmax = ref::softmax;
    t.silu = ref::silu;
    t.gelu = ref::gelu;
    t.mul = ref::mul;
    t.add = ref::add;
    t.attention = ref::attention;
    return t;
  }();
  return table;
}

// The widest dense variant this CPU (and OS: cpu_info's flags come from
// __builtin_cpu_supports, which checks the saved register state) can run.
const KernelTable& select_kernels() {
  static const KernelTable table = [] {
    KernelTable t = reference_kernels();
    const CpuInfo& c = cpu_info();
    const bool avx2 = c.has("avx2") && c.has("fma") && c.has("f16c");
    if (avx2 && c.has("avx512f") && c.has("avx512bw") && c.has("avx512vl") && c.has("avx512dq")) {
      install_dense_avx512(&t);
      t.name = "avx512";
    } else if (avx2) {
      install_dense_avx2(&t);
      t.name = "avx2";
    }
    return t;
  }();
  return table;
}

bool kernel_supports_dtype(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || is_packed_dtype(t);
}

namespace {

// Per-thread scratch reused across calls: the pool's threads live as long as the pool,
// so decode does not allocate per matmul.
float* thread_scratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

}  // namespace

// matmul() and matmul_group() live in matmul_group.cpp.

namespace {

// First query of thread `tid`'s share when queries are split into `nth` contiguous ranges
// of near-equal cost. Query i reads min(pos0 + i + 1, window) keys, so under a causal mask
// equal counts of queries would give the last thread most of the work.
int64_t attention_split_point(const AttentionArgs& a, int tid, int nth) {
  if (tid == 0) return 0;
  if (tid >= nth) return a.n_q;
  auto cost = [&](int64_t i) {
    int64_t keys = a.pos0 + i + 1;
    return a.window > 0 ? std::min<int64_t>(keys, a.window) : keys;
  };
  int64_t total = 0;
  for (int64_t i = 0; i < a.n_q; ++i) total += cost(i);
  const int64_t target = total * tid / nth;
  int64_t acc = 0;
  for (int64_t i = 0; i < a.n_q; ++i) {
    if (acc >= target) return i;
    acc += cost(i);
  }
  return a.n_q;
}

}  // namespace

void attention(const KernelTable& k, const AttentionArgs& a, ThreadPool& pool) {
  pool.run([&](int tid, int nth) {
    int64_t t0, t1;
    if (a.n_q >= nth) {  // prefill: split whole queries by cost
      t0 = attention_split_point(a, tid, nth) * a.n_head;
      t1 = attention_split_point(a, tid + 1, nth) * a.n_head;
    } else {  // decode: split the heads of the few queries evenly
      std::tie(t0, t1) = ThreadPool::split(a.n_q * a.n_head, tid, nth);
    }
    if (t0 >= t1) return;
    k.attention(a, t0, t1, thread_scratch(static_cast<size_t>(a.pos0 + a.n_q)));
  });
}

void embedding_row(const KernelTable& k, const TensorView& table, int64_t row, float* out) {
  CHECK(table.shape.size() == 2 && row >= 0 && row < table.shape[0]);
  if (is_packed_dtype(table.dtype)) {
    packed_kernels().dequant_row(packed_matrix_view(table), row, out);
    return;
  }
  const uint64_t row_bytes = table.nbytes / static_cast<uint64_t>(table.shape[0]);
  k.convert_row(table.dtype, table.data + row * row_bytes, table.shape[1], out);
}

}  // namespace edge
