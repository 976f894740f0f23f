#include "harness/spec_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "harness/provenance.h"
#include "model/forward.h"
#include "model/model.h"
#include "runtime/sampler.h"

namespace edge {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Run {
  std::vector<int32_t> tokens;
  double decode_ms = 0;  // from the first sampled token to the last, prefill excluded
  SpeculativeStats stats;
};

// Prefills the prompt (untimed), then decodes n_gen tokens greedily: plainly, or
// speculatively with `drafter`.
Expected<Run> decode_once(InferenceState& st, const std::vector<int32_t>& prompt, int n_gen,
                          Drafter* drafter, int draft_max) {
  st.reset();
  ASSIGN_OR_RETURN(std::span<const float> logits, st.forward(prompt));
  Sampler sampler(SamplingParams::greedy());
  Run r;
  r.tokens.reserve(static_cast<size_t>(n_gen));
  const auto t0 = Clock::now();
  if (drafter) {
    DraftController control(draft_max);
    StepCostTable costs;
    RETURN_IF_ERROR(decode_speculative(
        st, logits, prompt, n_gen, sampler, *drafter, control, costs,
        [&](int32_t id) { return r.tokens.push_back(id), true; }, &r.stats));
  } else {
    std::vector<int32_t> history = prompt;
    for (int i = 0; i < n_gen; ++i) {
      const int32_t id = sampler.sample(logits, history);
      history.push_back(id), r.tokens.push_back(id);
      if (i + 1 == n_gen) break;
      ASSIGN_OR_RETURN(logits, st.forward(std::span<const int32_t>(&id, 1)));
    }
  }
  r.decode_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return r;
}

nlohmann::json make_record(const Model& model, const SpecBenchOptions& o, int n_gen, double alpha,
                           const std::vector<double>& plain_ts, const std::vector<double>& spec_ts,
                           const SpeculativeStats& s) {
  nlohmann::json prov = machine_provenance();
  std::vector<double> ratios;
  for (size_t i = 0; i < plain_ts.size(); ++i) ratios.push_back(spec_ts[i] / plain_ts[i]);
  const double plain = median(plain_ts), spec = median(spec_ts);
  nlohmann::json r = {
      {"build_commit", prov["commit"]},
      {"cpu_info", prov["cpu"]},
      {"backends", "CPU"},
      {"model_filename", model.path()},
      {"model_type", fmt::format("{} edge", model.config().arch)},
      {"n_threads", model.pool().size()},
      {"n_prompt", o.n_prompt},
      {"n_gen", n_gen},
      {"test", fmt::format("tg{} spec a{:.2f}", n_gen, alpha)},
      {"test_time", prov["time"]},
      {"plain_samples_ts", plain_ts},
      {"spec_samples_ts", spec_ts},
      {"plain_ts", plain},
      {"avg_ts", spec},
      // Each rep's two runs ran back to back: their ratio cancels the drift of a shared
      // host, so the speedup is the median of those ratios (the ratio of the medians beside).
      {"speedup", median(ratios)},
      {"speedup_samples", ratios},
      {"speedup_of_medians", plain > 0 ? spec / plain : 0.0},
      {"speculative",
       {{"drafter", "oracle"},
        {"alpha", alpha},
        {"draft_max", o.draft_max},
        {"verify_steps", s.verify_steps},
        {"plain_steps", s.plain_steps},
        {"drafted", s.drafted},
        {"accepted", s.accepted},
        {"acceptance", s.acceptance()},
        {"mean_accepted", s.mean_accepted()},
        {"mean_draft", s.verify_steps ? double(s.drafted) / double(s.verify_steps) : 0.0},
        {"tokens_per_pass", s.tokens_per_pass()},
        {"verify_cost", s.verify_cost()},
        {"plain_step_ms", s.plain_steps ? s.plain_ms / double(s.plain_steps) : 0.0},
        {"verify_step_ms", s.verify_steps ? s.verify_ms / double(s.verify_steps) : 0.0}}}};
  r["provenance"] = prov;
  r["provenance"]["engine"] = model_provenance(model);
  return r;
}

void add_stats(SpeculativeStats& sum, const SpeculativeStats& s) {
  sum.verify_steps += s.verify_steps, sum.plain_steps += s.plain_steps;
  sum.drafted += s.drafted, sum.accepted += s.accepted, sum.tokens += s.tokens;
  sum.verify_ms += s.verify_ms, sum.plain_ms += s.plain_ms;
}

}  // namespace

