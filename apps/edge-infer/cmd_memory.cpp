// edge-infer memory -m MODEL --ctx N [--fill] [--json]
// edge-infer memory --pipeline FILE [--ctx N] [--memory-limit M] [--json]
// Loads the model (after the same plan as generate), optionally fills the context with N
// tokens, and prints the memory ledger beside what the kernel says this process holds:
// RssAnon / RssFile, mincore residency of the mapped weights, and the part of RssAnon no
// ledger category accounts for (which must stay under 5% of RssAnon). With --pipeline it
// starts the graph's stages and prints each stage's reservation on the shared RAM ledger
// beside its measured resident bytes, placement and process generation.
#include <cstdio>

#include "commands.h"
#include "fill_context.h"
#include "harness/rss_sampler.h"
#include "pipeline/graph/executor.h"
#include "plan_options.h"

namespace edge::cli {
namespace {

struct MemoryArgs {
  std::string model;
  std::string pipeline_file;
  PlanArgs plan;
  int threads = 0;
  bool fill = false;
  bool json = false;
  std::string prompt_file;
};

struct Measured {
  RssSample rss;
  LedgerSnapshot ledger;
  Residency mapped;
  Residency experts;  // the MoE experts among the mapped weights
  int64_t unattributed = 0;
};

Measured measure(const Model& model) {
  Measured m;
  m.rss = read_rss_tree(getpid());
  m.ledger = ledger_snapshot();
  for (const auto& [data, bytes] : model.memory().mapped_ranges) {
    auto r = mincore_residency(data, bytes);
    if (!r) continue;
    m.mapped.resident += r->resident;
    m.mapped.total += r->total;
  }
  for (const auto& [data, bytes] : model.memory().expert_ranges) {
    auto r = mincore_residency(data, bytes);
    if (!r) continue;
    m.experts.resident += r->resident;
    m.experts.total += r->total;
  }
  m.unattributed = m.rss.anon - m.ledger.anon_total();
  return m;
}

void print_table(const Measured& m, const MemoryPlan& plan, const UntaggedStateCharges& charges, bool filled) {
  std::printf("%-16s %12s %12s %12s\n", "category", "ledger", "peak", "plan");
  for (int i = 0; i < kMemCategoryCount; ++i) {
    const auto c = static_cast<MemCategory>(i);
    const char* note = "";
    if (c == MemCategory::kKv && charges.kv_charged_here) note = "  (untagged by forward: charged here)";
    if (c == MemCategory::kScratch && charges.scratch_charged_here) note = "  (untagged by forward: estimate)";
    if (c == MemCategory::kWeightsMapped) note = "  (file pages, not in RssAnon)";
    std::printf("%-16s %12s %12s %12s%s\n", mem_category_name(c), format_bytes(m.ledger.current[i]).c_str(),
                format_bytes(m.ledger.peak[i]).c_str(), format_bytes(plan.bytes[i]).c_str(), note);
  }
  std::printf("%-16s %12s %12s %12s\n", "ledger anon", format_bytes(m.ledger.anon_total()).c_str(), "",
              format_bytes(plan.anon_total()).c_str());
  std::printf("\nmeasured (process tree, %d process%s)\n", m.rss.processes, m.rss.processes > 1 ? "es" : "");
  std::printf("  RssAnon   %12s\n  RssFile   %12s\n  RssShmem  %12s\n", format_bytes(m.rss.anon).c_str(),
              format_bytes(m.rss.file).c_str(), format_bytes(m.rss.shmem).c_str());
  std::printf("  mapped weights resident (mincore) %s of %s\n", format_bytes(m.mapped.resident).c_str(),
              format_bytes(m.mapped.total).c_str());
  if (m.experts.total > 0)
    std::printf("  of them MoE experts resident %s of %s (the rest stays on disk until a token picks it)\n",
                format_bytes(m.experts.resident).c_str(), format_bytes(m.experts.total).c_str());
  const double pct = m.rss.anon > 0 ? 100.0 * m.unattributed / m.rss.anon : 0.0;
  std::printf("  unattributed RssAnon - ledger anon = %s (%.1f%% of RssAnon)%s\n",
              format_bytes(m.unattributed).c_str(), pct,
              std::abs(pct) < 5.0 ? "" : "  (over 5%)");
  if (!filled)
    std::printf("  (context not filled: KV pages never written are not resident; use --fill)\n");
}

nlohmann::json to_json(const Measured& m, const MemoryPlan& plan, const UntaggedStateCharges& charges,
                       bool filled, int64_t n_filled) {
  nlohmann::json ledger = nlohmann::json::object(), peak = nlohmann::json::object();
  for (int i = 0; i < kMemCategoryCount; ++i) {
    ledger[mem_category_name(static_cast<MemCategory>(i))] = m.ledger.current[i];
    peak[mem_category_name(static_cast<MemCategory>(i))] = m.ledger.peak[i];
  }
  const double pct = m.rss.anon > 0 ? 100.0 * m.unattributed / m.rss.anon : 0.0;
  return {{"ledger", ledger}, {"ledger_peak", peak}, {"ledger_anon_total", m.ledger.anon_total()},
          {"plan", plan.to_json()}, {"rss", rss_json(m.rss)},
          {"mapped_weights", {{"bytes", m.mapped.total}, {"resident", m.mapped.resident}}},
          {"mapped_experts", {{"bytes", m.experts.total}, {"resident", m.experts.resident}}},
          {"unattributed", m.unattributed}, {"unattributed_pct_of_rss_anon", pct},
          {"unattributed_ok", std::abs(pct) < 5.0}, {"filled", filled}, {"n_filled", n_filled},
          {"kv_charged_by_memory_command", charges.kv_charged_here},
          {"scratch_estimated_by_memory_command", charges.scratch_charged_here}};
}

// The stages of a started pipeline: reserved on the ledger vs measured now.
int run_pipeline_memory(const MemoryArgs& a) {
  auto spec = pipeline::load_pipeline_file(a.pipeline_file);
  if (!spec) return report_error(spec.status());
  auto limit = memory_limit_flag(a.plan.memory_limit);
  if (!limit) return report_error(limit.status());
  pipeline::RamLedger ledger(limit->bytes > 0 ? limit->bytes : INT64_MAX,
                             limit->source.empty() ? "no limit" : limit->source);
  pipeline::PipelineRunOptions o;
  if (!a.plan.ctx.empty() && a.plan.ctx != "auto") o.ctx = std::atoll(a.plan.ctx.c_str());
  o.n_threads = a.threads;
  auto rt = pipeline::PipelineRuntime::start(*spec, ledger, o);
  if (!rt) return report_error(rt.status());
  const Status held = (*rt)->check_reservations();
  const nlohmann::json state = (*rt)->state_json();
  if (a.json) {
    std::printf("%s\n", state.dump(2).c_str());
    return held.ok() ? 0 : report_error(held);
  }
  std::printf("pipeline %s: ledger %s reserved of %s (%s)\n\n", spec->name.c_str(),
              format_bytes(ledger.reserved()).c_str(), format_bytes(ledger.limit()).c_str(),
              state["ledger"].value("limit_source", "").c_str());
  std::printf("%-14s %-6s %12s %12s  %-4s %s\n", "stage", "device", "reserved", "measured", "gen",
              "placement");
  const auto& stages = state["stages"];
  for (const auto& r : state["ledger"]["stages"]) {
    for (const auto& st : stages) {
      if (st["stage"] != r["stage"]) continue;
      std::printf("%-14s %-6s %12s %12s  %-4u %s\n", r["stage"].get<std::string>().c_str(),
                  r["device"].get<std::string>().c_str(),
                  format_bytes(r["reserved_bytes"].get<int64_t>()).c_str(),
                  format_bytes(st["loaded_rss_bytes"].get<int64_t>()).c_str(),
                  st["worker_generation"].get<unsigned>(),
                  st["placement_actual"].get<std::string>().c_str());
    }
  }
  return held.ok() ? 0 : report_error(held);
}

int run_memory(const MemoryArgs& a) {
  if (!a.pipeline_file.empty()) {
    if (!a.model.empty())
      return report_error(Status::invalid_argument("-m and --pipeline both name what to measure: use one"));
    return run_pipeline_memory(a);
  }
  if (a.model.empty()) return report_error(Status::invalid_argument("memory needs -m MODEL or --pipeline FILE"));
  // What the process holds before any model (libraries, CLI, heap): runtime, measured.
  auto at_start = read_rss(getpid());
  LedgerCharge baseline(MemCategory::kRuntime, at_start ? at_start->anon : 0);
  auto o = plan_options_from(a.plan, 4096, a.threads);
  if (!o) return report_error(o.status());
  auto plan = plan_for_model(a.model, *o);
  if (!plan) return report_error(plan.status());
  if (!plan->admitted) return report_error(admission_status(*plan));
  LoadOptions lo;
  lo.n_threads = a.threads;
  auto model = Model::load(a.model, lo);
  if (!model) return report_error(model.status());
  const int64_t kv_before = ledger_current(MemCategory::kKv);
  const int64_t scratch_before = ledger_current(MemCategory::kScratch);
  InferenceOptions io;
  io.kv_types = plan->kv_types;
  io.max_step = plan->max_batched_tokens;
  auto state = InferenceState::create(**model, plan->ctx, io);
  if (!state) return report_error(state.status());
  UntaggedStateCharges charges;
  int64_t n_filled = 0;
  if (a.fill) {
    auto tokens = make_fill_tokens(**model, plan->ctx, a.prompt_file);
    if (!tokens) return report_error(tokens.status());
    auto logits = run_in_steps(*state, *tokens, plan->max_batched_tokens);
    if (!logits) return report_error(logits.status());
    n_filled = state->n_past();
  }
  charge_untagged_state(**model, *state, plan->max_batched_tokens, kv_before, scratch_before, charges);
  const Measured m = measure(**model);
  if (a.json) {
    std::printf("%s\n", to_json(m, *plan, charges, a.fill, n_filled).dump(2).c_str());
  } else {
    std::printf("model %s, ctx %lld%s\n\n", a.model.c_str(), static_cast<long long>(plan->ctx),
                a.fill ? " (filled)" : "");
    print_table(m, *plan, charges, a.fill);
  }
  return 0;
}

}  // namespace

void register_memory(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<MemoryArgs>();
  CLI::App* sub = app.add_subcommand("memory", "Load, optionally fill the context, and print the memory ledger "
                                               "beside measured RssAnon/RssFile");
  sub->add_option("-m,--model", a->model, "GGUF file, Hugging Face directory or llama2.c .bin");
  sub->add_option("--pipeline", a->pipeline_file,
                  "start a pipeline file's stages and show each one's reservation beside its measured bytes");
  add_plan_options(sub, a->plan);
  sub->add_option("-t,--threads", a->threads, "threads (default: all allowed cores)");
  sub->add_flag("--fill", a->fill, "run ctx tokens through the model first (a filled KV cache)");
  sub->add_option("--prompt-file", a->prompt_file, "text whose tokens fill the context (repeated to length)");
  sub->add_flag("--json", a->json, "print JSON");
  sub->callback([a, &ctx] { ctx.exit_code = run_memory(*a); });
}

}  // namespace edge::cli
