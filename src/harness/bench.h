// llama-bench-compatible throughput tests. pp<N>: one batched forward of N prompt tokens
// into an empty context; tg<N>: N single-token decode steps from an empty context (no
// prompt cost inside). Each test: one warm-up, then `reps` timed repetitions; records
// carry llama-bench's field names plus our provenance.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/api.h"

namespace edge {

class Model;

struct BenchOptions {
  std::vector<int> n_prompt = {512};
  std::vector<int> n_gen = {128};
  int reps = 5;
  uint64_t seed = 1234;  // for the random prompt tokens
  KvType kv_type = KvType::kF16;  // llama-bench's default cache type
  int64_t n_ubatch = 512;         // prompt tokens per forward step
};

// Runs every pp and tg test (n = 0 entries skipped) and returns one JSON record each.
Expected<nlohmann::json> run_bench(Model& model, const BenchOptions& o);
// llama-bench's markdown table (model, size, params, backend, threads, test, t/s).
std::string bench_markdown(const nlohmann::json& records);

}  // namespace edge
