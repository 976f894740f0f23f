// The kernel function table: every op the forward pass calls, one entry per op (and per
// weight type for the matmul). reference_kernels() holds the scalar versions, always
// correct; dispatch.cpp fills the table the engine uses once (select_kernels()). SIMD
// variants live in their own files and overwrite entries of a copy of the reference table.
//
// Conventions: activations are F32, row-major. A weight matrix W is [out, in] (row r holds
// the in-features of output r) in F32, F16 or BF16; kernels convert on the fly.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "formats/tensor.h"

namespace edge {

class ThreadPool;
struct DeltaConvArgs;  // kernels/delta_net.h
struct DeltaNetArgs;

enum class RopeStyle : uint8_t {
  kInterleaved,  // pairs (2i, 2i+1): llama2.c, GGUF "llama"
  kNeox,         // pairs (i, i + rotary_dim/2), "rotate half": HF, GGUF qwen2/qwen3/gemma3
};
const char* rope_style_name(RopeStyle s);

// RoPE for one token. Only the first rotary_dim dims of each head rotate (partial rotary);
// pair i turns by angle pos * pos_scale * theta^(-2i/rotary_dim) / freq_factors[i].
// rope_angles() computes the cos and sin of a position's angles once; KernelTable::rope
// rotates any number of heads (q, k, every layer of the same parameters) with them.
struct RopeParams {
  RopeStyle style = RopeStyle::kNeox;
  int32_t head_dim = 0;
  int32_t rotary_dim = 0;  // even, <= head_dim
  float theta = 10000.0f;
  float pos_scale = 1.0f;               // 1 / linear rope-scaling factor
  const float* freq_factors = nullptr;  // [rotary_dim/2] or null (Llama-3.1 rope_freqs)
  float mscale = 1.0f;                  // cos and sin scaled by it (YaRN's attention factor)
};
// cos_sin[rotary_dim]: the cos of pairs 0..rotary_dim/2, then their sin, at position pos.
// The angle is computed in float exactly as llama2.c does (1/powf, pos*freq), so the
// llama2.c reference outputs are reproduced bit-for-bit in the RoPE step.
void rope_angles(int64_t pos, const RopeParams& p, float* cos_sin);

// Element type of the KV cache. A row holds one position's keys (or values) for all kv
// heads: [n_head_kv * head_dim].
//   kQ8: int8 codes, then one f32 scale per kv head (symmetric, scale = max|x| / 127):
//        kv_dim + 4 * n_head_kv bytes.
//   kQ4: each head's slice is first rotated (kv_rotate(): a fixed orthogonal transform that
//        spreads an outlier dimension over the whole block, so one 4-bit scale per group
//        fits every element), then cut in groups of kv_q4_group(head_dim) elements with one
//        f16 scale each (codes 0..15 = value / scale + 8; scale = the group's signed
//        max-|x| element / -8). Bytes: kv_dim / 2 of codes (group-major; byte b of a group
//        holds its element b in the low nibble and element b + G/2 in the high one), then
//        the f16 scales in head, group order: kv_dim / 2 + 2 * kv_dim / G.
//        Rotated rows are dotted with rotated queries (q.k is unchanged by an orthogonal
//        transform) and rotated values give a rotated output, turned back once per row.
enum class KvType : uint8_t { kF32, kF16, kBF16, kQ8, kQ4 };
const char* kv_type_name(KvType t);
// "f32" | "f16" | "bf16" | "q8" | "q4"; false if unknown.
bool parse_kv_type(const std::string& s, KvType* out);
// "f32, f16, bf16, q8, q4": for error messages and --help.
const char* kv_type_choices();
// Elements per kQ4 scale: 32 where head_dim is a multiple of 32, else the whole head.
inline int32_t kv_q4_group(int32_t head_dim) {
  return head_dim % 32 == 0 ? 32 : head_dim;
}
// Whether a cache of type t can hold heads of head_dim (kQ4: an even head_dim).
bool kv_type_fits(KvType t, int32_t head_dim);
int64_t kv_row_bytes(KvType t, int32_t n_head_kv, int32_t head_dim);
// Writes one F32 row [n_head_kv * head_dim] as type t; reads it back (kQ4: rotated back).
void kv_store_row(KvType t, const float* src, int32_t n_head_kv, int32_t head_dim, uint8_t* dst);
void kv_load_row(KvType t, const uint8_t* src, int32_t n_head_kv, int32_t head_dim, float* dst);
// Kv head h's slice [head_dim] of a row, as F32 (kQ4: rotated back).
void kv_load_head(KvType t, const uint8_t* row, int32_t n_head_kv, int32_t head_dim, int32_t h,
                  float* dst);
// The rotation of kQ4 rows, in place on one head's slice x [head_dim]: in blocks of the
// largest power of two dividing head_dim, x <- H . D . x (D: fixed signs +-1, H: the
// normalised Walsh-Hadamard matrix, so the transform is orthogonal). inverse: D . H . x.
void kv_rotate(float* x, int32_t head_dim, bool inverse);

// The K and the V cache's element types: they may differ (4-bit keys beside 8-bit values,
// ...). A single KvType converts to both.
struct KvTypes {
  KvType k = KvType::kF16;
  KvType v = KvType::kF16;
  constexpr KvTypes() = default;
  constexpr KvTypes(KvType both) : k(both), v(both) {}  // NOLINT: one type for K and V
  constexpr KvTypes(KvType k_type, KvType v_type) : k(k_type), v(v_type) {}
  bool operator==(const KvTypes&) const = default;
};
// K's type from k, V's from v ("" = as K); the error names the bad name and the choices.
Expected<KvTypes> parse_kv_types(const std::string& k, const std::string& v);
// "q8" when K and V agree, else "q4/f16" (K, then V).
std::string kv_types_name(KvTypes t);
// OK if caches of types t can hold heads of head_dim (kv_type_fits for K and V), else an
// invalid-argument error naming the type and the head size: the one check every cache
// builder (one sequence's state, the engine's pool) runs before sizing anything.
Status check_kv_types(KvTypes t, int32_t head_dim);
// Bytes one position takes in one layer: its K row and its V row.
inline int64_t kv_pos_bytes(KvTypes t, int32_t n_head_kv, int32_t head_dim) {
  return kv_row_bytes(t.k, n_head_kv, head_dim) + kv_row_bytes(t.v, n_head_kv, head_dim);
}

// Causal (optionally sliding-window) attention of n_q queries over a cache whose row p
// holds the key/value of position p. Query i is at position pos0 + i and sees keys
// j <= pos0 + i with (pos0 + i) - j < window (window 0 = no window). GQA: query head h
// reads kv head h / (n_head / n_head_kv).
//
// The cache is paged: the row of position p lives in block p / block_tokens, at row
// p % block_tokens; k_blocks[b] / v_blocks[b] point at block b's first row (rows are
// k_row_bytes / v_row_bytes apart). Blocks wholly outside every query's window may be null (a
// sliding layer's ring has already reused them). A contiguous F32 cache is one block
// (contiguous_f32()).
struct AttentionArgs {
  const float* q = nullptr;                  // [n_q, n_head * head_dim]
  const uint8_t* const* k_blocks = nullptr;  // [>= (pos0 + n_q) / block_tokens]
  const uint8_t* const* v_blocks = nullptr;
  int64_t block_tokens = 0;
  int64_t k_row_bytes = 0, v_row_bytes = 0;
  KvType k_type = KvType::kF32, v_type = KvType::kF32;
  float* out = nullptr;  // [n_q, n_head * head_dim]
  int64_t n_q = 0;
  int64_t pos0 = 0;
  int32_t n_head = 0, n_head_kv = 0, head_dim = 0;
  int32_t window = 0;
  float scale = 1.0f;  // applied to q.k before the softmax
  // [n_head] or null: a learned logit per head that joins each softmax's denominator and
  // takes no value (GPT-OSS "attention sinks"): p_j = exp(s_j) / (sum_k exp(s_k) + exp(sink)).
  const float* sinks = nullptr;

