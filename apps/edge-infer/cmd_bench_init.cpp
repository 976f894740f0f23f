// edge-infer bench-init -m MODEL --ctx N [--context-len L] [-p TEXT] [--prompt-file F]
// Start-up and memory as a user meets them, as JSON with provenance:
//   ready_s          process creation (/proc/self/stat) to the first generated token;
//   peak during load RssAnon and RssAnon+RssFile of the process tree, sampled <= 20 ms;
//   settled          RssAnon / RssFile once loaded;
//   filled           RssAnon after a context of L tokens has been written;
//   phases           name, seconds since process creation, RSS at that moment.
#include <algorithm>
#include <cstdio>

#include "commands.h"
#include "core/mapped_file.h"
#include "fill_context.h"
#include "harness/provenance.h"
#include "harness/rss_sampler.h"
#include "plan_options.h"

namespace edge::cli {
namespace {

struct BenchInitArgs {
  std::string model;
  PlanArgs plan;
  int threads = 0;
  int64_t context_len = 0;
  int interval_ms = 10;
  std::string prompt = "Once upon a time";
  std::string prompt_file;
  std::vector<std::string> argv;
};

// This process's command line, as run (for the record).
std::vector<std::string> own_command_line() {
  std::vector<std::string> out;
  auto text = read_text_file("/proc/self/cmdline");
  if (!text) return out;
  std::string cur;
  for (char c : *text) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

nlohmann::json peaks_json(const RssSampler& s) {
  return {{"rss_anon", s.peak_anon()}, {"rss_anon_file", s.peak_anon_file()}, {"rss_file", s.peak_file()},
          {"samples", s.samples()}, {"max_processes", s.max_processes()}};
}

// Prompt tokens for the first-token measurement.
Expected<std::vector<int32_t>> prompt_tokens(const Model& model, const BenchInitArgs& a) {
  if (!a.prompt_file.empty() || !model.tokenizer()) return make_fill_tokens(model, 8, a.prompt_file);
  std::vector<int32_t> ids = model.tokenizer()->encode(a.prompt, true);
  if (ids.empty()) return Status::invalid_argument("the prompt is empty");
  return ids;
}

int run_bench_init(const BenchInitArgs& a, RssSampler& sampler) {
  auto o = plan_options_from(a.plan, 4096, a.threads);
  if (!o) return report_error(o.status());
  auto plan = plan_for_model(a.model, *o);
  if (!plan) return report_error(plan.status());
  sampler.mark("planned");
  if (!plan->admitted) return report_error(admission_status(*plan));
  LoadOptions lo;
  lo.n_threads = a.threads;
  auto model = Model::load(a.model, lo);
  if (!model) return report_error(model.status());
  sampler.mark("loaded");
  InferenceOptions io;
  io.kv_types = plan->kv_types;
  io.max_step = plan->max_batched_tokens;
  auto state = InferenceState::create(**model, plan->ctx, io);
  if (!state) return report_error(state.status());
  sampler.mark("state_created");
  const nlohmann::json load_peaks = peaks_json(sampler);
  sampler.reset_peaks();
  auto prompt = prompt_tokens(**model, a);
  if (!prompt) return report_error(prompt.status());
  auto logits = run_in_steps(*state, *prompt, plan->max_batched_tokens);
  if (!logits) return report_error(logits.status());
  const int32_t first = argmax(*logits);
  const double ready_s = process_uptime_s();
  sampler.mark("first_token");
  const RssSample settled = read_rss_tree(getpid());
  nlohmann::json filled = nullptr;
  if (a.context_len > 0) {
    const int64_t n = std::min(a.context_len, plan->ctx);
    state->reset();
    auto tokens = make_fill_tokens(**model, n, a.prompt_file);
    if (!tokens) return report_error(tokens.status());
    auto fl = run_in_steps(*state, *tokens, plan->max_batched_tokens);
    if (!fl) return report_error(fl.status());
    sampler.mark("filled");
    filled = rss_json(read_rss_tree(getpid()));
    filled["tokens"] = state->n_past();
    filled["kv_cache_bytes"] = state->kv_cache_bytes();
  }
  const nlohmann::json run_peaks = peaks_json(sampler);
  sampler.stop();
  nlohmann::json j;
  j["command"] = a.argv;
  j["ready_s"] = ready_s;
  j["first_token_id"] = first;
  j["prompt_tokens"] = prompt->size();
  j["peak_load"] = load_peaks;
  j["peak_after_load"] = run_peaks;
  auto larger = [&](const char* key) {
    return std::max(load_peaks[key].get<int64_t>(), run_peaks[key].get<int64_t>());
  };
  j["peak"] = {{"rss_anon", larger("rss_anon")}, {"rss_anon_file", larger("rss_anon_file")}};
  j["settled"] = rss_json(settled);
  j["filled"] = filled;
  j["phases"] = sampler.marks_json();
  j["sample_interval_ms"] = a.interval_ms;
  j["plan"] = plan->to_json();
  nlohmann::json ledger = nlohmann::json::object();
  const LedgerSnapshot snap = ledger_snapshot();
  for (int i = 0; i < kMemCategoryCount; ++i) ledger[mem_category_name(static_cast<MemCategory>(i))] = snap.current[i];
  j["ledger"] = ledger;
  j["provenance"] = {{"machine", machine_provenance()}, {"model", model_provenance(**model)}};
  std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace

void register_bench_init(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<BenchInitArgs>();
  CLI::App* sub = app.add_subcommand("bench-init", "Time from process creation to the first token, and memory "
                                                   "peaks while loading, as JSON with provenance");
  sub->add_option("-m,--model", a->model, "GGUF file, Hugging Face directory or llama2.c .bin")->required();
  add_plan_options(sub, a->plan);
  sub->add_option("-t,--threads", a->threads, "threads (default: all allowed cores)");
  sub->add_option("--context-len", a->context_len, "then fill a context of this many tokens and measure");
  sub->add_option("-p,--prompt", a->prompt, "prompt for the first token")->capture_default_str();
  sub->add_option("--prompt-file", a->prompt_file, "text whose tokens fill the context");
  sub->add_option("--interval-ms", a->interval_ms, "RSS sampling interval (<= 20)")->capture_default_str();
  sub->callback([a, &ctx] {
    a->argv = own_command_line();
    if (a->interval_ms < 1 || a->interval_ms > 20) {
      ctx.exit_code = report_error(Status::invalid_argument("--interval-ms must be 1..20"));
      return;
    }
    RssSampler sampler(0, a->interval_ms);
    sampler.start();
    sampler.mark("cli_parsed");
    ctx.exit_code = run_bench_init(*a, sampler);
  });
}

}  // namespace edge::cli
