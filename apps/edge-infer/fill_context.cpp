#include "fill_context.h"

#include "core/mapped_file.h"
#include "runtime/memory_plan.h"

namespace edge::cli {

Expected<std::vector<int32_t>> make_fill_tokens(const Model& model, int64_t n, const std::string& prompt_file) {
  std::vector<int32_t> base;
  const Tokenizer* tok = model.tokenizer();
  if (!prompt_file.empty()) {
    if (!tok) return Status::invalid_argument(model.path() + " has no tokenizer to read --prompt-file with");
    ASSIGN_OR_RETURN(std::string text, read_text_file(prompt_file));
    base = tok->encode(text, /*add_special=*/true);
  } else if (tok) {
    base = tok->encode(
        "The history of computing is a story of memory: every machine that ever ran a program had to "
        "hold its instructions and its data somewhere, and every generation of engineers fought to fit "
        "more of both into less space, less power and less time. ", true);
  }
  if (base.empty()) {
    const int32_t vocab = model.config().n_vocab;
    for (int32_t i = 0; i < 997; ++i) base.push_back(static_cast<int32_t>((i * 7919 + 13) % vocab));
  }
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(n));
  // Repeat the text (without its BOS after the first copy) up to n tokens.
  const size_t skip = tok && !base.empty() && base[0] == tok->bos_id() ? 1 : 0;
  while (static_cast<int64_t>(out.size()) < n) {
    for (size_t i = out.empty() ? 0 : skip; i < base.size() && static_cast<int64_t>(out.size()) < n; ++i)
      out.push_back(base[i]);
  }
  return out;
}

Expected<std::span<const float>> run_in_steps(InferenceState& state, std::span<const int32_t> tokens, int64_t step) {
  if (tokens.empty()) return Status::invalid_argument("no tokens to run");
  if (step < 1) step = 1;
  std::span<const float> logits;
  for (size_t i = 0; i < tokens.size(); i += static_cast<size_t>(step)) {
    const size_t n = std::min(tokens.size() - i, static_cast<size_t>(step));
    ASSIGN_OR_RETURN(logits, state.forward(tokens.subspan(i, n)));
  }
  return logits;
}

void charge_untagged_state(const Model& model, const InferenceState& state, int64_t step,
                           int64_t kv_before, int64_t scratch_before, UntaggedStateCharges& out) {
  if (ledger_current(MemCategory::kKv) == kv_before && state.kv_cache_bytes() > 0) {
    out.kv.set(MemCategory::kKv, static_cast<int64_t>(state.kv_cache_bytes()));
    out.kv_charged_here = true;
  }
  if (ledger_current(MemCategory::kScratch) == scratch_before) {
    out.scratch.set(MemCategory::kScratch, plan_scratch_bytes(model.config(), step, 1));
    out.scratch_charged_here = true;
  }
}

}  // namespace edge::cli
