#include "harness/fidelity.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <span>

#include "model/forward.h"

namespace edge {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Only digits, commas, spaces and signs: the line is meant as token ids.
bool looks_like_ids(std::string_view s) {
  bool digit = false;
  for (char ch : s) {
    if (ch >= '0' && ch <= '9') digit = true;
    else if (ch != ',' && ch != ' ' && ch != '\t' && ch != '-' && ch != '+') return false;
  }
  return digit;
}

Expected<std::vector<int32_t>> parse_ids(std::string_view s, int32_t n_vocab, const std::string& where) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string_view::npos) j = s.size();
    const std::string item(trim(s.substr(i, j - i)));
    char* end = nullptr;
    const long long v = item.empty() ? 0 : std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0')
      return Status::invalid_argument(where + ": \"" + item + "\" is not a token id");
    if (v < 0 || v >= n_vocab)
      return Status::invalid_argument(where + ": token id " + item + " outside the vocabulary [0, " +
                                      std::to_string(n_vocab) + ")");
    ids.push_back(static_cast<int32_t>(v));
    i = j + 1;
  }
  return ids;
}

int32_t argmax(const float* v, int64_t n) {
  return static_cast<int32_t>(std::max_element(v, v + n) - v);
}

// log-softmax of one row, in double.
void log_softmax(const float* x, int64_t n, std::vector<double>& out) {
  out.resize(static_cast<size_t>(n));
  double mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, double(x[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(double(x[i]) - mx);
  const double lse = mx + std::log(sum);
  for (int64_t i = 0; i < n; ++i) out[i] = double(x[i]) - lse;
}

// Greedy continuation of G tokens; `last` is the logits row after the prompt.
Expected<std::vector<int32_t>> greedy(InferenceState& st, const float* last, int64_t n_vocab, int g) {
  std::vector<int32_t> out;
  if (g <= 0) return out;
  out.push_back(argmax(last, n_vocab));
  while (static_cast<int>(out.size()) < g) {
    ASSIGN_OR_RETURN(std::span<const float> l, st.forward(std::span<const int32_t>(&out.back(), 1)));
    out.push_back(argmax(l.data(), n_vocab));
  }
  return out;
}

// Prefill (the first n - scored tokens without logits, the scored ones with all of theirs),
// then the greedy continuation. `on_logits` sees the scored positions' logits
// [scored, n_vocab] before generation overwrites them.
template <typename F>
Expected<std::vector<int32_t>> run_prompt(const Model& m, std::span<const int32_t> prompt, int g,
                                          KvTypes kv, size_t scored, F&& on_logits) {
  const int64_t v = m.config().n_vocab;
  InferenceOptions io;
  io.kv_types = kv;
  ASSIGN_OR_RETURN(
      InferenceState st,
      InferenceState::create(m, static_cast<int64_t>(prompt.size()) + std::max(g, 1), io));
  if (scored < prompt.size())
    RETURN_IF_ERROR(st.forward(prompt.first(prompt.size() - scored)).status());
  ASSIGN_OR_RETURN(std::span<const float> logits,
                   st.forward(prompt.last(scored), /*all_logits=*/true));
  on_logits(logits);
  return greedy(st, logits.data() + (scored - 1) * v, v, g);
}

}  // namespace

double kl_from_logits(const float* p_logits, const float* q_logits, int64_t n) {
  thread_local std::vector<double> lp, lq;
  log_softmax(p_logits, n, lp);
  log_softmax(q_logits, n, lq);
  double kl = 0;
  for (int64_t i = 0; i < n; ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(kl, 0.0);  // rounding can leave a tiny negative for equal rows
}

Expected<std::vector<std::vector<int32_t>>> parse_fidelity_prompts(std::string_view text,
                                                                   const Tokenizer* tok,
                                                                   int32_t n_vocab) {
  std::vector<std::vector<int32_t>> prompts;
  size_t pos = 0;
  for (int line_no = 1; pos < text.size(); ++line_no) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty()) continue;
    const std::string where = "prompts line " + std::to_string(line_no);
    std::vector<int32_t> ids;
    if (looks_like_ids(line)) {
      ASSIGN_OR_RETURN(ids, parse_ids(line, n_vocab, where));
    } else {
      if (!tok)
        return Status::invalid_argument(where + " is text but the reference model has no tokenizer "
                                        "(give comma-separated token ids)");
      ids = tok->encode(line);
      for (int32_t id : ids)
        if (id < 0 || id >= n_vocab)
          return Status::invalid_argument(where + ": tokenizer produced id " + std::to_string(id) +
                                          " outside the model's vocabulary");
    }
    if (ids.empty()) return Status::invalid_argument(where + " encodes to no tokens");
    prompts.push_back(std::move(ids));
  }
  if (prompts.empty()) return Status::invalid_argument("prompts: no prompts (file is empty)");
  return prompts;
}

