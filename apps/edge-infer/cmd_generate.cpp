// edge-infer generate -m MODEL (-p TEXT | --prompt-ids 1,2,3) -n N [--temp 0] [--json]
// edge-infer logits   -m MODEL --prompt-ids 1,2,3
// Without -m both use the built-in demo model (random weights: its text is noise).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "media_input.h"
#include "model/forward.h"
#include "model/model.h"
#include "model_source.h"
#include "plan_options.h"
#include "runtime/model_drafter.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"

namespace edge::cli {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct GenerateArgs {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  int n_predict = 32;
  int64_t ctx = 0;
  int threads = 0;
  std::string memory_limit;  // the memory plan refuses before loading what cannot fit
  bool json = false;
  bool ignore_eos = false;
  SamplingParams sampling;
  std::string mmproj, audio;  // --mmproj P --audio FILE: a clip before the prompt text
  std::string image;          // --mmproj P --image FILE: an image before the prompt text
  std::string spec;           // --spec ngram|draft: speculative decoding
  int draft_max = 4;          // --draft-max: most tokens drafted per step
  std::string draft;          // --draft MODEL: the draft model (--spec draft)
  std::string kv_type = "f32", kv_type_k, kv_type_v;  // the KV cache's element types
};

void add_common_options(CLI::App* sub, GenerateArgs& a) {
  sub->add_option("-m,--model", a.model,
                  "GGUF file, Hugging Face directory or llama2.c .bin (default: demo)");
  sub->add_option("--prompt-ids", a.prompt_ids, "prompt as comma-separated token ids");
  sub->add_option("-c,--ctx", a.ctx, "context length served (default: min(model's, 4096))");
  sub->add_option("-t,--threads", a.threads, "threads (default: all allowed cores)");
  sub->add_option("--memory-limit", a.memory_limit,
                  "memory this process may use (e.g. 2GiB; default: "
                  "MemAvailable and the cgroup limit)");
}

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Model> draft;  // --draft: on the model's threads
  std::vector<int32_t> prompt;
  int64_t ctx = 0;
  double load_ms = 0;
  KvTypes kv_types = KvType::kF32;
};

Expected<Loaded> load_and_prepare(const GenerateArgs& a) {
  Loaded l;
  std::string path = a.model;
  if (path.empty()) {
    ASSIGN_OR_RETURN(path, demo_model_path());
  }
  auto t0 = Clock::now();
  if ((a.spec == "draft") != !a.draft.empty())
    return Status::invalid_argument(a.draft.empty() ? "--spec draft needs --draft MODEL"
                                                    : "--draft MODEL needs --spec draft");
  ASSIGN_OR_RETURN(l.kv_types, kv_types_from(a.kv_type, a.kv_type_k, a.kv_type_v));
  RETURN_IF_ERROR(
      check_plan_before_load(path, a.ctx, a.memory_limit, a.threads, a.draft, l.kv_types));
  LoadOptions opts;
  opts.n_threads = a.threads;
  ASSIGN_OR_RETURN(l.model, Model::load(path, opts));
  if (!a.draft.empty()) {
    LoadOptions d;
    d.pool = &l.model->pool();  // drafting and verifying take turns on the same threads
    auto draft = Model::load(a.draft, d);
    if (!draft)
      return Status(draft.status().code(), "--draft " + a.draft + ": " + draft.status().message());
    l.draft = std::move(*draft);
    RETURN_IF_ERROR(check_draft_model(*l.model, *l.draft));
  }
  l.load_ms = ms_since(t0);
  if (!a.prompt_ids.empty() && !a.prompt.empty())
    return Status::invalid_argument("give either -p or --prompt-ids, not both");
  if (!a.prompt_ids.empty()) {
    ASSIGN_OR_RETURN(l.prompt, parse_id_list(a.prompt_ids));
  } else {
    const Tokenizer* tok = l.model->tokenizer();
    if (!tok)
      return Status::invalid_argument(path +
                                      " has no tokenizer: give the prompt with --prompt-ids");
    l.prompt = tok->encode(a.prompt, /*add_special=*/true);
    if (l.prompt.empty()) return Status::invalid_argument("the prompt is empty");
  }
  const int64_t model_ctx = l.model->config().max_ctx > 0 ? l.model->config().max_ctx : 4096;
  l.ctx = a.ctx > 0 ? a.ctx : std::min<int64_t>(model_ctx, 4096);
  if (static_cast<int64_t>(l.prompt.size()) > l.ctx)
    return Status::out_of_range("the prompt has " + std::to_string(l.prompt.size()) +
                                " tokens but the context holds only " + std::to_string(l.ctx));
  return l;
}

