// The memory plan: what a model served with a given configuration will hold, per ledger
// category, computed from the file's metadata before any weight is read, and whether it
// fits the memory this process may use (MemAvailable, the cgroup limit (v2 or v1), a
// --memory-limit). A plan that does not fit is refused with the numbers, naming the
// largest category; `--ctx auto` searches the largest context that fits.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/memory_ledger.h"
#include "core/status.h"
#include "kernels/api.h"
#include "model/config.h"
#include "model/model_footprint.h"

namespace edge {

struct PlanOptions {
  int64_t ctx = 4096;            // positions per sequence (ignored when ctx_auto)
  bool ctx_auto = false;         // largest context that fits
  int64_t kv_budget_bytes = 0;   // exact KV budget; 0 = sized from ctx * max_seqs
  int64_t kv_budget_tokens = 0;  // budget as tokens per sequence (alternative to bytes)
  KvTypes kv_types = KvType::kF16;  // K's and V's element types
  int64_t max_seqs = 1;
  int64_t state_checkpoints = 0;  // recurrent state copies beside the slots (kv_cache.h)
  int64_t draft_states =
      0;  // speculative verify steps' state copies (engine: max_seqs * (1 + draft_max))
  int64_t max_batched_tokens = 512;  // activations are sized to this many tokens per step
  int64_t memory_limit = 0;          // --memory-limit bytes; 0 = none
  int n_threads = 0;                 // 0: all allowed cores (runtime estimate)
  // Media encoders served beside the model (--mmproj): their weights (mapped file pages,
  // anonymous repacked ones) and the activations of one encode; added to those categories.
  int64_t encoder_weights_mapped = 0, encoder_weights_anon = 0, encoder_scratch = 0;
  // A draft model for speculative decoding (--draft): its weights, and per sequence its
  // KV cache for ctx positions and the scratch of its short forwards. Not owned.
  const ModelFootprint* draft = nullptr;
};

// What a draft model adds for max_seqs sequences of ctx positions: weights (anonymous,
// mapped), KV caches (kv_types) and forward scratch (runtime/model_drafter.h's step size).
struct DraftModelBytes {
  int64_t weights_anon = 0, weights_mapped = 0, kv = 0, scratch = 0;
};
DraftModelBytes plan_draft_model_bytes(const ModelFootprint& draft, KvTypes kv_types, int64_t ctx,
                                       int64_t max_seqs);

// The memory this process may use: the smallest of MemAvailable, the cgroup room (limit -
// usage, v2 or v1: cgroup_room_under) and the --memory-limit flag. -1 = not known / no limit.
struct MemoryLimit {
  int64_t bytes = 0;
  std::string source;  // "MemAvailable", "cgroup", "--memory-limit"
  int64_t mem_available = -1;
  int64_t cgroup_room = -1;
  int64_t flag = -1;
};
MemoryLimit read_memory_limit(int64_t flag_limit);
// The cgroup room of the process whose /proc/self/cgroup is `proc_self_cgroup`, with the
// cgroup file systems under `root` (/sys/fs/cgroup): the smallest limit - usage over its
// cgroup and their ancestors, v2 first, else v1's memory controller (nested, or mounted at
// the container's own cgroup). -1 when no limit is set.
int64_t cgroup_room_under(const std::string& root, const std::string& proc_self_cgroup);

// KV bytes for the plan: paged in blocks of 16 tokens; per block per layer 16 * (K row +
// V row bytes, each of its own type); global layers need ceil(ctx / 16) blocks per sequence,
// sliding layers min(that, ceil((window + max_batched_tokens - 1) / 16) + 1); times max_seqs.
// Computed by model/kv_layout.h's KvLayout, the layout the cache itself uses.
int64_t plan_kv_bytes(const ModelConfig& c, KvTypes t, int64_t ctx, int64_t max_seqs,
                      int64_t max_batched_tokens);
// Activations for max_batched_tokens tokens per step plus logits for max_seqs rows:
// tokens * (4*n_embd + 2*q_dim + 2*kv_dim + 3*n_ff) * 4 + max_seqs * n_vocab * 4.
int64_t plan_scratch_bytes(const ModelConfig& c, int64_t max_batched_tokens, int64_t max_seqs);
// Process overhead nobody allocates on purpose: code and data of the binary and its
// libraries that are anonymous (relocations, .bss), thread stacks, allocator slack.
int64_t plan_runtime_bytes(int n_threads);

struct MemoryPlan {
  std::string model_path;
  std::string format;
  std::string arch;
  int32_t n_layer = 0;
  int32_t n_sliding_layers = 0;
  int64_t ctx = 0;
  int64_t model_max_ctx = 0;
  bool ctx_auto = false;
  KvTypes kv_types = KvType::kF16;
  int64_t max_seqs = 1;
  int64_t max_batched_tokens = 0;
  bool kv_from_budget = false;
  int64_t kv_needed_per_seq = 0;                   // bytes one sequence of ctx positions needs
  std::array<int64_t, kMemCategoryCount> bytes{};  // per MemCategory
  MemoryLimit limit;
  bool admitted = false;
  std::string refusal;  // why, with the numbers (empty when admitted)
  // A MoE model whose experts are used in place from the file (a pre-packed file): the
  // experts' pages are the kernel's to evict and read back, so the plan counts only what of
  // them fits beside everything else (kWeightsMapped holds that share), admits the model
  // when one token's active experts fit at least, and says what a token then reads from
  // disk (its active bytes times the share of the experts not resident, routing uniform).
  int64_t experts_mapped = 0;        // all mapped expert bytes
  int64_t experts_resident = 0;      // of them, the bytes the plan keeps resident
  int64_t active_expert_bytes = 0;   // read per decoded token
  int64_t disk_bytes_per_token = 0;  // expected reads from disk per token (0: all resident)

  int64_t of(MemCategory c) const { return bytes[static_cast<int>(c)]; }
  int64_t total() const;
  int64_t anon_total() const;  // everything but the mapped weights
  MemCategory largest() const;
  nlohmann::json to_json() const;
  std::string table() const;  // human-readable, one category per line
};

// Computes the plan for a fixed context and decides admission. Errors (not refusals):
// a bad option (ctx < 1, max_seqs < 1, ...).
Expected<MemoryPlan> make_memory_plan(const ModelFootprint& m, const PlanOptions& o,
                                      const MemoryLimit& limit);
// ctx_auto: the largest context in [16, model's advertised context (or 131072)] whose plan
// is admitted (binary search); the smallest's refused plan when none fits. Without
// ctx_auto, make_memory_plan.
Expected<MemoryPlan> plan_memory(const ModelFootprint& m, const PlanOptions& o,
                                 const MemoryLimit& limit);
// OK when admitted, else resource_exhausted carrying plan.refusal.
Status admission_status(const MemoryPlan& plan);

}  // namespace edge
