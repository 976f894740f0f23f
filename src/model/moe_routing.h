// Router of a mixture-of-experts layer: from one token's router logits [n_expert] to the
// n_expert_used experts it runs and their weights (MoeConfig::gating), in the order of
// selection (highest score first; equal scores: the lower expert index first).
#pragma once

#include <cstdint>
#include <span>

#include "model/config.h"

namespace edge {

struct ExpertChoice {
  int32_t expert = 0;
  float weight = 0.0f;
};

// logits [n_expert] (router bias already added); selection_bias [n_expert] or empty (only
// with kSigmoid: added to the scores that choose, not to the weights). scratch: >= n_expert
// floats. Writes out[0 .. n_expert_used).
void route_token(const MoeConfig& m, const float* logits, std::span<const float> selection_bias,
                 float* scratch, ExpertChoice* out);

}  // namespace edge