OracleDrafter::OracleDrafter(size_t n_prompt, std::vector<int32_t> future, double alpha,
                             int32_t n_vocab, uint64_t seed)
    : n_prompt_(n_prompt),
      future_(std::move(future)),
      alpha_(alpha),
      n_vocab_(n_vocab),
      state_(seed) {}

std::vector<int32_t> OracleDrafter::draft(std::span<const int32_t> history, int32_t max_tokens) {
  std::vector<int32_t> out;
  for (size_t i = history.size() - n_prompt_; i < future_.size() && out.size() < size_t(max_tokens);
       ++i) {
    const double u = static_cast<double>(splitmix64(state_) >> 11) * 0x1.0p-53;
    int32_t t = future_[i];
    if (u >= alpha_)  // wrong: any other token
      t = static_cast<int32_t>((t + 1 + splitmix64(state_) % uint64_t(n_vocab_ - 1)) %
                               uint64_t(n_vocab_));
    out.push_back(t);
  }
  return out;
}

Expected<nlohmann::json> run_spec_bench(Model& model, const SpecBenchOptions& o) {
  if (o.reps < 1) return Status::invalid_argument("repetitions must be >= 1");
  if (o.n_prompt < 1)
    return Status::invalid_argument("the speculative bench needs a prompt (n_prompt >= 1)");
  if (o.draft_max < 1) return Status::invalid_argument("--draft-max must be >= 1");
  for (double a : o.acceptance)
    if (!(a >= 0.0 && a <= 1.0))
      return Status::invalid_argument(fmt::format("acceptance {} is outside [0, 1]", a));
  const int32_t n_vocab = model.config().n_vocab;
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int32_t> tok(0, n_vocab - 1);
  std::vector<int32_t> prompt(static_cast<size_t>(o.n_prompt));
  for (int32_t& t : prompt) t = tok(rng);
  nlohmann::json out = nlohmann::json::array();
  for (int n_gen : o.n_gen) {
    if (n_gen <= 0) continue;
    ASSIGN_OR_RETURN(
        InferenceState st,
        InferenceState::create(model, o.n_prompt + n_gen + o.draft_max + 2, InferenceOptions{}));
    ASSIGN_OR_RETURN(Run reference,
                     decode_once(st, prompt, n_gen, nullptr, 0));  // also the warm-up
    for (double alpha : o.acceptance) {
      std::vector<double> plain_ts, spec_ts;
      SpeculativeStats total;
      for (int rep = 0; rep < o.reps; ++rep) {
        OracleDrafter drafter(prompt.size(), reference.tokens, alpha, n_vocab,
                              o.seed + uint64_t(rep));
        // Interleaved, the order alternating rep by rep: drift on a shared host hits both.
        Run plain, spec;
        for (int which : rep % 2 ? std::vector<int>{1, 0} : std::vector<int>{0, 1}) {
          ASSIGN_OR_RETURN(Run run,
                           decode_once(st, prompt, n_gen, which ? &drafter : nullptr, o.draft_max));
          (which ? spec : plain) = std::move(run);
        }
        if (spec.tokens != reference.tokens || plain.tokens != reference.tokens)
          return Status::internal(
              fmt::format("greedy decoding diverged from the recorded run (alpha {})", alpha));
        plain_ts.push_back(n_gen * 1e3 / plain.decode_ms);
        spec_ts.push_back(n_gen * 1e3 / spec.decode_ms);
        add_stats(total, spec.stats);
      }
      out.push_back(make_record(model, o, n_gen, alpha, plain_ts, spec_ts, total));
    }
  }
  return out;
}

std::string spec_bench_markdown(const nlohmann::json& records) {
  std::string s =
      "| model | threads | test | plain t/s | spec t/s | speedup | acceptance | tokens/pass | "
      "verify cost |\n"
      "| ----- | ------: | ---- | --------: | -------: | ------: | ---------: | ----------: | "
      "----------: |\n";
  for (const auto& r : records) {
    const auto& sp = r["speculative"];
    s += fmt::format("| {} | {} | {} | {:.2f} | {:.2f} | {:.3f} | {:.2f} | {:.2f} | {:.2f} |\n",
                     r["model_type"].get<std::string>(), r["n_threads"].get<int>(),
                     r["test"].get<std::string>(), r["plain_ts"].get<double>(),
                     r["avg_ts"].get<double>(), r["speedup"].get<double>(),
                     sp["acceptance"].get<double>(), sp["tokens_per_pass"].get<double>(),
                     sp["verify_cost"].get<double>());
  }
  return s;
}

}  // namespace edge
