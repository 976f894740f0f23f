// Gated DeltaNet (linear attention) kernels, the three layers out of four of the hybrid
// Qwen3-Next / Qwen3.5 models that are not full attention. The model code calls, per layer
// and per token batch of one sequence:
//
//   1. the input projections (matmuls, not here): mixed qkv [n, C] with C = 2 * n_k_heads *
//      d_k + n_v_heads * d_v (q channels, then k, then v), z [n, n_v_heads * d_v] (the
//      output gate), a and b [n, n_v_heads] (decay and write-strength logits);
//   2. delta_net_conv: a causal depthwise conv1d along time over the C channels of mixed
//      qkv, kernel K = 4, no bias, then SiLU:
//          y[t, c] = silu( sum_{j<K} w[c, j] * x[t - (K-1) + j, c] )
//      where x at a time before the batch comes from the rolling conv state, the last K-1
//      inputs of the sequence [K-1, C] (oldest first; zeros for a new sequence). The call
//      shifts the batch's last K-1 inputs into it. The same call serves a prefill of n
//      tokens and a decode token (n = 1). (HF's cache keeps K inputs, the oldest never
//      read; ik_llama.cpp keeps K-1, channel-major.)
//   3. delta_net_gates: per token and value head, the log-decay and the write strength
//          g    = -exp(A_log) * softplus(a + dt_bias)   (<= 0, so exp(g) in (0, 1])
//          beta = sigmoid(b)
//      The recurrence kernels take g and beta PRECOMPUTED ([n, n_v_heads] each);
//   4. the delta rule, per value head h (state S_h [d_k, d_v], F32, in place). Value head h
//      reads q/k of key head kh(h): with r = n_v_heads / n_k_heads value heads per key head,
//      kh = h / r (kGrouped: consecutive value heads share a key head; HF's
//      repeat_interleave for Qwen3-Next, and ik_llama.cpp's delta_net with repeat type 0,
//      which it takes for files with a fused beta/alpha projection) or kh = h % n_k_heads
//      (kTiled: ik_llama.cpp's repeat type 1, for files with separate beta and alpha
//      tensors, whose value heads the converter laid out in that order). The model code
//      picks the map from the file; the kernels take either. The kernel normalises q and k
//      itself from the conv output (HF's l2norm, eps 1e-6 inside the root):
//          q' = q / sqrt(|q|^2 + 1e-6) / sqrt(d_k),   k' = k / sqrt(|k|^2 + 1e-6)
//      then for each token t:
//          S     <- exp(g_t) * S                       decay the memory
//          u     =  S^T k'                             [d_v] what S recalls for key k'
//          delta =  beta_t * (v_t - u)                 [d_v] the correction to store
//          S     <- S + k' delta^T                     rank-1 write
//          o_t   =  S^T q'                             [d_v] the read-out
//      delta_net_decode runs this token by token (the decode step); delta_net_prefill runs
//      the same recurrence chunk-wise (64 tokens at a time, below), to rounding;
//   5. gated RMSNorm per value head (KernelTable::rmsnorm_gated), over d_v with a weight
//      [d_v] shared by all heads:  y = o / sqrt(mean(o^2) + eps) * w * silu(z) (w as
//      stored: HF's Qwen3NextRMSNormGated multiplies by w, not 1 + w);
//   6. the output projection (matmul, not here).
//
// The chunk-wise form (one chunk of L <= 64 tokens, state S0 at its start; gc_t the
// cumulative sum of g over the chunk up to and including t, G_t = exp(gc_t)): unrolling the
// recurrence, S_t = G_t S0 + sum_{s<=t} exp(gc_t - gc_s) k'_s delta_s^T, so the deltas of
// the chunk (rows of D [L, d_v]) satisfy the unit lower-triangular system
//          (I + A) D = R,   A[t, s] = beta_t exp(gc_t - gc_s) (k'_t . k'_s)  (s < t)
//                           R_t     = beta_t (v_t - G_t S0^T k'_t)
// solved by forward substitution (row t needs rows s < t). Then, with M[t, s] =
// exp(gc_t - gc_s) for s <= t and 0 above:
//          O   = diag(G) Q' S0 + (M o Q' K'^T) D          [L, d_v]
//          S_L = G_{L-1} S0 + (diag(exp(gc_{L-1} - gc)) K')^T D
// i.e. per chunk the matmuls [Q'; K'] S0 ([2L, d_k] x [d_k, d_v]), Q' K'^T and K' K'^T
// ([L, d_k] x [d_k, L]), the L x L solve, the masked [L, L] x [L, d_v] and the rank-L
// update [d_k, L] x [L, d_v]; across chunks only S is carried. The last chunk may be short
// (no padding). Every exponent is <= 0 (g <= 0), so nothing overflows.
//
// Layouts: activations are F32 row-major with tokens as rows. Work is split by value head
// (the recurrence of one head is sequential in time); the conv by channel.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/api.h"

namespace edge {

class ThreadPool;

enum class DeltaNetHeadMap : uint8_t {
  kGrouped,  // value head h reads key head h / (n_v_heads / n_k_heads)
  kTiled,    // value head h reads key head h % n_k_heads
};

// The sizes of one DeltaNet layer (Qwen3-Next-80B: 16 key heads, 32 value heads,
// d_k = d_v = 128, conv kernel 4).
struct DeltaNetShape {
  int32_t n_k_heads = 0, n_v_heads = 0;  // n_v_heads a multiple of n_k_heads
  int32_t d_k = 0, d_v = 0;
  int32_t conv_kernel = 4;
  DeltaNetHeadMap head_map = DeltaNetHeadMap::kGrouped;

