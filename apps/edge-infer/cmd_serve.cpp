// edge-infer serve [-m MODEL] [--host 127.0.0.1] [--port 8080] [--api-key K] [--ctx N]
//   [--max-seqs S] [--max-batched-tokens T] [--kv-budget B] [--chat-template-file F] [-t N]
//   [--served-model-name NAME...] [--drain-timeout SEC] [--max-client-requests N]
//   [--max-client-queued-tokens T]
// edge-infer serve --pipeline FILE [--ctx N] [--memory-limit M] [...]
// An OpenAI-compatible HTTP server (src/server) over a pipeline: the graph of a pipeline
// file, or `-m MODEL` as a one-stage graph (one code path: the chat and completion
// endpoints drive the engine of the graph's in-process text stage). Without -m or
// --pipeline it serves the built-in demo model (random weights: its text is noise). It listens
// before loading
// (/health/live answers, /health/ready is 503 until the model is loaded) and prints
// "edge-infer: listening on http://HOST:PORT" once it is ready (--port 0 picks a free
// port). SIGINT / SIGTERM drain it: no new connections, in-flight requests finish (or are
// cancelled after --drain-timeout), then it exits 0.
#include <edge_build_info.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "commands.h"
#include "core/cpu_info.h"
#include "core/mapped_file.h"
#include "core/memory_ledger.h"
#include "edge/engine.h"
#include "formats/hf_config.h"
#include "kernels/isa.h"
#include "model/arch/clip_vision.h"
#include "model/arch/qwen3_tts.h"
#include "model/arch/whisper_enc.h"
#include "model/model.h"
#include "model/model_footprint.h"
#include "model_source.h"
#include "pipeline/graph/executor.h"
#include "pipeline/prebuilt/encoder_graph.h"
#include "pipeline/prebuilt/single_model_graph.h"
#include "pipeline/prebuilt/speech_graph.h"
#include "plan_options.h"
#include "server/http_server.h"
#include "server/media_request.h"