// The media put before the prompt text (--audio, --image): each replaces the prompt with
// its own tokens, whose media positions take the encoded rows (splices).
struct MediaPrompt {
  std::optional<SplicedPrompt> audio;
  std::optional<SplicedPrompt> image;
};

Expected<MediaPrompt> build_media(const Model& model, const GenerateArgs& a,
                                  std::vector<int32_t>& prompt) {
  MediaPrompt m;
  if (!a.audio.empty()) {
    ASSIGN_OR_RETURN(m.audio, build_audio_prompt(model, a.mmproj, a.audio, a.prompt));
    prompt = m.audio->tokens;
  }
  if (!a.image.empty()) {
    ASSIGN_OR_RETURN(m.image, build_image_prompt(model, a.mmproj, a.image, a.prompt));
    prompt = m.image->tokens;
  }
  return m;
}

struct Generated {
  std::vector<int32_t> ids;
  std::string text;
  double prompt_ms = 0, gen_ms = 0;
  std::optional<SpeculativeStats> spec;  // when decoding was speculative
  std::string spec_off;                  // why --spec was not used ("" when it was, or not asked)
  double draft_ms_per_token = 0;         // --spec draft: the draft model's measured cost
};

// Streams one token's text (or id) unless --json; whether decoding goes on.
bool emit_token(const GenerateArgs& a, const Tokenizer* tok,
                std::optional<Tokenizer::StreamDecoder>& stream, Generated& g, int32_t id) {
  const bool first = g.ids.empty();
  g.ids.push_back(id);
  std::string piece = stream ? stream->push(id) : "";
  g.text += piece;
  if (!a.json) {
    if (stream)
      std::fputs(piece.c_str(), stdout);
    else
      std::printf("%s%d", first ? "" : " ", id);
    std::fflush(stdout);
  }
  return !(tok && !a.ignore_eos && tok->is_eog(id));
}

// Prefills the prompt, then samples up to n_predict tokens (one forward per token but the
// last), streaming the text (or the ids, without a tokenizer) to stdout unless --json.
Expected<Generated> generate_tokens(const GenerateArgs& a, const Model& model,
                                    const Model* draft_model, InferenceState& state,
                                    const std::vector<int32_t>& prompt, const MediaPrompt& media) {
  const Tokenizer* tok = model.tokenizer();
  Sampler sampler(a.sampling);
  std::vector<int32_t> history = prompt;
  Generated g;
  std::optional<Tokenizer::StreamDecoder> stream;
  if (tok) stream.emplace(*tok);
  auto t_prompt = Clock::now();
  auto logits = media.audio   ? state.forward(prompt, false, media.audio->splices)
                : media.image ? state.forward(prompt, false, media.image->splices)
                              : state.forward(prompt);
  if (!logits) return logits.status();
  g.prompt_ms = ms_since(t_prompt);
  auto t_gen = Clock::now();
  if (!a.spec.empty()) {
    if (media.audio || media.image) g.spec_off = "speculation is not used with media input";
  }
  if (!a.spec.empty() && g.spec_off.empty() && a.n_predict > 0) {
    std::unique_ptr<Drafter> drafter;
    if (draft_model)
      drafter = std::make_unique<ModelDrafter>(*draft_model, model, state.n_ctx(),
                                               state.kv_layout().settings.types);
    else
      drafter = std::make_unique<NgramDrafter>();
    DraftController control(a.draft_max);
    StepCostTable costs;
    g.spec.emplace();
    RETURN_IF_ERROR(decode_speculative(
        state, *logits, history, a.n_predict, sampler, *drafter, control, costs,
        [&](int32_t id) { return emit_token(a, tok, stream, g, id); }, &*g.spec));
    g.draft_ms_per_token = drafter->ms_per_token(costs.ms(1));
  }
  for (int i = 0; !g.spec && i < a.n_predict; ++i) {
    int32_t id = sampler.sample(*logits, history);
    history.push_back(id);
    if (!emit_token(a, tok, stream, g, id)) break;
    if (state.n_past() >= state.n_ctx()) break;  // context full
    if (i + 1 == a.n_predict) break;             // no forward for a token nobody samples
    logits = state.forward(std::span<const int32_t>(&id, 1));
    if (!logits) return logits.status();
  }
  if (stream) {
    std::string rest = stream->flush();
    g.text += rest;
    if (!a.json) std::fputs(rest.c_str(), stdout);
  }
  g.gen_ms = ms_since(t_gen);
  return g;
}