Expected<FidelityResult> compare_models(const Model& ref, const Model& test,
                                        const std::vector<std::vector<int32_t>>& prompts,
                                        const FidelityOptions& o) {
  const int64_t v = ref.config().n_vocab;
  if (test.config().n_vocab != v)
    return Status::invalid_argument("fidelity: vocabulary sizes differ (ref " + std::to_string(v) +
                                    ", test " + std::to_string(test.config().n_vocab) + ")");
  if (o.ctx <= 0) return Status::invalid_argument("fidelity: ctx must be positive");
  if (o.greedy_tokens < 0) return Status::invalid_argument("fidelity: greedy tokens must be >= 0");
  if (prompts.empty()) return Status::invalid_argument("fidelity: no prompts");

  FidelityResult r;
  std::vector<double> kls;
  int64_t agree = 0, greedy_matched = 0;
  for (const std::vector<int32_t>& p : prompts) {
    if (p.empty()) return Status::invalid_argument("fidelity: empty prompt");
    const auto prompt = std::span<const int32_t>(p).first(
        static_cast<size_t>(std::min<int64_t>(o.ctx, static_cast<int64_t>(p.size()))));
    const int64_t n = o.score_last > 0
                          ? std::min<int64_t>(o.score_last, static_cast<int64_t>(prompt.size()))
                          : static_cast<int64_t>(prompt.size());
    const auto scored = static_cast<size_t>(n);
    std::vector<float> ref_logits;
    ASSIGN_OR_RETURN(
        std::vector<int32_t> ref_cont,
        run_prompt(ref, prompt, o.greedy_tokens, o.ref_kv, scored,
                   [&](std::span<const float> l) { ref_logits.assign(l.begin(), l.end()); }));
    ASSIGN_OR_RETURN(
        std::vector<int32_t> test_cont,
        run_prompt(test, prompt, o.greedy_tokens, o.test_kv, scored, [&](std::span<const float> l) {
          for (int64_t i = 0; i < n; ++i) {
            const float* a = ref_logits.data() + i * v;
            const float* b = l.data() + i * v;
            kls.push_back(kl_from_logits(a, b, v));
            agree += argmax(a, v) == argmax(b, v);
          }
        }));
    int first = 0;
    while (first < o.greedy_tokens && ref_cont[first] == test_cont[first]) ++first;
    r.greedy_first_divergence.push_back(first);
    greedy_matched += first;
    r.greedy_identical += first == o.greedy_tokens;
  }
  r.prompts = static_cast<int>(prompts.size());
  r.positions = static_cast<int64_t>(kls.size());
  double sum = 0;
  for (double k : kls) sum += k;
  r.kl_mean = sum / static_cast<double>(kls.size());
  std::sort(kls.begin(), kls.end());
  // Nearest-rank 99th percentile: the smallest value with at least 99% of positions <= it.
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(kls.size())));
  r.kl_p99 = kls[std::max<size_t>(rank, 1) - 1];
  r.kl_max = kls.back();
  r.top1_agreement = static_cast<double>(agree) / static_cast<double>(r.positions);
  r.greedy_match_fraction =
      o.greedy_tokens == 0 ? 1.0
                           : static_cast<double>(greedy_matched) /
                                 (static_cast<double>(r.prompts) * o.greedy_tokens);
  return r;
}

nlohmann::json fidelity_json(const FidelityResult& r) {
  nlohmann::json j;
  j["positions"] = r.positions;
  j["kl_mean"] = r.kl_mean;
  j["kl_p99"] = r.kl_p99;
  j["kl_max"] = r.kl_max;
  j["top1_agreement"] = r.top1_agreement;
  j["greedy_match_fraction"] = r.greedy_match_fraction;
  j["greedy_identical"] = r.greedy_identical;
  j["greedy_first_divergence"] = r.greedy_first_divergence;
  j["prompts"] = r.prompts;
  return j;
}

}  // namespace edge
