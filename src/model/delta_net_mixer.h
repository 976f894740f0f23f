// The token mixer of a Gated DeltaNet layer (LayerConfig::recurrent: three layers of four
// in Qwen3-Next / Qwen3.5) over one step's tokens; ForwardPass calls it where an attention
// layer would run attention. With C = conv channels, V = value dim, H = value heads:
//
//   qkv [n, C] = xn . attn_qkv^T      z [n, V] = xn . attn_gate^T
//   alpha, beta [n, H] = xn . ssm_alpha^T, xn . ssm_beta^T        (one parallel region)
//   per sequence: causal conv1d + SiLU over its rows of qkv, from its conv state
//   g = ssm_a * softplus(alpha + ssm_dt), beta = sigmoid(beta)    [n, H]
//   per sequence: the delta rule from its recurrent state -> o [n, V]
//     (decode slices of every sequence in one region, token by token; a prefill slice
//     chunk-wise, 64 tokens per chunk)
//   o = rmsnorm(o per head) * ssm_norm * silu(z);   y [n, n_embd] = o . ssm_out^T
//
// The state of a sequence (conv then delta rule, kernels/delta_net.h) is updated in place;
// a slice starting at position 0 starts from zeros. Scratch is sized to the step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/memory_ledger.h"
#include "kernels/api.h"
#include "kernels/delta_net.h"
#include "model/config.h"
#include "model/weights.h"

namespace edge {

class ThreadPool;

// One sequence's slice of the step: rows [t0, t0 + n) of the step's tokens, and its state
// for this layer (KvStorage::state: the conv state [K-1, C] then the delta-rule state
// [H, d_k, d_v]).
struct DeltaNetSlice {
  int64_t t0 = 0;
  int64_t n = 0;
  float* state = nullptr;
  // Speculative verify steps: [n, state floats] receives the state after each token (conv
  // then delta rule, as `state`), so the sequence can go back to any of them. The slice then
  // runs token by token, exactly as n decode steps would.
  float* snapshots = nullptr;
};

class DeltaNetMixer {
 public:
  DeltaNetMixer() = default;
  // Scratch for steps of up to max_tokens tokens (nothing without recurrent layers).
  DeltaNetMixer(const ModelConfig& c, int64_t max_tokens);

  // y [n, n_embd] = the mixer of layer weights w on xn [n, n_embd] (y may not alias xn).
  void run(const ModelConfig& c, const LayerWeights& w, const KernelTable& k, const float* xn,
           int64_t n, std::span<const DeltaNetSlice> slices, float* y, ThreadPool& pool);
  uint64_t scratch_bytes() const;
  // Bytes of scratch a pass of max_tokens holds for config c (the memory plan's figure).
  static int64_t scratch_bytes_for(const ModelConfig& c, int64_t max_tokens);

 private:
  using Scratch = std::vector<float, TaggedAllocator<float, MemCategory::kScratch>>;
  void project(const ModelConfig& c, const LayerWeights& w, const KernelTable& k, const float* xn,
               int64_t n, ThreadPool& pool);
  void gates(const ModelConfig& c, const LayerWeights& w, int64_t n);
  void delta_rule(const ModelConfig& c, const KernelTable& k, std::span<const DeltaNetSlice> slices,
                  ThreadPool& pool);

  Scratch qkv_;           // [max_tokens, C]: projections, then the conv output in place
  Scratch z_;             // [max_tokens, V]
  Scratch alpha_, beta_;  // [max_tokens, H]: logits, then g and beta in place
  Scratch o_;             // [max_tokens, V]: the read-out, then the gated norm in place
  // Qwen3-Next (ModelConfig::linear_fused_qkvz): ssm_in's and ssm_ba's outputs, per key head,
  // before they are spread into the four above. Empty otherwise.
  Scratch qkvz_;  // [max_tokens, C + V]
  Scratch ba_;    // [max_tokens, 2 H]
  std::vector<DeltaNetArgs> decode_;
};

}  // namespace edge
