// CLI options shared by the commands that plan memory before loading (plan, memory,
// bench-init, generate): --ctx N|auto, --kv-budget, --kv-type (K and V), --kv-type-k,
// --kv-type-v, --max-seqs,
// --max-batched-tokens, --memory-limit. Sizes accept 1000000, 192MiB, 2GiB, 1.5GB.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/status.h"
#include "runtime/memory_plan.h"

namespace edge::cli {

struct PlanArgs {
  std::string ctx;        // "N" or "auto"; empty = the command's default
  std::string kv_budget;  // "192MiB", "1000000", or "4096tok" (tokens per sequence)
  std::string kv_type = "f16";  // K and V, unless one is set on its own
  std::string kv_type_k, kv_type_v;
  int64_t max_seqs = 1;
  int64_t max_batched_tokens = 512;
  std::string memory_limit;  // "" = none
};

// K's and V's types from --kv-type and the per-cache overrides ("" = --kv-type's).
Expected<KvTypes> kv_types_from(const std::string& both, const std::string& k,
                                const std::string& v);
// Adds --kv-type, --kv-type-k and --kv-type-v to `sub`.
void add_kv_type_options(CLI::App* sub, std::string& both, std::string& k, std::string& v);

// Adds the options to `sub`. with_ctx=false when the command has its own --ctx.
void add_plan_options(CLI::App* sub, PlanArgs& a, bool with_ctx = true);
// Builds PlanOptions; default_ctx when --ctx was not given.
Expected<PlanOptions> plan_options_from(const PlanArgs& a, int64_t default_ctx, int threads);
// Reads the model's metadata and plans; the plan may be refused (plan.admitted false).
Expected<MemoryPlan> plan_for_model(const std::string& model_path, const PlanOptions& o);

// The memory this process may use, with an optional --memory-limit ("" : none).
Expected<MemoryLimit> memory_limit_flag(const std::string& flag);

// For generate (and serve): plans the served configuration from the model's metadata and
// refuses, before any weight is read, when it cannot fit. ctx 0: min(model's, 4096), as
// generate serves; memory_limit "" = MemAvailable / cgroup only. draft_path: a draft model
// (--draft) counted beside it; kv_types: the cache's (generate's default f32).
Status check_plan_before_load(const std::string& model_path, int64_t ctx,
                              const std::string& memory_limit, int threads,
                              const std::string& draft_path = "", KvTypes kv_types = KvType::kF32);

}  // namespace edge::cli