  // Points k_blocks/v_blocks at `storage` (2 entries) for a contiguous F32 cache
  // k, v [>= pos0 + n_q, n_head_kv * head_dim].
  void contiguous_f32(const float* k, const float* v, const uint8_t* storage[2]);
  const uint8_t* k_row(int64_t pos) const {
    return k_blocks[pos / block_tokens] + (pos % block_tokens) * k_row_bytes;
  }
  const uint8_t* v_row(int64_t pos) const {
    return v_blocks[pos / block_tokens] + (pos % block_tokens) * v_row_bytes;
  }
};

// Weight rows a matmul may convert at once: its scratch holds kMatmulRowTile * in floats.
constexpr int kMatmulRowTile = 4;

// Rows [r0, r1) of y[n, out] = x[n, in] . W[out, in]^T. w points at W's first row, rows are
// w_row_bytes apart. scratch holds >= kMatmulRowTile * in floats (converted weight rows).
using MatmulRowsFn = void (*)(const float* x, int64_t n, int64_t in, const uint8_t* w,
                              uint64_t w_row_bytes, int64_t out, int64_t r0, int64_t r1, float* y,
                              float* scratch);
// Attention for tasks [t0, t1), task t = (query t / n_head, head t % n_head).
// scratch holds >= pos0 + n_q floats.
using AttentionTasksFn = void (*)(const AttentionArgs& a, int64_t t0, int64_t t1, float* scratch);

struct KernelTable {
  const char* name = "ref";
  MatmulRowsFn matmul_f32 = nullptr;
  MatmulRowsFn matmul_f16 = nullptr;
  MatmulRowsFn matmul_bf16 = nullptr;
  // Converts n elements of an F32/F16/BF16 row to F32 (the embedding row fetch).
  void (*convert_row)(DType t, const uint8_t* src, int64_t n, float* dst) = nullptr;
  // y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w for each of `rows` rows of `dim`; w [dim].
  // y may alias x.
  void (*rmsnorm)(const float* x, const float* w, float* y, int64_t rows, int64_t dim,
                  float eps) = nullptr;
  // In place on x [n_heads, head_dim], one token, by the angles of rope_angles().
  void (*rope)(float* x, int64_t n_heads, const float* cos_sin, const RopeParams& p) = nullptr;
  void (*softmax)(float* x, int64_t n) = nullptr;              // in place, max-subtracted
  void (*silu)(float* x, int64_t n) = nullptr;                 // x * sigmoid(x), in place
  void (*gelu)(float* x, int64_t n) = nullptr;                 // tanh approximation, in place
  void (*mul)(float* a, const float* b, int64_t n) = nullptr;  // a *= b
  void (*add)(float* a, const float* b, int64_t n) = nullptr;  // a += b
  // SnakeBeta over x [rows][c]: y = x + inv_beta[ch] * sin(alpha[ch] * x)^2 (alpha, inv_beta
  // [c]: the activation's exp(alpha) and 1 / (exp(beta) + 1e-9)). y may alias x. The SIMD
  // variants' sin is a polynomial (kernels/snake_blocking.h states its error).
  void (*snake_beta)(const float* x, int64_t rows, int64_t c, const float* alpha,
                     const float* inv_beta, float* y) = nullptr;
  AttentionTasksFn attention = nullptr;
  // kv_store_row() (above): one position's K or V row into the cache, as type t. The SIMD
  // variants convert F16 with F16C and BF16 with integer rounding: the same bits as the
  // reference for every non-NaN input (a NaN stays a NaN, its payload may differ).
  void (*kv_store_row)(KvType t, const float* src, int32_t n_head_kv, int32_t head_dim,
                       uint8_t* dst) = nullptr;
  // Gated DeltaNet (kernels/delta_net.h): the causal conv1d + SiLU with its rolling state,
  // the delta rule token by token (the decode step) and chunk-wise (prefill), and the gated
  // RMSNorm y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w * silu(z[r]) (x, z, y [rows, dim],
  // w [dim]; y may alias x).
  void (*delta_conv)(const DeltaConvArgs& a, int64_t c0, int64_t c1) = nullptr;
  void (*delta_net_recurrent)(const DeltaNetArgs& a, int32_t h0, int32_t h1,
                              float* scratch) = nullptr;
  void (*delta_net_chunked)(const DeltaNetArgs& a, int32_t h0, int32_t h1,
                            float* scratch) = nullptr;
  void (*rmsnorm_gated)(const float* x, const float* w, const float* z, float* y, int64_t rows,
                        int64_t dim, float eps) = nullptr;
  // Packed weights (quant/packed.h) go through kernels/packed_api.h. With int8 activations
  // (W4A8 / W8A8) activations are quantised per row in blocks of the weight's group at run
  // time and the dot products are integer; otherwise activations stay F32 (W4A16).
  bool packed_int8_activations = false;
};

// The scalar table (always complete).
const KernelTable& reference_kernels();
// The table the engine uses: chosen once from the CPU (today: the reference).
const KernelTable& select_kernels();

// Dtypes a matmul / embedding can read directly.
bool kernel_supports_dtype(DType t);

// Parallel drivers: split the work among the pool's threads inside one ThreadPool::run.
// y[n, w.rows] = x[n, w.cols] . w^T. w must be 2-D with a supported dtype (CHECKed: the
// loader refuses anything else with a Status).
void matmul(const KernelTable& k, const float* x, int64_t n, const TensorView& w, float* y,
            ThreadPool& pool);
// Several projections of one input in ONE parallel region (q/k/v; gate/up):
// ys[i][n, ws[i]->rows] = x[n, in] . ws[i]^T, every ws[i] 2-D [rows_i, in] (same in).
// With int8 activations, x is quantised once per distinct group size; the panels (16-row
// chunks for dense weights) of all weights are split among threads by weight bytes.
// Results equal matmul() per weight, bit for bit. ws.size() == ys.size().
void matmul_group(const KernelTable& k, const float* x, int64_t n,
                  std::span<const TensorView* const> ws, std::span<float* const> ys,
                  ThreadPool& pool);
// One projection of a matmul_jobs call: y[n, w.rows] = x[n, w.cols] . w^T.
struct MatmulJob {
  const TensorView* w = nullptr;  // 2-D [out, in], a supported dtype
  const float* x = nullptr;       // [n, in]
  int64_t n = 0;                  // 0: skipped
  float* y = nullptr;             // [n, out]
};
// Independent projections, each of its own input, in ONE parallel region: the experts of
// a MoE layer (gate and up of every selected expert, then their down projections). The
// units of all jobs are split among threads by cost (weight bytes; times tokens for jobs
// past decode size, whose GEMM does work per token). With int8 activations each distinct
// input is quantised once. Results equal matmul() per job, bit for bit.
void matmul_jobs(const KernelTable& k, std::span<const MatmulJob> jobs, ThreadPool& pool);
void attention(const KernelTable& k, const AttentionArgs& a, ThreadPool& pool);
// Several independent attentions (one per sequence of a batch) in one parallel region,
// split among threads by the number of keys each (query, head) reads.
void attention_batch(const KernelTable& k, std::span<const AttentionArgs> as, ThreadPool& pool);
// out [w.cols] = row `row` of a 2-D F32/F16/BF16 or packed table (embedding lookup; a
// packed table is read in place, never expanded).
void embedding_row(const KernelTable& k, const TensorView& table, int64_t row, float* out);

}  // namespace edge
