// Speculative decoding at controlled acceptance (issue 39's speed check). Random weights
// make real drafts meaningless, so a benchmark-only oracle drafter replays the model's own
// greedy continuation, recorded in an untimed first run, with each drafted token replaced
// by a wrong one with probability 1 - alpha: alpha is then exactly the per-token acceptance
// (the chance a draft is taken once the drafts before it were). For each alpha the same
// prompt decodes n_gen tokens plainly and speculatively, interleaved rep by rep; each
// speculative run must give the recorded tokens (greedy: identical) or the bench fails.
// Each run starts with a fresh draft controller and cost table, as one `generate` call does.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/status.h"
#include "runtime/speculative.h"

namespace edge {

class Model;

struct SpecBenchOptions {
  std::vector<double> acceptance = {0.8, 0.5, 0.0};  // per-token acceptance alphas
  std::vector<int> n_gen = {128};
  int n_prompt = 32;  // random prompt tokens (prefilled untimed)
  int draft_max = 4;  // the controller's longest draft
  int reps = 3;
  uint64_t seed = 1234;
};

// Replays `future` (the tokens after the first n_prompt of a history), each token wrong
// with probability 1 - alpha.
class OracleDrafter final : public Drafter {
 public:
  OracleDrafter(size_t n_prompt, std::vector<int32_t> future, double alpha, int32_t n_vocab,
                uint64_t seed);
  std::vector<int32_t> draft(std::span<const int32_t> history, int32_t max_tokens) override;

 private:
  size_t n_prompt_;
  std::vector<int32_t> future_;
  double alpha_;
  int32_t n_vocab_;
  uint64_t state_;  // splitmix64: cheap and reproducible
};

// One record per (n_gen, alpha): plain and speculative t/s (samples and medians), the
// speedup (the median of the per-rep ratios of the paired runs; the ratio of the medians too), the
// measured acceptance (accepted / drafted), mean accepted per verify step, tokens per pass over the
// weights, verify cost in plain steps; provenance as bench's.
Expected<nlohmann::json> run_spec_bench(Model& model, const SpecBenchOptions& o);
std::string spec_bench_markdown(const nlohmann::json& records);

}  // namespace edge
