// Filling a sequence's context for memory measurements (docs/measuring.md rule 5: a cache
// that was allocated but never written says nothing about its size).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/memory_ledger.h"
#include "core/status.h"
#include "model/forward.h"
#include "model/model.h"

namespace edge::cli {

// n token ids: the tokenized prompt file (repeated to length), or ordinary text when no
// file is given (ids cycling over the vocabulary when the model has no tokenizer).
Expected<std::vector<int32_t>> make_fill_tokens(const Model& model, int64_t n, const std::string& prompt_file);

// Runs tokens through the state in steps of at most `step` tokens; returns the last
// step's logits (last position).
Expected<std::span<const float>> run_in_steps(InferenceState& state, std::span<const int32_t> tokens, int64_t step);

// Ledger charges for a state whose forward pass does not tag its own buffers yet: KV
// (kv_cache_bytes) and scratch (the plan's estimate for `step` tokens) are charged here
// only when the ledger shows none, so a tagging forward pass is never counted twice.
struct UntaggedStateCharges {
  LedgerCharge kv, scratch;
  bool kv_charged_here = false, scratch_charged_here = false;
};
void charge_untagged_state(const Model& model, const InferenceState& state, int64_t step,
                           int64_t kv_before, int64_t scratch_before, UntaggedStateCharges& out);

}  // namespace edge::cli
