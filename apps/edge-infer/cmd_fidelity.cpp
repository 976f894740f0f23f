// edge-infer fidelity --ref MODEL_A --test MODEL_B --prompts FILE [--ctx N] [-t THREADS]
//   [--activations auto|f32|int8] [--greedy-tokens G]: how closely the test model (e.g. a
// quantised copy) follows the reference over a corpus — mean/p99/max KL(ref||test), top-1
// agreement, greedy exact match — as JSON with provenance.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "harness/fidelity.h"
#include "harness/provenance.h"
#include "model/model.h"

namespace edge::cli {

namespace {

struct FidelityArgs {
  std::string ref, test, prompts, activations = "auto";
  int64_t ctx = 512;
  int threads = 0;
  int greedy_tokens = 32;
};

int run_fidelity(const FidelityArgs& a) {
  // One pool for both models: they run one after the other, never concurrently.
  ThreadPool pool(a.threads > 0 ? a.threads : ThreadPool::default_threads());
  LoadOptions lo;
  lo.pool = &pool;
  lo.activations = a.activations;
  auto ref = Model::load(a.ref, lo);
  if (!ref) return report_error(ref.status());
  auto test = Model::load(a.test, lo);
  if (!test) return report_error(test.status());
  auto text = read_text_file(a.prompts);
  if (!text) return report_error(text.status());
  auto prompts = parse_fidelity_prompts(*text, (*ref)->tokenizer(), (*ref)->config().n_vocab);
  if (!prompts) return report_error(prompts.status().with_context(a.prompts));
  FidelityOptions fo;
  fo.ctx = a.ctx;
  fo.greedy_tokens = a.greedy_tokens;
  auto r = compare_models(**ref, **test, *prompts, fo);
  if (!r) return report_error(r.status());
  nlohmann::json j;
  j["ref"] = a.ref;
  j["test"] = a.test;
  j.update(fidelity_json(*r));
  j["greedy_tokens"] = a.greedy_tokens;
  j["ctx"] = a.ctx;
  j["provenance"] = {{"machine", machine_provenance()},
                     {"ref", model_provenance(**ref)},
                     {"test", model_provenance(**test)}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

}  // namespace

void register_fidelity(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<FidelityArgs>();
  CLI::App* sub = app.add_subcommand(
      "fidelity", "Compare a test model against a reference: KL, top-1 and greedy agreement");
  sub->add_option("--ref", a->ref, "reference model (GGUF, HF directory or llama2.c .bin)")->required();
  sub->add_option("--test", a->test, "model under test (same vocabulary)")->required();
  sub->add_option("--prompts", a->prompts,
                  "one prompt per line: comma-separated token ids, or text (ref's tokenizer)")
      ->required();
  sub->add_option("--ctx", a->ctx, "prompts are truncated to this many tokens")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("-t,--threads", a->threads, "threads (default: all allowed cores)");
  sub->add_option("--activations", a->activations, "packed-weight activations for both models")
      ->check(CLI::IsMember({"auto", "f32", "int8"}))
      ->capture_default_str();
  sub->add_option("--greedy-tokens", a->greedy_tokens, "tokens generated greedily per prompt")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->callback([a, &ctx] { ctx.exit_code = run_fidelity(*a); });
}

}  // namespace edge::cli
