// edge-infer pipeline plan FILE [--ctx N] [--memory-limit M]
// The execution plan of a pipeline file as JSON: per stage its backend, requested device,
// verified artifact hashes, capacity, reserved bytes and the RAM available before it;
// exit 3 (and the reason on stderr) when the stages do not fit together.
#include <cstdio>

#include "commands.h"
#include "core/memory_ledger.h"
#include "pipeline/plan.h"

namespace edge::cli {
namespace {

struct PipelinePlanArgs {
  std::string file;
  int64_t ctx = 4096;
  std::string memory_limit;
};

int run_pipeline_plan(const PipelinePlanArgs& a) {
  auto spec = pipeline::load_pipeline_file(a.file);
  if (!spec) return report_error(spec.status());
  int64_t flag = 0;
  if (!a.memory_limit.empty()) {
    auto bytes = parse_byte_size(a.memory_limit);
    if (!bytes) return report_error(bytes.status().with_context("--memory-limit"));
    flag = *bytes;
  }
  pipeline::PipelinePlanOptions o;
  o.ctx = a.ctx;
  if (a.ctx < 1) return report_error(Status::invalid_argument("--ctx must be at least 1"));
  auto plan = pipeline::plan_pipeline(*spec, read_memory_limit(flag), o);
  if (!plan) return report_error(plan.status());
  std::printf("%s\n", plan->to_json().dump(2).c_str());
  if (!plan->admitted) return report_error(Status::resource_exhausted(plan->refusal));
  return 0;
}

}  // namespace

void register_pipeline(CLI::App& app, Context& ctx) {
  CLI::App* sub =
      app.add_subcommand("pipeline", "Stage graphs: plan (and, later, run) a pipeline file");
  sub->require_subcommand(1);
  auto a = std::make_shared<PipelinePlanArgs>();
  CLI::App* plan = sub->add_subcommand("plan",
                                       "Validate a pipeline file, verify its artifacts and reserve "
                                       "each stage's RAM; JSON per stage");
  plan->add_option("file", a->file, "pipeline file (YAML or JSON)")->required();
  plan->add_option("--ctx", a->ctx,
                   "context of each language-model stage's memory plan (default 4096)");
  plan->add_option("--memory-limit", a->memory_limit, "RAM the pipeline may use, e.g. 4GiB");
  plan->callback([a, &ctx] { ctx.exit_code = run_pipeline_plan(*a); });
}

}  // namespace edge::cli
