// edge-infer plan -m MODEL --ctx N|auto [--kv-budget B] [--kv-type f16] [--max-seqs S]
//                 [--memory-limit M] [--state-checkpoints N] [--json]
// Bytes per memory category from the model's metadata (no weight is read) and whether the
// configuration fits the memory this process may use. Exit 3 when refused.
#include <cstdio>

#include "commands.h"
#include "plan_options.h"

namespace edge::cli {
namespace {

struct PlanCmdArgs {
  std::string model;
  PlanArgs plan;
  int threads = 0;
  int64_t state_checkpoints = 4;  // as serve keeps by default
  bool json = false;
};

int run_plan(const PlanCmdArgs& a) {
  if (a.model.empty()) return report_error(Status::invalid_argument("plan needs -m MODEL"));
  auto o = plan_options_from(a.plan, 4096, a.threads);
  if (!o) return report_error(o.status());
  if (a.state_checkpoints < 0) return report_error(Status::invalid_argument("--state-checkpoints must be 0 or more"));
  o->state_checkpoints = a.state_checkpoints;
  auto plan = plan_for_model(a.model, *o);
  if (!plan) return report_error(plan.status());
  if (a.json) {
    std::printf("%s\n", plan->to_json().dump(2).c_str());
  } else {
    std::printf("%s", plan->table().c_str());
  }
  if (!plan->admitted) return report_error(admission_status(*plan));
  return 0;
}

}  // namespace

void register_plan(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<PlanCmdArgs>();
  CLI::App* sub = app.add_subcommand("plan", "Memory plan per category before loading; refuses what cannot fit");
  sub->add_option("-m,--model", a->model, "GGUF file, Hugging Face directory or llama2.c .bin")->required();
  add_plan_options(sub, a->plan);
  sub->add_option("-t,--threads", a->threads, "threads (runtime estimate; default: all allowed cores)");
  sub->add_option("--state-checkpoints", a->state_checkpoints,
                  "hybrid models: recurrent-state copies the prefix cache keeps (serve's default)")
      ->capture_default_str();
  sub->add_flag("--json", a->json, "print the plan as JSON");
  sub->callback([a, &ctx] { ctx.exit_code = run_plan(*a); });
}

}  // namespace edge::cli
