// llama-bench-compatible throughput tests. pp<N>: one batched forward of N prompt tokens
// into an empty context; tg<N>: N single-token decode steps from an empty context (no
// prompt cost inside); with a depth D (-d), both start after D untimed prefilled tokens. Each test: one warm-up, then `reps` timed repetitions; records
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
  // Context depths (llama-bench's -d): each test runs after this many tokens were prefilled
  // (untimed), so tg<N> @ d<D> decodes at positions D..D+N-1.
  std::vector<int> n_depth = {0};
  int reps = 5;
  uint64_t seed = 1234;  // for the random prompt tokens
  KvTypes kv_types = KvType::kF16;  // llama-bench's default cache types (-ctk, -ctv)
  int64_t n_ubatch = 512;         // prompt tokens per forward step
  // Decode against the machine's streaming-read ceiling measured in the same run (the
  // bandwidth probe, before and after the tg tests; the better pass is the ceiling): each
  // tg record gets the bytes of weights and KV read per token, the effective GB/s and the
  // fraction of the ceiling. 0 bytes: no probe.
  uint64_t roofline_bytes = uint64_t{1} << 30;
  int roofline_passes = 3;
};

// Bytes one decode step at position `pos` reads: every layer's matrices, the output head,
// one embedding row, the norms, and the K and V rows its attention visits (global layers
// all pos + 1 of them, sliding layers at most their window).
struct DecodeBytes {
  uint64_t weights = 0;          // read per decoded token: a MoE layer's active experts only
  uint64_t expert_bytes = 0;     // every expert of every MoE layer (what stays mapped)
  uint64_t kv_per_position = 0;  // K + V rows of one position, summed over global layers
  uint64_t kv_sliding_window_bytes = 0;  // the same for sliding layers, per position
  std::vector<int32_t> sliding_windows;  // one per sliding layer
  uint64_t at(int64_t pos) const;
};
DecodeBytes decode_bytes(const Model& model, KvTypes kv_types);

// Runs every pp and tg test (n = 0 entries skipped) and returns one JSON record each.
Expected<nlohmann::json> run_bench(Model& model, const BenchOptions& o);
// llama-bench's markdown table (model, size, params, backend, threads, test, t/s).
std::string bench_markdown(const nlohmann::json& records);

}  // namespace edge
