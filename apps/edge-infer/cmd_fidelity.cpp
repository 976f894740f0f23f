// edge-infer fidelity --ref MODEL_A --test MODEL_B --prompts FILE [--ctx N] [-t THREADS]
//   [--activations auto|f32|int8] [--greedy-tokens G] [--ref-kv-type T] [--kv-type T]
//   [--kv-type-k T] [--kv-type-v T] [--score-last N]: how closely the test model (e.g. a
// quantised copy) follows the reference over a corpus — mean/p99/max KL(ref||test), top-1
// agreement, greedy exact match — as JSON with provenance. With --test the same file as
// --ref and different KV types, it measures what the KV cache's type costs (loaded once).
#include <cstdio>
#include <memory>

#include "commands.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "harness/fidelity.h"
#include "harness/provenance.h"
#include "model/model.h"
#include "plan_options.h"

namespace edge::cli {

namespace {

struct FidelityArgs {
  std::string ref, test, prompts, activations = "auto";
  int64_t ctx = 512;
  int threads = 0;
  int greedy_tokens = 32;
  std::string ref_kv = "f32", kv_type = "f32", kv_type_k, kv_type_v;
  int64_t score_last = 0;
};

int run_fidelity(const FidelityArgs& a) {
  // One pool for both models: they run one after the other, never concurrently.
  ThreadPool pool(a.threads > 0 ? a.threads : ThreadPool::default_threads());
  LoadOptions lo;
  lo.pool = &pool;
  lo.activations = a.activations;
  auto ref = Model::load(a.ref, lo);
  if (!ref) return report_error(ref.status());
  FidelityOptions fo;
  auto ref_kv = parse_kv_types(a.ref_kv, "");
  if (!ref_kv) return report_error(ref_kv.status().with_context("--ref-kv-type"));
  auto test_kv = kv_types_from(a.kv_type, a.kv_type_k, a.kv_type_v);
  if (!test_kv) return report_error(test_kv.status());
  fo.ref_kv = *ref_kv;
  fo.test_kv = *test_kv;
  fo.score_last = a.score_last;
  // The same file as both: one load (the comparison is then of the KV types alone).
  Expected<std::unique_ptr<Model>> test = std::unique_ptr<Model>();
  if (a.test != a.ref) test = Model::load(a.test, lo);
  if (!test) return report_error(test.status());
  const Model& test_model = a.test != a.ref ? **test : **ref;
  auto text = read_text_file(a.prompts);
  if (!text) return report_error(text.status());
  auto prompts = parse_fidelity_prompts(*text, (*ref)->tokenizer(), (*ref)->config().n_vocab);
  if (!prompts) return report_error(prompts.status().with_context(a.prompts));
  fo.ctx = a.ctx;
  fo.greedy_tokens = a.greedy_tokens;
  auto r = compare_models(**ref, test_model, *prompts, fo);
  if (!r) return report_error(r.status());
  nlohmann::json j;
  j["ref"] = a.ref;
  j["test"] = a.test;
  j.update(fidelity_json(*r));
  j["greedy_tokens"] = a.greedy_tokens;
  j["ctx"] = a.ctx;
  j["score_last"] = a.score_last;
  j["ref_kv_type"] = kv_types_name(fo.ref_kv);
  j["test_kv_type"] = kv_types_name(fo.test_kv);
  j["provenance"] = {{"machine", machine_provenance()},
                     {"ref", model_provenance(**ref)},
                     {"test", model_provenance(test_model)}};
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
  sub->add_option("--ref-kv-type", a->ref_kv, "the reference's KV cache type (K and V)")
      ->capture_default_str();
  add_kv_type_options(sub, a->kv_type, a->kv_type_k, a->kv_type_v);
  sub->add_option("--score-last", a->score_last,
                  "score only each prompt's last N positions (0: all; long prompts need it: "
                  "every scored position keeps n_vocab logits)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->callback([a, &ctx] { ctx.exit_code = run_fidelity(*a); });
}

}  // namespace edge::cli
