// edge-infer bench -m MODEL -p 512 -n 128 -r 5 -t THREADS -o json|md [--roofline-bytes B]
// llama-bench semantics and field names; see src/harness/bench.h. tg records also carry
// decode's bytes per token, effective GB/s and fraction of the bandwidth ceiling measured
// in the same run ("roofline").
#include <cstdio>

#include "commands.h"
#include "harness/bench.h"
#include "harness/spec_bench.h"
#include "model/model.h"
#include "model_source.h"
#include "plan_options.h"

namespace edge::cli {
namespace {

struct BenchArgs {
  std::string model;
  BenchOptions o;
  int threads = 0;
  std::string output = "md";
  std::string kv_type = "f16";
  std::string kv_type_k, kv_type_v;
  std::vector<double> spec_acceptance;  // --spec-acceptance: the speculative test instead
  SpecBenchOptions spec;
};

// The speculative test at controlled acceptance (harness/spec_bench.h).
int run_spec_bench_cmd(const BenchArgs& a, Model& model) {
  SpecBenchOptions o = a.spec;
  o.acceptance = a.spec_acceptance;
  o.n_gen = a.o.n_gen;
  o.reps = a.o.reps;
  auto records = run_spec_bench(model, o);
  if (!records) return report_error(records.status());
  if (a.output == "json")
    std::printf("%s\n", records->dump(2).c_str());
  else
    std::printf("%s", spec_bench_markdown(*records).c_str());
  return 0;
}

int run_bench_cmd(const BenchArgs& a) {
  if (a.output != "md" && a.output != "json")
    return report_error(Status::invalid_argument("-o must be md or json (got " + a.output + ")"));
  BenchOptions o = a.o;
  auto types = kv_types_from(a.kv_type, a.kv_type_k, a.kv_type_v);
  if (!types) return report_error(types.status());
  o.kv_types = *types;
  if (o.n_ubatch <= 0)
    return report_error(Status::invalid_argument("--ubatch-size must be positive"));
  std::string path = a.model;
  if (path.empty()) {
    auto demo = demo_model_path();
    if (!demo) return report_error(demo.status());
    path = *demo;
  }
  LoadOptions lo;
  lo.n_threads = a.threads;
  auto model = Model::load(path, lo);
  if (!model) return report_error(model.status());
  if (!a.spec_acceptance.empty()) return run_spec_bench_cmd(a, **model);
  auto records = run_bench(**model, o);
  if (!records) return report_error(records.status());
  if (a.output == "json")
    std::printf("%s\n", records->dump(2).c_str());
  else
    std::printf("%s", bench_markdown(*records).c_str());
  return 0;
}

}  // namespace

void register_bench(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "bench", "llama-bench-compatible prompt (pp) and generation (tg) throughput");
  sub->add_option("-m,--model", a->model, "model (default: the built-in demo model)");
  sub->add_option("-p,--n-prompt", a->o.n_prompt, "prompt lengths (pp tests)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("-n,--n-gen", a->o.n_gen, "generation lengths (tg tests)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("-d,--n-depth", a->o.n_depth,
                  "context depths: each test runs after this many prefilled tokens")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("-r,--repetitions", a->o.reps)->capture_default_str();
  sub->add_option("-t,--threads", a->threads, "threads (default: all allowed cores)");
  sub->add_option("-o,--output", a->output, "md | json")->capture_default_str();
  add_kv_type_options(sub, a->kv_type, a->kv_type_k, a->kv_type_v);
  sub->add_option("--ubatch-size", a->o.n_ubatch, "prompt tokens per forward step")
      ->capture_default_str();
  sub->add_option("--roofline-bytes", a->o.roofline_bytes,
                  "buffer of the bandwidth probe that measures decode's ceiling in the same run "
                  "(0: no probe)")
      ->capture_default_str();
  sub->add_option(
         "--spec-acceptance", a->spec_acceptance,
         "speculative decoding at these per-token acceptances (0..1), by an oracle drafter "
         "replaying the model's greedy output with errors injected; runs instead of pp/tg, "
         "plain and speculative decode of -n tokens interleaved per repetition")
      ->delimiter(',');
  sub->add_option("--draft-max", a->spec.draft_max, "--spec-acceptance: longest draft")
      ->capture_default_str();
  sub->add_option("--spec-prompt", a->spec.n_prompt,
                  "--spec-acceptance: prompt tokens before decoding")
      ->capture_default_str();
  sub->callback([a, &ctx] { ctx.exit_code = run_bench_cmd(*a); });
}

}  // namespace edge::cli