  int64_t key_dim() const { return int64_t{n_k_heads} * d_k; }
  int64_t value_dim() const { return int64_t{n_v_heads} * d_v; }
  int64_t conv_channels() const { return 2 * key_dim() + value_dim(); }  // q, k, v
  int32_t k_head_of(int32_t v_head) const {
    return head_map == DeltaNetHeadMap::kGrouped ? v_head / (n_v_heads / n_k_heads)
                                                 : v_head % n_k_heads;
  }
};

// Per sequence and layer: the conv state [conv_kernel - 1, conv_channels] and the
// recurrent state [n_v_heads, d_k, d_v], both F32. delta_net_state_bytes() is their sum, what
// the memory plan reserves for each sequence a DeltaNet layer serves (independent of the
// context length).
int64_t delta_net_conv_state_floats(const DeltaNetShape& s);
int64_t delta_net_recurrent_state_floats(const DeltaNetShape& s);
int64_t delta_net_state_bytes(const DeltaNetShape& s);

// The causal depthwise conv1d + SiLU over n tokens of one sequence (step 2 above).
struct DeltaConvArgs {
  const float* x = nullptr;  // [n, stride]: row t's first `channels` floats are the mixed
                             // qkv projection of token t
  const float* w = nullptr;  // [channels, kernel]: HF conv1d.weight [C, 1, K] squeezed
                             // (GGUF ssm_conv1d, ne = {K, C}: the same bytes)
  float* state = nullptr;    // [kernel - 1, channels] last inputs, oldest first; in/out
  float* out = nullptr;      // [n, stride] likewise; may alias x (in place)
  int64_t n = 0;             // tokens (1 for a decode step)
  int64_t channels = 0;
  int64_t stride = 0;  // floats between rows of x and of out, >= channels (0: channels), so
                       // the conv can run inside a wider projection output (qkv then z)
  int32_t kernel = 4;  // 2..8
  int64_t row_stride() const { return stride > 0 ? stride : channels; }
};

// The delta rule over n tokens of ONE sequence (step 4 above).
struct DeltaNetArgs {
  DeltaNetShape shape;
  // [n, qkv_stride]: row t holds q [n_k_heads, d_k] at column 0, k [n_k_heads, d_k] at
  // column key_dim(), v [n_v_heads, d_v] at 2 * key_dim() (the conv output as it is).
  const float* qkv = nullptr;
  int64_t qkv_stride = 0;
  const float* g = nullptr;     // [n, n_v_heads] log-decay (<= 0), from delta_net_gates
  const float* beta = nullptr;  // [n, n_v_heads] in [0, 1], from delta_net_gates
  float* state = nullptr;       // [n_v_heads, d_k, d_v] in/out
  float* out = nullptr;         // [n, n_v_heads * d_v] the read-out o (before the norm)
  int64_t n = 0;
};

// Table entries (kernels/api.h KernelTable):
// Channels [c0, c1) of a conv (their state columns too).
using DeltaConvFn = void (*)(const DeltaConvArgs& a, int64_t c0, int64_t c1);
// Value heads [h0, h1) of a DeltaNetArgs: token by token (delta_net_recurrent) or chunk-wise
// (delta_net_chunked); scratch holds delta_net_scratch_floats() floats.
using DeltaNetHeadsFn = void (*)(const DeltaNetArgs& a, int32_t h0, int32_t h1, float* scratch);

// Floats of scratch a DeltaNetHeadsFn needs for this shape (enough for both forms).
int64_t delta_net_scratch_floats(const DeltaNetShape& s);
constexpr int64_t kDeltaNetChunk = 64;  // tokens per chunk of the chunk-wise form

// g[t, h] = -exp(A_log[h]) * softplus(a[t, h] + dt_bias[h]), beta[t, h] = sigmoid(b[t, h])
// for n tokens; a, b, g, beta [n, n_v_heads]; A_log, dt_bias [n_v_heads]. softplus(x) is x
// above 20 (torch's threshold). Scalar: n * n_v_heads values, nothing to vectorise for.
void delta_net_gates(const float* a, const float* b, const float* A_log, const float* dt_bias,
                     int64_t n, int32_t n_v_heads, float* g, float* beta);

// Parallel drivers (split among the pool's threads inside one ThreadPool::run).
// The conv of one sequence, split by channel.
void delta_net_conv(const KernelTable& k, const DeltaConvArgs& a, ThreadPool& pool);
// Decode: one step per sequence (each args usually n = 1; n > 1 runs token by token), the
// (sequence, value head) pairs split among threads. Each sequence has its own state.
void delta_net_decode(const KernelTable& k, std::span<const DeltaNetArgs> as, ThreadPool& pool);
// The a.n tokens of one sequence one by one in the decode form (the numbers of n decode
// steps), the recurrent state after token t copied to kept + t * kept_stride ([n_v_heads,
// d_k, d_v] there): a speculative verify step, which may have to go back to any of them.
// One region; each thread runs its value heads through every token (a head's recurrence
// needs no other head), so its heads' states stay in its cache between the tokens and the
// copies read them from there.
void delta_net_decode_kept(const KernelTable& k, const DeltaNetArgs& a, float* kept,
                           int64_t kept_stride, ThreadPool& pool);
// Prefill of n tokens of one sequence from a.state, chunk-wise; value heads split among
// threads. Leaves the final state in a.state.
void delta_net_prefill(const KernelTable& k, const DeltaNetArgs& a, ThreadPool& pool);

}  // namespace edge
