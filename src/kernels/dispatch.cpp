// Fills the kernel table once: the scalar reference, with the widest SIMD variant the CPU
// runs (AVX2 or AVX-512 on x86, NEON on aarch64: kernels/isa.h) installed over a copy.
#include <algorithm>
#include <atomic>
#include <span>
#include <tuple>
#include <vector>

#include "core/check.h"
#include "core/cpu_info.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/delta_net.h"
#include "kernels/dense_isa.h"
#include "kernels/isa.h"
#include "kernels/packed_api.h"
#include "kernels/ref/ref_kernels.h"

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
    t.snake_beta = ref::snake_beta;
    t.attention = ref::attention;
    t.kv_store_row = kv_store_row;
    t.delta_conv = ref::delta_conv;
    t.delta_net_recurrent = ref::delta_net_recurrent;
    t.delta_net_chunked = ref::delta_net_chunked;
    t.rmsnorm_gated = ref::rmsnorm_gated;
    return t;
  }();
  return table;
}

namespace {

KernelTable dense_table(const std::string& name) {
  KernelTable t = reference_kernels();
  if (const KernelVariant* v = find_kernel_variant("dense", name)) {
    v->install_dense(&t);
    t.name = v->name;
  }
  return t;
}

}  // namespace

// The widest dense variant this CPU (and OS: cpu_info's flags include the OS's support for
// the register state) can run (kernels/isa.h).
const KernelTable& select_kernels() {
  static const KernelTable table = dense_table(dense_variant_for(cpu_info()));
  return table;
}

std::vector<KernelTable> simd_dense_kernels() {
  std::vector<KernelTable> out;
  for (const KernelVariant& v : kernel_variants())
    if (std::string(v.family) == "dense" && isa_runnable(v.isa, cpu_info()))
      out.push_back(dense_table(v.name));
  return out;
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

// Keys query i of `a` reads: min(pos0 + i + 1, window).
int64_t attention_query_cost(const AttentionArgs& a, int64_t i) {
  const int64_t keys = a.pos0 + i + 1;
  return a.window > 0 ? std::min<int64_t>(keys, a.window) : keys;
}

// Position (sequence, task) where the cumulative cost of tasks first reaches `target`.
// Tasks are (query, head) pairs of each sequence in order; every head of query i costs
// attention_query_cost(i), so under a causal mask equal task counts would give the last
// thread most of the work.
std::pair<size_t, int64_t> attention_split(std::span<const AttentionArgs> as, int64_t target) {
  int64_t acc = 0;
  for (size_t s = 0; s < as.size(); ++s) {
    const AttentionArgs& a = as[s];
    for (int64_t i = 0; i < a.n_q; ++i) {
      const int64_t c = attention_query_cost(a, i);
      if (acc + c * a.n_head > target) {
        const int64_t heads = std::max<int64_t>(0, (target - acc + c - 1) / c);
        return {s, i * a.n_head + std::min<int64_t>(heads, a.n_head)};
      }
      acc += c * a.n_head;
    }
  }
  return {as.size(), 0};
}

// Dynamic attention pieces per thread, used once a step has this many (query, head) tasks
// per piece (prefill; decode steps have a few dozen tasks).
constexpr int kAttentionPiecesPerThread = 6;
constexpr int kAttentionPieceTasks = 64;

}  // namespace

void attention(const KernelTable& k, const AttentionArgs& a, ThreadPool& pool) {
  attention_batch(k, std::span<const AttentionArgs>(&a, 1), pool);
}

void attention_batch(const KernelTable& k, std::span<const AttentionArgs> as, ThreadPool& pool) {
  int64_t total = 0, tasks = 0;
  int64_t max_keys = 0;
  int32_t max_hd = 0;
  for (const AttentionArgs& a : as) {
    for (int64_t i = 0; i < a.n_q; ++i) total += attention_query_cost(a, i) * a.n_head;
    tasks += a.n_q * a.n_head;
    max_keys = std::max(max_keys, a.pos0 + a.n_q);
    max_hd = std::max(max_hd, a.head_dim);
  }
  if (total == 0) return;
  // Prefill: equal-cost pieces claimed in turn, so a thread whose keys miss L2 more often
  // (the later queries read the longest K/V) or that was preempted does not leave the other
  // waiting: with one piece per thread the last thread ran 1.3x the first's attention time
  // (pp512, perf). Decode keeps one piece per thread: a piece boundary inside a GQA group
  // would read that group's K/V twice.
  const int nth = pool.size();
  const int64_t pieces = tasks >= int64_t{kAttentionPieceTasks} * nth * kAttentionPiecesPerThread
                             ? int64_t{nth} * kAttentionPiecesPerThread
                             : nth;
  std::atomic<int64_t> next{0};
  pool.run([&](int, int) {
    float* scratch = thread_scratch(static_cast<size_t>(max_keys + 2 * max_hd));
    for (int64_t piece = next.fetch_add(1); piece < pieces; piece = next.fetch_add(1)) {
      const auto [s0, i0] = attention_split(as, total * piece / pieces);
      const auto [s1, i1] = piece + 1 == pieces ? std::pair<size_t, int64_t>{as.size(), 0}
                                                : attention_split(as, total * (piece + 1) / pieces);
      for (size_t s = s0; s <= s1 && s < as.size(); ++s) {
        const int64_t t0 = s == s0 ? i0 : 0;
        const int64_t t1 = s == s1 ? i1 : as[s].n_q * as[s].n_head;
        if (t0 < t1) k.attention(as[s], t0, t1, scratch);
      }
    }
  });
}

