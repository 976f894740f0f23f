// Fidelity of a test model (e.g. a quantised copy) against a reference model over a corpus:
// per-position KL(p_ref || p_test) of the next-token distributions (double, from
// log-softmax), top-1 (argmax) agreement, and greedy exact match of G generated tokens.
// Used by `edge-infer fidelity`; the numbers gate quantisation formats (W8 should be near
// lossless, W4 measurably worse).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "model/model.h"

namespace edge {

// One prompt per line. A line of comma-separated integers (spaces allowed) is token ids;
// any other non-empty line is text, encoded with `tok` (BOS added as its vocabulary says).
// Blank lines are skipped. Errors (invalid_argument, naming the line): text without a
// tokenizer, an id outside [0, n_vocab), a malformed id list, a line that encodes to no
// tokens, or no prompts at all.
Expected<std::vector<std::vector<int32_t>>> parse_fidelity_prompts(std::string_view text,
                                                                   const Tokenizer* tok,
                                                                   int32_t n_vocab);

struct FidelityOptions {
  int64_t ctx = 512;       // prompts are truncated to their first ctx tokens (> 0)
  int greedy_tokens = 32;  // G tokens generated greedily per prompt by each model (>= 0)
  // KV cache types of each model's runs: the same model with f16 KV as ref and q4 KV as
  // test measures what the cache type alone costs.
  KvTypes ref_kv = KvType::kF32, test_kv = KvType::kF32;
  // Score only each prompt's last N positions (0: all). The earlier ones are prefilled
  // without logits: a 16K-token prompt's full logits would be 16K x n_vocab floats.
  int64_t score_last = 0;
};

struct FidelityResult {
  int64_t positions = 0;  // scored positions, summed over prompts
  int prompts = 0;
  double kl_mean = 0, kl_p99 = 0, kl_max = 0;  // nats
  double top1_agreement = 0;                   // fraction of positions with equal argmax
  // Sum over prompts of the tokens generated before the first divergence, over prompts*G
  // (1 when G is 0); greedy_identical: prompts whose G tokens are all equal.
  double greedy_match_fraction = 0;
  int greedy_identical = 0;
  std::vector<int> greedy_first_divergence;  // per prompt: first differing step, or G
};

// Refuses (invalid_argument) models of different vocabulary sizes, options out of range
// and an empty corpus. Runs ref and test one after the other on each prompt (the model
// pools are used one forward at a time).
Expected<FidelityResult> compare_models(const Model& ref, const Model& test,
                                        const std::vector<std::vector<int32_t>>& prompts,
                                        const FidelityOptions& options);

// The statistics as the JSON `edge-infer fidelity` prints (without provenance).
nlohmann::json fidelity_json(const FidelityResult& r);

// KL(p || q) of the softmaxes of two logit rows, in double (exposed for tests).
double kl_from_logits(const float* p_logits, const float* q_logits, int64_t n);

}  // namespace edge