namespace edge::cli {
namespace {

struct ServeArgs {
  std::string model;
  std::string pipeline_file;
  std::string name;
  std::vector<std::string> served_names;
  std::string chat_template_file;
  std::string kv_budget;
  std::string kv_type = "f16";
  std::string kv_type_k, kv_type_v;
  std::string memory_limit;  // the memory plan refuses before loading what cannot fit
  int64_t ctx = 0;
  int threads = 0;
  int32_t max_seqs = 8;
  int64_t max_batched_tokens = 512;
  double itl_target_ms = 0;
  bool no_prefix_cache = false;
  int32_t state_checkpoints = 4;
  std::string spec;  // --spec ngram|draft: speculative decoding in the scheduler
  int32_t draft_max = 4;
  std::string draft;  // --draft MODEL (--spec draft)
  double drain_timeout_s = 10;
  // /v1/audio/speech: this pair (the demo's when serving the demo model), vocoder where.
  std::string speech_model, vocoder;
  bool vocoder_worker = false;
  pipeline::VocoderSettings vocoder_stream;  // window 0: exact (the audio at the utterance's end)
  server::ServerOptions server;
  std::string mmproj;  // image (and audio) content parts through this projector file
  int64_t max_image_pixels = int64_t{4096} * 4096;
  // Where the vision encoder runs: "server" (this process, its own pool), "stage" (a
  // vision.encode@1 stage of a graph on the server's ledger) or "worker" (that stage in a
  // worker process).
  std::string vision_placement = "server";
  std::string audio_placement = "server";  // likewise for the audio encoder
  std::string mmproj_audio;                // a second projector file for input_audio parts
  double max_audio_seconds = 300.0;        // longer clips are refused (400 audio_too_long)
};

// For the signal-waiting thread: the server to drain (null once it is being destroyed).
std::mutex g_server_mu;
server::HttpServer* g_server = nullptr;

// Signals are taken synchronously by a thread that then drains the server (no work in a
// signal handler). drain() returns at once; run() returns when the drain is over.
void drain_on_signals(sigset_t set, std::chrono::milliseconds grace) {
  int sig = 0;
  if (sigwait(&set, &sig) != 0) return;
  std::lock_guard<std::mutex> l(g_server_mu);
  if (!g_server) return;
  std::printf("edge-infer: %s: draining (in-flight requests get up to %.1f s)\n",
              sig == SIGINT ? "SIGINT" : "SIGTERM", static_cast<double>(grace.count()) / 1000.0);
  std::fflush(stdout);
  g_server->drain(grace);
}

// Whether a projector file holds a vision encoder (an audio-only mmproj has none).
bool mmproj_has_vision(const std::string& path) {
  auto f = GgufFile::open(path);
  return !f || f->get_bool_or("clip.has_vision_encoder", !gguf_has_audio_encoder(*f));
}

// The memory plan of the served configuration, from the model's metadata: refuses before
// any weight is read (instead of the OOM killer refusing half way through loading).
Status plan_before_load(const ServeArgs& a, const std::string& path) {
  if ((a.spec == "draft") != !a.draft.empty())
    return Status::invalid_argument(a.draft.empty() ? "--spec draft needs --draft MODEL"
                                                    : "--draft MODEL needs --spec draft");
  ASSIGN_OR_RETURN(ModelFootprint fp, read_model_footprint(path));
  PlanArgs pa;
  pa.kv_budget = a.kv_budget;
  pa.kv_type = a.kv_type;
  pa.kv_type_k = a.kv_type_k;
  pa.kv_type_v = a.kv_type_v;
  pa.max_seqs = a.max_seqs;
  pa.max_batched_tokens = a.max_batched_tokens;
  pa.memory_limit = a.memory_limit;
  const int64_t model_ctx = fp.config.max_ctx > 0 ? fp.config.max_ctx : 4096;
  ASSIGN_OR_RETURN(
      PlanOptions o,
      plan_options_from(pa, a.ctx > 0 ? a.ctx : std::min<int64_t>(model_ctx, 4096), a.threads));
  // Hybrid models: the prefix cache's state checkpoints and speculation's state copies.
  o.state_checkpoints = a.no_prefix_cache ? 0 : a.state_checkpoints;
  o.draft_states = a.spec.empty() ? 0 : int64_t{a.max_seqs} * (1 + a.draft_max);
  std::optional<ModelFootprint> draft;  // --draft: its weights, caches and scratch
  if (!a.draft.empty()) {
    auto d = read_model_footprint(a.draft);
    if (!d) return d.status().with_context("--draft " + a.draft);
    draft = std::move(*d);
    o.draft = &*draft;
  }
  if (!a.mmproj.empty() &&
      mmproj_has_vision(a.mmproj)) {  // the vision encoder's weights and one encode's activations
    ASSIGN_OR_RETURN(VisionFootprint v, vision_encoder_footprint(a.mmproj));
    o.encoder_weights_mapped += static_cast<int64_t>(v.weights_mapped);
    o.encoder_weights_anon += static_cast<int64_t>(v.weights_anon);
    o.encoder_scratch += static_cast<int64_t>(v.activations);
  }
  for (const std::string* p : {&a.mmproj, &a.mmproj_audio}) {  // the audio encoder's, likewise
    if (p->empty()) continue;
    ASSIGN_OR_RETURN(AudioFootprint au, audio_encoder_footprint(*p));
    o.encoder_weights_mapped += static_cast<int64_t>(au.weights_mapped);
    o.encoder_weights_anon += static_cast<int64_t>(au.weights_anon);
    o.encoder_scratch += static_cast<int64_t>(au.activations);
  }
  ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(fp, o, read_memory_limit(o.memory_limit)));
  return admission_status(plan);
}

// The served context: --ctx, else min(model's, 4096).
int64_t served_ctx(const ServeArgs& a, const ModelFootprint& fp) {
  const int64_t model_ctx = fp.config.max_ctx > 0 ? fp.config.max_ctx : 4096;
  return a.ctx > 0 ? a.ctx : std::min<int64_t>(model_ctx, 4096);
}

// The graph served: the pipeline file, or -m MODEL as one in-process lm stage sized by
// the serve flags (its reservation is the memory plan checked before loading).
Expected<pipeline::PipelineSpec> served_graph(const ServeArgs& a, const std::string& model_path) {
  if (!a.pipeline_file.empty()) return pipeline::load_pipeline_file(a.pipeline_file);
  ASSIGN_OR_RETURN(ModelFootprint fp, read_model_footprint(model_path));
  pipeline::EngineSettings e;
  e.ctx = served_ctx(a, fp);
  e.max_batched_tokens = a.max_batched_tokens;
  ASSIGN_OR_RETURN(const KvTypes types, kv_types_from(a.kv_type, a.kv_type_k, a.kv_type_v));
  e.kv_type = kv_type_name(types.k);
  if (types.v != types.k) e.kv_type_v = kv_type_name(types.v);
  e.itl_target_ms = a.itl_target_ms;
  e.prefix_cache = !a.no_prefix_cache;
  e.state_checkpoints = a.state_checkpoints;
  e.speculative = a.spec;
  e.draft_max = a.draft_max;
  e.draft_model = a.draft;
  if (!a.kv_budget.empty()) {
    ASSIGN_OR_RETURN(e.kv_budget_bytes, parse_byte_size(a.kv_budget));
  }
  return pipeline::single_model_pipeline(model_path, a.max_seqs, e, /*reservation_bytes=*/-1);
}

// The graph and the ledger its stages reserve on, loaded while the server already
// answers probes.
struct Loaded {
  std::unique_ptr<pipeline::RamLedger> ledger;
  std::unique_ptr<pipeline::PipelineRuntime> graph;
  std::unique_ptr<pipeline::PipelineRuntime> speech;  // /v1/audio/speech (null: none)
  std::unique_ptr<pipeline::PipelineRuntime> vision;  // --vision-placement stage|worker
  std::unique_ptr<pipeline::PipelineRuntime> audio;   // --audio-placement stage|worker
};

// The file whose audio encoder serves input_audio parts: --mmproj-audio, else an audio --mmproj.
std::string audio_projector(const ServeArgs& a) {
  if (!a.mmproj_audio.empty()) return a.mmproj_audio;
  if (a.mmproj.empty()) return "";
  auto f = GgufFile::open(a.mmproj);
  return f && gguf_has_audio_encoder(*f) ? a.mmproj : "";
}

// The media encoders as graph stages on the same ledger (--vision-placement and
// --audio-placement stage|worker).
Status load_encoder_stages(const ServeArgs& a, Loaded& out) {
  pipeline::PipelineRunOptions o;
  o.n_threads = a.threads;
  auto placement = [](const std::string& p) {
    return p == "worker" ? pipeline::Placement::kWorker : pipeline::Placement::kInProcess;
  };
  if (a.vision_placement != "server" && !a.mmproj.empty() && mmproj_has_vision(a.mmproj)) {
    ASSIGN_OR_RETURN(pipeline::PipelineSpec spec,
                     pipeline::vision_pipeline(a.mmproj, placement(a.vision_placement)));
    ASSIGN_OR_RETURN(out.vision, pipeline::PipelineRuntime::start(spec, *out.ledger, o));
  }
  const std::string audio = audio_projector(a);
  if (a.audio_placement != "server" && !audio.empty()) {
    ASSIGN_OR_RETURN(pipeline::PipelineSpec spec,
                     pipeline::audio_pipeline(audio, placement(a.audio_placement)));
    ASSIGN_OR_RETURN(out.audio, pipeline::PipelineRuntime::start(spec, *out.ledger, o));
  }
  return Status();
}

// A Qwen3-TTS checkpoint's speakers and languages (what /v1/audio/voices lists); none for
// OuteTTS, whose voices are profiles.
Expected<server::SpeechVoices> speech_voices(const std::string& talker) {
  server::SpeechVoices v;
  if (pipeline::speech_family(talker) != pipeline::SpeechFamily::kQwen3Tts) return v;
  ASSIGN_OR_RETURN(nlohmann::json j, read_json_file(hf_folder_of(talker) + "/config.json"));
  ASSIGN_OR_RETURN(Qwen3TtsConfig c, qwen3_tts_config_from_hf(j));
  for (const Qwen3TtsSpeaker& s : c.speakers) v.speakers.push_back(s.name);
  for (const Qwen3TtsLanguage& l : c.languages) v.languages.push_back(l.name);
  return v;
}

// The speech graph on the same ledger, when a speech pair is served.
Status load_speech(const ServeArgs& a, Loaded& out) {
  if (a.speech_model.empty()) return Status();
  pipeline::SpeechGraphOptions so;
  so.talker_model = a.speech_model;
  so.vocoder_model = a.vocoder;
  so.capacity = 2;
  so.vocoder = a.vocoder_stream;
  if (a.vocoder_worker) so.vocoder_placement = pipeline::Placement::kWorker;
  ASSIGN_OR_RETURN(pipeline::PipelineSpec spec, pipeline::speech_pipeline(so));
  pipeline::PipelineRunOptions o;
  o.ctx = so.talker_ctx;
  o.n_threads = a.threads;
  ASSIGN_OR_RETURN(out.speech, pipeline::PipelineRuntime::start(spec, *out.ledger, o));
  return Status();
}

Status load_graph(const ServeArgs& a, const pipeline::PipelineSpec& spec, Loaded& out) {
  ASSIGN_OR_RETURN(MemoryLimit limit, memory_limit_flag(a.memory_limit));
  out.ledger = std::make_unique<pipeline::RamLedger>(
      limit.bytes > 0 ? limit.bytes : INT64_MAX, limit.source.empty() ? "no limit" : limit.source);
  pipeline::PipelineRunOptions o;
  o.ctx = a.ctx > 0 ? a.ctx : 4096;
  o.n_threads = a.threads;
  ASSIGN_OR_RETURN(out.graph, pipeline::PipelineRuntime::start(spec, *out.ledger, o));
  RETURN_IF_ERROR(load_encoder_stages(a, out));
  return load_speech(a, out);
}

// --served-model-name (aliases), else --name, else the model's file name.
Status resolve_model_names(const ServeArgs& a, const std::string& path,
                           std::vector<std::string>& out) {
  if (!a.served_names.empty() && !a.name.empty())
    return Status::invalid_argument("--name and --served-model-name both name the model: use one");
  for (const auto& n : a.served_names)
    if (n.empty()) return Status::invalid_argument("--served-model-name: an empty name");
  out = !a.served_names.empty() ? a.served_names
        : !a.name.empty()
            ? std::vector<std::string>{a.name}
            : std::vector<std::string>{std::filesystem::path(path).filename().string()};
  return Status();
}

// Serves until drained: listens first, loads, then reports ready.
int serve_until_drained(ServeArgs& a, const pipeline::PipelineSpec& graph,
                        const sigset_t& signals) {
  auto srv = server::HttpServer::create(a.server);
  if (!srv) return report_error(srv.status());
  RETURN_CODE_IF_ERROR((*srv)->bind());
  {
    std::lock_guard<std::mutex> l(g_server_mu);
    g_server = srv->get();
  }
  const auto grace = std::chrono::milliseconds(static_cast<int64_t>(a.drain_timeout_s * 1000));
  std::thread waiter(drain_on_signals, signals,
                     grace);  // NOLINT: detached, ends at the first signal
  waiter.detach();
  Status served;
  std::thread http([&] { served = (*srv)->run(); });
  std::printf("edge-infer: loading %s (/health/live on http://%s:%d)\n", graph.name.c_str(),
              a.server.host.c_str(), (*srv)->port());
  std::fflush(stdout);
  Loaded loaded;
  Status st = load_graph(a, graph, loaded);
  if (st.ok() && loaded.speech) {
    auto voices = speech_voices(a.speech_model);
    st = voices.ok() ? (*srv)->attach_speech(*loaded.speech, *voices) : voices.status();
  }
  bool images = false;  // image parts accepted (a vision encoder loaded)
  if (st.ok() && (!a.mmproj.empty() || !a.mmproj_audio.empty())) {
    const std::string& first = a.mmproj.empty() ? a.mmproj_audio : a.mmproj;
    auto media = server::load_media_encoders(first, a.threads > 0 ? a.threads : 2, 0,
                                             loaded.vision.get(), loaded.audio.get());
    st = media.status();
    if (media) {
      (*media)->image_limits.max_pixels = a.max_image_pixels;
      (*media)->max_audio_seconds = a.max_audio_seconds;
      if (!a.mmproj.empty() && !a.mmproj_audio.empty())
        st = server::add_audio_encoder(**media, a.mmproj_audio, loaded.audio.get());
      images = (*media)->vision_hparams.has_value();
      if (st.ok()) st = (*srv)->attach_media(*media);
    }
  }
  if (st.ok()) st = (*srv)->attach(*loaded.graph);
  if (st.ok()) {
    const pipeline::StageSpec& text = *loaded.graph->text_stage();
    const int64_t ctx = text.engine.ctx > 0 ? text.engine.ctx : loaded.graph->options().ctx;
    std::printf(
        "edge-infer: serving %s (context %lld, up to %d sequences; graph '%s', %zu stages, "
        "%s reserved)\n",
        a.server.model_names[0].c_str(), static_cast<long long>(ctx), text.capacity,
        graph.name.c_str(), graph.stages.size(), format_bytes(loaded.ledger->reserved()).c_str());
    // The placement proof an orchestrator reads (a pipeline's external stage): where the
    // weights actually are. Always the CPU here; llama-server reports offloaded layers.
    std::printf("edge-infer: placement cpu (%s; dense kernels %s)\n", cpu_info().model_name.c_str(),
                dense_variant_for(cpu_info()).c_str());
    // The vision encoder's too (a pipeline's multimodal external stage proves both).
    if (images)
      std::printf("edge-infer: vision placement cpu (%s; %s)\n",
                  std::filesystem::path(a.mmproj).filename().c_str(),
                  loaded.vision ? "a vision.encode stage" : "in process");
    // The build, for the evidence a pipeline records of its external stages.
    std::printf("edge-infer: build %s\n", EDGE_BUILD_COMMIT);
    using Encoder = std::pair<const char*, pipeline::PipelineRuntime*>;
    for (const auto& [kind, rt] :
         {Encoder{"images", loaded.vision.get()}, Encoder{"audio", loaded.audio.get()}})
      if (rt)
        std::printf("edge-infer: %s through the %s stage (%s)\n", kind, rt->spec().name.c_str(),
                    rt->state_json()["stages"][0].value("placement_actual", "").c_str());
    if (loaded.speech)
      std::printf("edge-infer: speech at /v1/audio/speech (talker %s, vocoder %s%s)\n",
                  a.speech_model.c_str(), a.vocoder.c_str(),
                  a.vocoder_worker ? " in a worker" : "");
    std::printf("edge-infer: listening on http://%s:%d\n", a.server.host.c_str(), (*srv)->port());
    std::fflush(stdout);
  } else {
    (*srv)->drain(std::chrono::milliseconds(0));
  }
  http.join();
  {
    std::lock_guard<std::mutex> l(g_server_mu);
    g_server = nullptr;
  }
  srv->reset();  // before the graph it serves
  if (!st.ok()) return report_error(st);
  if (!served.ok()) return report_error(served);
  std::printf("edge-infer: stopped\n");
  return 0;
}

int run_serve(ServeArgs a) {
  // A client that hangs up must not kill the process with SIGPIPE; SIGINT/SIGTERM go to
  // the waiting thread. Blocked first, before the model's and the engine's threads start,
  // so that every thread inherits the mask.
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  if (a.drain_timeout_s < 0)
    return report_error(Status::invalid_argument("--drain-timeout must be >= 0"));
  if (!a.pipeline_file.empty() && !a.model.empty())
    return report_error(
        Status::invalid_argument("-m and --pipeline both name what to serve: use one"));
  std::string path = a.model;
  if (a.speech_model.empty() && !a.vocoder.empty())
    return report_error(Status::invalid_argument("--vocoder needs --speech-model"));
  if (!a.speech_model.empty() && a.vocoder.empty() &&
      pipeline::speech_family(a.speech_model) == pipeline::SpeechFamily::kOuteTts)
    return report_error(Status::invalid_argument(
        "an OuteTTS --speech-model needs --vocoder (a WavTokenizer GGUF)"));
  if (path.empty() && a.pipeline_file.empty()) {
    auto demo = demo_model_path();
    if (!demo) return report_error(demo.status());
    path = *demo;
    if (a.mmproj.empty()) {  // the demo sees images too (random weights: noise)
      auto proj = demo_vision_projector_path();
      if (!proj) return report_error(proj.status());
      a.mmproj = *proj;
      if (a.mmproj_audio.empty()) {  // and hears audio (random weights: noise)
        auto audio = demo_audio_projector_path();
        if (!audio) return report_error(audio.status());
        a.mmproj_audio = *audio;
      }
    }
    if (a.speech_model.empty()) {  // the demo speaks too (random weights: noise)
      auto speech = demo_speech_paths();
      if (!speech) return report_error(speech.status());
      a.speech_model = speech->first, a.vocoder = speech->second;
    }
  }
  if (!a.chat_template_file.empty()) {
    auto text = read_text_file(a.chat_template_file);
    if (!text) return report_error(text.status());
    a.server.chat_template = std::move(*text);
  }
  auto graph = served_graph(a, path);
  if (!graph) return report_error(graph.status());
  RETURN_CODE_IF_ERROR(
      resolve_model_names(a, path.empty() ? graph->name : path, a.server.model_names));
  if (a.pipeline_file.empty()) RETURN_CODE_IF_ERROR(plan_before_load(a, path));
  return serve_until_drained(a, *graph, set);
}

}  // namespace