// Tokens per second after the first (whose time is the prompt's), 0 for one token or none.
double decode_tokens_per_s(const Generated& g) {
  return g.ids.size() > 1 ? (g.ids.size() - 1) * 1000.0 / std::max(g.gen_ms, 1e-9) : 0.0;
}

// --json: the ids, the text, the context and the timings as one object.
nlohmann::json generate_report(const GenerateArgs& a, const Model& model, const Loaded& l,
                               const MediaPrompt& media, const Generated& g) {
  nlohmann::json j;
  j["model"] = model.path();
  j["prompt_ids"] = l.prompt;
  j["generated_ids"] = g.ids;
  j["text"] = g.text;
  j["n_ctx"] = l.ctx;
  if (media.audio)
    j["audio"] = {{"tokens", media.audio->n_rows}, {"encode_ms", media.audio->encode_ms}};
  if (media.image)
    j["image"] = {{"tokens", media.image->n_rows}, {"encode_ms", media.image->encode_ms}};
  j["timings"] = {{"load_ms", l.load_ms},
                  {"prompt_ms", g.prompt_ms},
                  {"prompt_tokens_per_s", l.prompt.size() * 1000.0 / std::max(g.prompt_ms, 1e-9)},
                  {"generate_ms", g.gen_ms},
                  {"generate_tokens_per_s", decode_tokens_per_s(g)},
                  {"n_threads", model.pool().size()}};
  if (g.spec)
    j["speculative"] = {{"drafter", a.spec},
                        {"draft_ms_per_token", g.draft_ms_per_token},
                        {"verify_steps", g.spec->verify_steps},
                        {"plain_steps", g.spec->plain_steps},
                        {"drafted", g.spec->drafted},
                        {"accepted", g.spec->accepted},
                        {"acceptance", g.spec->acceptance()},
                        {"mean_accepted", g.spec->mean_accepted()},
                        {"tokens_per_pass", g.spec->tokens_per_pass()},
                        {"verify_cost", g.spec->verify_cost()}};
  else if (!g.spec_off.empty())
    j["speculative"] = {{"off", g.spec_off}};
  return j;
}

