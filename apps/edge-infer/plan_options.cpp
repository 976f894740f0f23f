#include "plan_options.h"

#include <optional>

#include "model/model_footprint.h"

namespace edge::cli {

Expected<KvTypes> kv_types_from(const std::string& both, const std::string& k,
                                const std::string& v) {
  return parse_kv_types(k.empty() ? both : k, v.empty() ? both : v);
}

void add_kv_type_options(CLI::App* sub, std::string& both, std::string& k, std::string& v) {
  sub->add_option("--kv-type", both,
                  std::string("KV cache element type, K and V: ") + kv_type_choices() +
                      " (q4: 4-bit codes of rotated rows)")
      ->capture_default_str();
  sub->add_option("--kv-type-k,--cache-type-k", k, "K cache element type (default: --kv-type)");
  sub->add_option("--kv-type-v,--cache-type-v", v, "V cache element type (default: --kv-type)");
}

void add_plan_options(CLI::App* sub, PlanArgs& a, bool with_ctx) {
  if (with_ctx)
    sub->add_option("-c,--ctx", a.ctx, "context per sequence: N or auto (largest that fits)");
  sub->add_option("--kv-budget", a.kv_budget,
                  "exact KV cache budget: bytes (192MiB, 2GiB) or tokens (4096tok)");
  add_kv_type_options(sub, a.kv_type, a.kv_type_k, a.kv_type_v);
  sub->add_option("--max-seqs", a.max_seqs, "sequences served at once")->capture_default_str();
  sub->add_option("--max-batched-tokens", a.max_batched_tokens,
                  "tokens per forward step (sizes activations)")
      ->capture_default_str();
  sub->add_option("--memory-limit", a.memory_limit,
                  "memory this process may use (e.g. 2GiB); "
                  "default: MemAvailable and the cgroup limit");
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status parse_budget(const std::string& text, PlanOptions& o) {
  for (const char* suffix : {"tokens", "tok"}) {
    if (!ends_with(text, suffix)) continue;
    const std::string num = text.substr(0, text.size() - std::string(suffix).size());
    auto n = parse_byte_size(num);  // plain integer parse; units make no sense here
    if (!n || *n <= 0 || num.find_first_not_of("0123456789 ") != std::string::npos)
      return Status::invalid_argument("bad --kv-budget '" + text + "'");
    o.kv_budget_tokens = *n;
    return Status();
  }
  ASSIGN_OR_RETURN(o.kv_budget_bytes, parse_byte_size(text));
  if (o.kv_budget_bytes <= 0) return Status::invalid_argument("--kv-budget must be positive");
  return Status();
}

}  // namespace

Expected<PlanOptions> plan_options_from(const PlanArgs& a, int64_t default_ctx, int threads) {
  PlanOptions o;
  o.n_threads = threads;
  if (a.ctx == "auto") {
    o.ctx_auto = true;
  } else if (!a.ctx.empty()) {
    char* end = nullptr;
    const long long v = std::strtoll(a.ctx.c_str(), &end, 10);
    if (*end != '\0' || v < 1)
      return Status::invalid_argument("--ctx must be a positive integer or auto (got " + a.ctx +
                                      ")");
    o.ctx = v;
  } else {
    o.ctx = default_ctx;
  }
  ASSIGN_OR_RETURN(o.kv_types, kv_types_from(a.kv_type, a.kv_type_k, a.kv_type_v));
  if (!a.kv_budget.empty()) RETURN_IF_ERROR(parse_budget(a.kv_budget, o));
  if (a.max_seqs < 1) return Status::invalid_argument("--max-seqs must be at least 1");
  if (a.max_batched_tokens < 1)
    return Status::invalid_argument("--max-batched-tokens must be at least 1");
  o.max_seqs = a.max_seqs;
  o.max_batched_tokens = a.max_batched_tokens;
  if (!a.memory_limit.empty()) {
    ASSIGN_OR_RETURN(o.memory_limit, parse_byte_size(a.memory_limit));
    if (o.memory_limit <= 0) return Status::invalid_argument("--memory-limit must be positive");
  }
  return o;
}

Expected<MemoryLimit> memory_limit_flag(const std::string& flag) {
  int64_t bytes = 0;
  if (!flag.empty()) {
    auto b = parse_byte_size(flag);
    if (!b) return b.status().with_context("--memory-limit");
    bytes = *b;
  }
  return read_memory_limit(bytes);
}

Expected<MemoryPlan> plan_for_model(const std::string& model_path, const PlanOptions& o) {
  ASSIGN_OR_RETURN(ModelFootprint fp, read_model_footprint(model_path));
  return plan_memory(fp, o, read_memory_limit(o.memory_limit));
}

Status check_plan_before_load(const std::string& model_path, int64_t ctx,
                              const std::string& memory_limit, int threads,
                              const std::string& draft_path, KvTypes kv_types) {
  ASSIGN_OR_RETURN(ModelFootprint fp, read_model_footprint(model_path));
  std::optional<ModelFootprint> draft;
  if (!draft_path.empty()) {
    auto d = read_model_footprint(draft_path);
    if (!d)
      return Status(d.status().code(), "draft model " + draft_path + ": " + d.status().message());
    draft = std::move(*d);
  }
  PlanArgs args;
  args.memory_limit = memory_limit;
  const int64_t model_ctx = fp.config.max_ctx > 0 ? fp.config.max_ctx : 4096;
  ASSIGN_OR_RETURN(
      PlanOptions o,
      plan_options_from(args, ctx > 0 ? ctx : std::min<int64_t>(model_ctx, 4096), threads));
  if (draft) o.draft = &*draft;
  o.kv_types = kv_types;
  ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(fp, o, read_memory_limit(o.memory_limit)));
  return admission_status(plan);
}

}  // namespace edge::cli