void register_serve(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  sub->add_option("-m,--model", a->model,
                  "GGUF file or Hugging Face directory (default: demo model)");
  sub->add_option("--mmproj", a->mmproj,
                  "projector GGUF (llama.cpp clip conventions): image content parts");
  sub->add_option("--max-image-pixels", a->max_image_pixels, "larger images are refused (400)")
      ->capture_default_str();
  sub->add_option("--vision-placement", a->vision_placement,
                  "where the image encoder runs: server (this process), stage (a vision.encode@1 "
                  "graph stage "
                  "reserved on the server's ledger) or worker (that stage in a worker process)")
      ->check(CLI::IsMember({"server", "stage", "worker"}))
      ->capture_default_str();
  sub->add_option(
         "--audio-placement", a->audio_placement,
         "where the audio encoder runs: server, stage (an audio.encode@1 graph stage) or worker")
      ->check(CLI::IsMember({"server", "stage", "worker"}))
      ->capture_default_str();
  sub->add_option(
      "--mmproj-audio", a->mmproj_audio,
      "audio projector GGUF (ultravox/qwen2a) beside a vision --mmproj: input_audio content parts");
  sub->add_option("--max-audio-seconds", a->max_audio_seconds, "longer clips are refused (400)")
      ->capture_default_str();
  sub->add_option("--pipeline", a->pipeline_file,
                  "serve a pipeline file (YAML/JSON) instead of one model: its in-process lm stage "
                  "feeding output.text answers the API");
  sub->add_option("--name", a->name, "model id clients use (default: the model's file name)");
  sub->add_option("--served-model-name", a->served_names,
                  "model ids clients may use (aliases; the first is reported in responses)")
      ->expected(1, -1);
  sub->add_option("--host", a->server.host, "address to bind (default: 127.0.0.1, local only)")
      ->capture_default_str();
  sub->add_option("--port", a->server.port, "port (0: any free port)")->capture_default_str();
  sub->add_option("--api-key", a->server.api_key, "require 'Authorization: Bearer KEY'");
  sub->add_option("-c,--ctx", a->ctx, "context per sequence (default: min(model's, 4096))");
  sub->add_option("--max-seqs", a->max_seqs, "sequences scheduled together")->capture_default_str();
  sub->add_option("--max-batched-tokens", a->max_batched_tokens, "tokens per forward step")
      ->capture_default_str();
  sub->add_option("--kv-budget", a->kv_budget,
                  "KV cache bytes, e.g. 512M (default: max-seqs full contexts)");
  add_kv_type_options(sub, a->kv_type, a->kv_type_k, a->kv_type_v);
  sub->add_option(
         "--itl-target-ms", a->itl_target_ms,
         "inter-token latency running streams keep while prompts are computed: caps a step's "
         "prompt tokens (0: twice a decode step, measured; < 0: no cap)")
      ->capture_default_str();
  sub->add_option("--spec", a->spec,
                  "speculative decoding: ngram (drafts by prompt lookup, verified in each "
                  "sequence's next step; "
                  "the draft length follows measured acceptance and step costs; greedy gives the "
                  "same tokens, "
                  "sampling the same distribution); draft (a small model sharing the "
                  "tokenizer, --draft, drafts greedily)")
      ->check(CLI::IsMember({"ngram", "draft"}));
  sub->add_option("--draft", a->draft,
                  "--spec draft: the draft model, run on the server's threads and counted in "
                  "the memory plan");
  sub->add_option("--draft-max", a->draft_max, "--spec: longest draft per step")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  sub->add_flag(
      "--no-prefix-cache", a->no_prefix_cache,
      "recompute every prompt: no KV blocks kept for reuse (to measure without the cache)");
  sub->add_option(
         "--state-checkpoints", a->state_checkpoints,
         "hybrid models (Qwen3.5): recurrent-state copies kept for the prefix cache, each one "
         "sequence's state bytes (0: recompute repeated prompts)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  sub->add_option(
      "--memory-limit", a->memory_limit,
      "memory this process may use (e.g. 2GiB; default: MemAvailable and the cgroup limit)");
  sub->add_option("--chat-template-file", a->chat_template_file,
                  "Jinja chat template overriding the model's");
  sub->add_option("--pooling", a->server.pooling,
                  "/v1/embeddings pooling: mean | cls | last (default: the model file's "
                  "pooling_type, else mean)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  sub->add_option("-t,--threads", a->threads, "threads (default: all allowed cores)");
  sub->add_option(
      "--speech-model", a->speech_model,
      "/v1/audio/speech: a Qwen3-TTS checkpoint directory, or an OuteTTS speech-code LM "
      "(GGUF, with --vocoder); the demo serves its own");
  sub->add_option("--vocoder", a->vocoder,
                  "/v1/audio/speech's decoder: a Qwen3-TTS 12 Hz tokenizer directory (default: the "
                  "checkpoint's speech_tokenizer/) or a wavtokenizer-dec GGUF");
  sub->add_option("--voices", a->server.voices_dir,
                  "directory of OuteTTS speaker profiles: voice NAME speaks with NAME.json");
  sub->add_flag("--vocoder-worker", a->vocoder_worker,
                "run the speech vocoder in a worker process");
  sub->add_option(
         "--vocoder-window", a->vocoder_stream.window,
         "speech: vocoder codes per window, streamed as they are ready (0: exact, at the end)")
      ->capture_default_str();
  sub->add_option("--vocoder-context", a->vocoder_stream.context,
                  "speech: codes of left context per window");
  sub->add_option("--vocoder-lookahead", a->vocoder_stream.lookahead,
                  "speech: codes of lookahead per window");
  sub->add_option("--drain-timeout", a->drain_timeout_s,
                  "seconds in-flight requests may run after SIGTERM before they are cancelled")
      ->capture_default_str();
  sub->add_option(
         "--max-client-requests", a->server.client_limits.max_requests,
         "requests in flight per client (API key, else address); more get 429 (0: no limit)")
      ->capture_default_str();
  sub->add_option(
         "--max-client-queued-tokens", a->server.client_limits.max_queued_tokens,
         "tokens ((prompt + max_tokens) x n) in flight per client; more get 429 (0: no limit)")
      ->capture_default_str();
  sub->callback([a, &ctx] { ctx.exit_code = run_serve(*a); });
}

}  // namespace edge::cli