namespace {

// The shapes the model code derives from a checked config: a mismatch is a programming error.
void check_delta_net_args(const DeltaNetArgs& a) {
  const DeltaNetShape& s = a.shape;
  CHECK(s.n_k_heads > 0 && s.n_v_heads % s.n_k_heads == 0 && s.d_k > 0 && s.d_v > 0);
  CHECK(a.qkv_stride >= s.conv_channels() && a.n >= 0);
}

}  // namespace

void delta_net_conv(const KernelTable& k, const DeltaConvArgs& a, ThreadPool& pool) {
  CHECK(a.kernel >= 2 && a.kernel <= 8 && a.channels > 0 && a.row_stride() >= a.channels);
  // Channel ranges in whole 16-channel groups, so no thread but the last runs a vector tail.
  const int64_t groups = (a.channels + 15) / 16;
  pool.run([&](int tid, int nth) {
    const auto [g0, g1] = ThreadPool::split(groups, tid, nth);
    const int64_t c0 = std::min(a.channels, g0 * 16), c1 = std::min(a.channels, g1 * 16);
    if (c0 < c1) k.delta_conv(a, c0, c1);
  });
}

void delta_net_decode(const KernelTable& k, std::span<const DeltaNetArgs> as, ThreadPool& pool) {
  // Tasks are (sequence, value head) pairs in order; each reads one head's state, so equal
  // task counts are equal work.
  int64_t tasks = 0, scratch = 0;
  for (const DeltaNetArgs& a : as) {
    check_delta_net_args(a);
    tasks += a.shape.n_v_heads;
    scratch = std::max(scratch, delta_net_scratch_floats(a.shape));
  }
  pool.run([&](int tid, int nth) {
    const auto [t0, t1] = ThreadPool::split(tasks, tid, nth);
    float* buf = thread_scratch(static_cast<size_t>(scratch));
    int64_t first = 0;  // task index of the sequence's head 0
    for (const DeltaNetArgs& a : as) {
      const int64_t h0 = std::max<int64_t>(t0 - first, 0);
      const int64_t h1 = std::min<int64_t>(t1 - first, a.shape.n_v_heads);
      if (h0 < h1)
        k.delta_net_recurrent(a, static_cast<int32_t>(h0), static_cast<int32_t>(h1), buf);
      first += a.shape.n_v_heads;
    }
  });
}

void delta_net_decode_kept(const KernelTable& k, const DeltaNetArgs& a, float* kept,
                           int64_t kept_stride, ThreadPool& pool) {
  check_delta_net_args(a);
  const DeltaNetShape& s = a.shape;
  const int64_t head_floats = delta_net_recurrent_state_floats(s) / s.n_v_heads;
  const int64_t C = a.qkv_stride, H = s.n_v_heads, V = s.value_dim();
  const size_t scratch = static_cast<size_t>(delta_net_scratch_floats(s));
  pool.run([&](int tid, int nth) {
    const auto [h0, h1] = ThreadPool::split(H, tid, nth);
    if (h0 >= h1) return;
    float* buf = thread_scratch(scratch);
    for (int64_t t = 0; t < a.n; ++t) {
      DeltaNetArgs one = a;
      one.qkv += t * C, one.g += t * H, one.beta += t * H, one.out += t * V;
      one.n = 1;
      k.delta_net_recurrent(one, static_cast<int32_t>(h0), static_cast<int32_t>(h1), buf);
      std::copy_n(a.state + h0 * head_floats, (h1 - h0) * head_floats,
                  kept + t * kept_stride + h0 * head_floats);
    }
  });
}

void delta_net_prefill(const KernelTable& k, const DeltaNetArgs& a, ThreadPool& pool) {
  check_delta_net_args(a);
  const size_t scratch = static_cast<size_t>(delta_net_scratch_floats(a.shape));
  pool.run([&](int tid, int nth) {
    const auto [h0, h1] = ThreadPool::split(a.shape.n_v_heads, tid, nth);
    if (h0 < h1)
      k.delta_net_chunked(a, static_cast<int32_t>(h0), static_cast<int32_t>(h1),
                          thread_scratch(scratch));
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
