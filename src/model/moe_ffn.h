// The FFN of a mixture-of-experts layer over one step's tokens (ForwardPass calls it for
// layers with LayerConfig::moe):
//
//   logits [n, n_expert] = xn . router^T (+ router bias)
//   per token: k experts and weights (moe_routing.h)
//   tokens grouped by expert: expert e's rows xg_e [m_e, n_embd] gathered once, then ONE
//     parallel region runs gate_e and up_e of every expert with tokens (the two projections of
//     an expert share their quantised input), the activation, and a second region the
//     down_e projections; an expert's weights are read once per step however many of the
//     step's tokens (of any sequence) chose it, and experts no token chose are not read
//   y[t] = sum_j w_tj * down_{e_tj}(t)  (+ the shared expert, gated or not)
//
// Scratch is sized to the step (max_tokens * n_expert_used rows), never to the context.
#pragma once

#include <cstdint>
#include <vector>

#include "core/memory_ledger.h"
#include "kernels/api.h"
#include "model/config.h"
#include "model/moe_routing.h"
#include "model/weights.h"

namespace edge {

class ThreadPool;

using MoeScratch = std::vector<float, TaggedAllocator<float, MemCategory::kScratch>>;

// The GLU of an FFN row block: gate [rows, width] = act(gate) * up (kSwiGlu, kGeGlu), or
// GPT-OSS's clamped form (ModelConfig::swiglu_limit). In place on gate.
void glu_rows(const KernelTable& k, const ModelConfig& c, float* gate, const float* up,
              int64_t rows, int64_t width);

class MoeFfn {
 public:
  MoeFfn() = default;
  // Scratch for steps of up to max_tokens tokens (nothing for a dense model).
  MoeFfn(const ModelConfig& c, int64_t max_tokens);

  // y [n, n_embd] = the MoE FFN of layer weights w on xn [n, n_embd] (y may not alias xn).
  void run(const ModelConfig& c, const LayerWeights& w, const KernelTable& k, const float* xn,
           int64_t n, float* y, ThreadPool& pool);
  // The experts the last run's tokens chose: [n * n_expert_used] in token order.
  const std::vector<ExpertChoice>& choices() const { return choices_; }
  uint64_t scratch_bytes() const;
  // Bytes of scratch a pass of max_tokens holds for config c (the memory plan's figure).
  static int64_t scratch_bytes_for(const ModelConfig& c, int64_t max_tokens);

 private:
  void route(const ModelConfig& c, const LayerWeights& w, const KernelTable& k, const float* xn,
             int64_t n, ThreadPool& pool);
  void group_by_expert(const ModelConfig& c, int64_t n);
  void experts(const ModelConfig& c, const LayerWeights& w, const KernelTable& k, const float* xn,
               ThreadPool& pool);
  void shared_expert(const ModelConfig& c, const LayerWeights& w, const KernelTable& k,
                     const float* xn, int64_t n, float* y, ThreadPool& pool);

  MoeScratch logits_;                  // [max_tokens, n_expert]
  std::vector<ExpertChoice> choices_;  // [max_tokens * k]
  std::vector<int32_t> first_row_;     // [n_expert + 1]: expert e's rows [first_row_[e], [e+1])
  std::vector<int32_t> row_of_;        // [max_tokens * k]: grouped row of choice (t, j)
  std::vector<int32_t> token_of_;      // [max_tokens * k]: token of grouped row r
  MoeScratch xg_;                      // [max_tokens * k, n_embd]: inputs, then down outputs
  MoeScratch gate_, up_;               // [max_tokens * k, n_ff_expert]
  MoeScratch sgate_, sup_, sout_;      // shared expert: [max_tokens, n_ff_shared], [.., n_embd]
  std::vector<MatmulJob> jobs_;
};

}  // namespace edge