int run_generate(const GenerateArgs& a) {
  RETURN_CODE_IF_ERROR(a.sampling.validate());
  auto l = load_and_prepare(a);
  if (!l) return report_error(l.status());
  Model& model = *l->model;
  InferenceOptions io;
  io.kv_types = l->kv_types;
  auto state = InferenceState::create(model, l->ctx, io);
  if (!state) return report_error(state.status());
  auto media = build_media(model, a, l->prompt);
  if (!media) return report_error(media.status());
  auto g = generate_tokens(a, model, l->draft.get(), *state, l->prompt, *media);
  if (!g) return report_error(g.status());
  if (!a.json) {
    std::printf("\n");
    std::fprintf(
        stderr,
        "edge-infer: prompt %zu tokens in %.1f ms, generated %zu tokens in %.1f ms (%.2f tok/s)\n",
        l->prompt.size(), g->prompt_ms, g->ids.size(), g->gen_ms,
        g->ids.size() > 1 ? (g->ids.size() - 1) * 1000.0 / g->gen_ms : 0.0);
    if (g->spec)
      std::fprintf(stderr,
                   "edge-infer: speculative (%s): %lld drafted, %lld accepted (%.2f), %.2f "
                   "tokens per pass\n",
                   a.spec.c_str(), static_cast<long long>(g->spec->drafted),
                   static_cast<long long>(g->spec->accepted), g->spec->acceptance(),
                   g->spec->tokens_per_pass());
    else if (!g->spec_off.empty())
      std::fprintf(stderr, "edge-infer: --spec not used: %s\n", g->spec_off.c_str());
    return 0;
  }
  const nlohmann::json j = generate_report(a, model, *l, *media, *g);
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

int run_logits(const GenerateArgs& a) {
  if (a.prompt_ids.empty())
    return report_error(Status::invalid_argument("logits needs --prompt-ids"));
  auto l = load_and_prepare(a);
  if (!l) return report_error(l.status());
  InferenceOptions io;
  io.kv_types = l->kv_types;
  auto state = InferenceState::create(*l->model, l->ctx, io);
  if (!state) return report_error(state.status());
  auto logits = state->forward(l->prompt);
  if (!logits) return report_error(logits.status());
  nlohmann::json j;
  j["prompt_ids"] = l->prompt;
  j["n_vocab"] = logits->size();
  j["logits"] = std::vector<float>(logits->begin(), logits->end());
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

void register_generate(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* sub = app.add_subcommand("generate", "Generate text from a prompt");
  add_common_options(sub, *a);
  sub->add_option("-p,--prompt", a->prompt, "prompt text");
  sub->add_option("-n,--n-predict", a->n_predict, "tokens to generate")->capture_default_str();
  sub->add_option("--temp", a->sampling.temperature, "temperature (0: greedy)")
      ->capture_default_str();
  sub->add_option("--top-k", a->sampling.top_k)->capture_default_str();
  sub->add_option("--top-p", a->sampling.top_p)->capture_default_str();
  sub->add_option("--min-p", a->sampling.min_p)->capture_default_str();
  sub->add_option("--repeat-penalty", a->sampling.repeat_penalty)->capture_default_str();
  sub->add_option("--repeat-last-n", a->sampling.repeat_last_n)->capture_default_str();
  sub->add_option("--presence-penalty", a->sampling.presence_penalty);
  sub->add_option("--frequency-penalty", a->sampling.frequency_penalty);
  sub->add_option("--seed", a->sampling.seed)->capture_default_str();
  sub->add_flag("--json", a->json, "print one JSON object instead of streaming text");
  sub->add_flag("--ignore-eos", a->ignore_eos, "keep generating past end-of-generation tokens");
  sub->add_option("--mmproj", a->mmproj,
                  "projector GGUF (llama.cpp clip conventions) for media input");
  sub->add_option("--audio", a->audio, "WAV clip put before the prompt text (needs --mmproj)");
  sub->add_option("--image", a->image,
                  "PNG/JPEG image put before the prompt text (needs --mmproj)");
  sub->add_option("--spec", a->spec,
                  "speculative decoding: ngram (drafts looked up in the prompt and the output; "
                  "greedy gives the same tokens as without, sampling the same distribution), "
                  "draft (a small model sharing the tokenizer, --draft)")
      ->check(CLI::IsMember({"ngram", "draft"}));
  sub->add_option("--draft", a->draft,
                  "--spec draft: the draft model (GGUF, Hugging Face directory, llama2.c .bin)");
  add_kv_type_options(sub, a->kv_type, a->kv_type_k, a->kv_type_v);
  sub->add_option("--draft-max", a->draft_max, "--spec: most tokens drafted per step")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  sub->callback([a, &ctx] { ctx.exit_code = run_generate(*a); });
}

void register_logits(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* sub =
      app.add_subcommand("logits", "Print the logits at the last prompt position as JSON");
  add_common_options(sub, *a);
  sub->callback([a, &ctx] { ctx.exit_code = run_logits(*a); });
}

}  // namespace edge::cli
