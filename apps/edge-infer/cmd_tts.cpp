// edge-infer tts [-m DIR [--vocoder CODEC_DIR]] [--voice NAME --language L] -p TEXT -o out.wav
//   [--vocoder-worker] [--json]
// edge-infer tts -m LM.gguf --vocoder VOC.gguf [--speaker FILE.json] [--window W --context C
//   --lookahead L] ...                                                (OuteTTS)
// edge-infer bench-tts [the same model flags] [-p TEXT] [-r N] [...]
// Text to speech by the speech graph (pipeline/prebuilt/speech_graph.h): a Qwen3-TTS
// checkpoint directory (talker + code predictor, then its 12 Hz codec decoder from
// speech_tokenizer/ or --vocoder), or an OuteTTS speech-code LM then a WavTokenizer vocoder;
// decoders in this process or in a worker. Without -m the demo pair (Qwen3-TTS layout, or
// --family outetts; random weights: the audio is noise). `tts` writes a 24 kHz 16-bit mono WAV
// and prints the utterance's figures on stderr (JSON on stdout with --json); `bench-tts`
// speaks the text -r times and prints JSON: each run's TTFA, RTF, simulated underruns and
// the prebuffer they need, and p50/p95 of each.
#include <cstdio>

#include "commands.h"
#include "core/mapped_file.h"
#include "core/memory_ledger.h"
#include "formats/wav.h"
#include "model_source.h"
#include "pipeline/prebuilt/speech_graph.h"
#include "pipeline/stages/outetts/outetts_prompt.h"
#include "plan_options.h"

namespace edge::cli {
namespace {

struct TtsArgs {
  std::string lm, vocoder, text = "Hello from edge infer, the speech pipeline works.", out;
  std::string speaker_file;  // an OuteTTS speaker profile (JSON)
  // Graph input "voice": a Qwen3-TTS speaker's name, or the OuteTTS profile's text.
  std::string voice, language;
  std::string family = "qwen3-tts";  // the demo pair's family when no -m is given
  pipeline::SpeechGraphOptions graph;
  std::string stage_pools = "split";  // split | shared (PipelineRunOptions::stage_pools)
  bool vocoder_worker = false, json = false;
  int threads = 0;
  int runs = 5;
};

struct Speech {
  std::unique_ptr<pipeline::RamLedger> ledger;
  std::unique_ptr<pipeline::PipelineRuntime> rt;
};

// The models (the demo pair when none is given) and the voice, checked against the family.
Status resolve_models(TtsArgs& a) {
  if (a.lm.empty()) {
    if (!a.vocoder.empty()) return Status::invalid_argument("--vocoder without -m: give both, or neither for the demo");
    if (a.family != "qwen3-tts" && a.family != "outetts")
      return Status::invalid_argument("--family must be qwen3-tts or outetts (got " + a.family + ")");
    ASSIGN_OR_RETURN(auto demo, a.family == "outetts" ? demo_outetts_paths() : demo_speech_paths());
    std::fprintf(stderr, "edge-infer: no models given: the %s demo pair (random weights, the audio is noise)\n",
                 a.family.c_str());
    a.lm = demo.first, a.vocoder = demo.second;
  }
  if (pipeline::speech_family(a.lm) == pipeline::SpeechFamily::kQwen3Tts) {
    a.family = "qwen3-tts";
    if (!a.speaker_file.empty())
      return Status::invalid_argument("--speaker takes an OuteTTS profile; a Qwen3-TTS model speaks with --voice NAME");
    return Status();
  }
  a.family = "outetts";
  if (a.vocoder.empty()) return Status::invalid_argument("an OuteTTS LM needs --vocoder (a WavTokenizer GGUF)");
  if (!a.voice.empty() || !a.language.empty())
    return Status::invalid_argument("--voice and --language are Qwen3-TTS's; an OuteTTS LM takes --speaker FILE.json");
  if (!a.speaker_file.empty()) {
    ASSIGN_OR_RETURN(a.voice, read_text_file(a.speaker_file));
    RETURN_IF_ERROR(pipeline::parse_speaker_json(a.voice).status().with_context(a.speaker_file));
  }
  return Status();
}

Expected<Speech> start_speech(TtsArgs& a) {
  RETURN_IF_ERROR(resolve_models(a));
  if (a.stage_pools != "split" && a.stage_pools != "shared")
    return Status::invalid_argument("--stage-pools must be split or shared (got " + a.stage_pools + ")");
  a.graph.talker_model = a.lm;
  a.graph.vocoder_model = a.vocoder;
  a.graph.capacity = 1;
  if (a.vocoder_worker) a.graph.vocoder_placement = pipeline::Placement::kWorker;
  ASSIGN_OR_RETURN(pipeline::PipelineSpec spec, pipeline::speech_pipeline(a.graph));
  ASSIGN_OR_RETURN(MemoryLimit limit, memory_limit_flag(""));
  Speech s;
  s.ledger = std::make_unique<pipeline::RamLedger>(limit.bytes > 0 ? limit.bytes : INT64_MAX,
                                                   limit.source.empty() ? "no limit" : limit.source);
  pipeline::PipelineRunOptions o;
  o.n_threads = a.threads;
  o.stage_pools = a.stage_pools == "shared" ? pipeline::StagePools::kShared : pipeline::StagePools::kSplit;
  o.ctx = a.graph.talker_ctx;
  ASSIGN_OR_RETURN(s.rt, pipeline::PipelineRuntime::start(spec, *s.ledger, o));
  return s;
}

int run_tts(TtsArgs& a) {
  auto s = start_speech(a);
  if (!s) return report_error(s.status());
  std::vector<float> pcm;
  auto f = pipeline::speak(
      *s->rt, a.text, a.voice,
      [&](const std::vector<float>& chunk) {
        pcm.insert(pcm.end(), chunk.begin(), chunk.end());
        return true;
      },
      nullptr, a.language);
  if (!f) return report_error(f.status());
  RETURN_CODE_IF_ERROR(write_wav16(a.out, pcm, 24000));
  std::fprintf(stderr,
               "edge-infer: %lld samples (%.2f s) -> %s; time to first audio %.3f s, real-time "
               "factor %.3f, %d underruns, prebuffer %.3f s\n",
               static_cast<long long>(f->samples), f->audio_s, a.out.c_str(), f->ttfa_s, f->rtf,
               f->underruns, f->prebuffer_s);
  if (a.json) std::printf("%s\n", pipeline::figures_json(*f).dump(2).c_str());
  return 0;
}

int run_bench_tts(TtsArgs& a) {
  if (a.runs < 1) return report_error(Status::invalid_argument("-r must be at least 1"));
  a.graph.codes_out = true;  // the talker's pace beside the whole graph's
  auto s = start_speech(a);
  if (!s) return report_error(s.status());
  pipeline::SpeechFigureSet set;
  nlohmann::json runs = nlohmann::json::array();
  for (int i = 0; i < a.runs; ++i) {
    auto f = pipeline::speak(
        *s->rt, a.text, a.voice, [](const std::vector<float>&) { return true; }, nullptr,
        a.language);
    if (!f) return report_error(f.status());
    set.add(*f);
    runs.push_back(pipeline::figures_json(*f));
  }
  nlohmann::json out = {{"family", a.family},
                        {"talker", a.lm},
                        {"vocoder", a.vocoder},
                        {"vocoder_placement", a.vocoder_worker ? "worker" : "in_process"},
                        {"window", a.graph.vocoder.window},
                        {"context", a.graph.vocoder.context},
                        {"lookahead", a.graph.vocoder.lookahead},
                        {"threads", a.threads},
                        {"text", a.text},
                        {"voice", a.family == "qwen3-tts" ? a.voice : a.speaker_file},
                        {"language", a.language},
                        {"runs", runs},
                        {"summary", set.summary_json()}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

void add_common(CLI::App* sub, TtsArgs& a) {
  sub->add_option("-m,--model", a.lm,
                  "Qwen3-TTS checkpoint directory, or an OuteTTS speech-code LM (GGUF); default: "
                  "the demo pair");
  sub->add_option("--vocoder", a.vocoder,
                  "the decoder: a Qwen3-TTS 12 Hz tokenizer directory (default: the checkpoint's "
                  "speech_tokenizer/), or a wavtokenizer-dec GGUF for OuteTTS");
  sub->add_option("--voice", a.voice, "Qwen3-TTS: a speaker of the checkpoint (default: its first)");
  sub->add_option("--language", a.language, "Qwen3-TTS: a language of the checkpoint (default: auto)");
  sub->add_option("--family", a.family, "the demo pair without -m: qwen3-tts or outetts")
      ->capture_default_str();
  sub->add_option("-p,--prompt", a.text, "text to speak");
  sub->add_option("--speaker", a.speaker_file,
                  "OuteTTS speaker profile (JSON: words with duration and codes) to speak with");
  sub->add_option("--window", a.graph.vocoder.window, "vocoder codes per window (0: exact)")
      ->capture_default_str();
  sub->add_option("--context", a.graph.vocoder.context, "codes of left context per window");
  sub->add_option("--lookahead", a.graph.vocoder.lookahead, "codes of lookahead per window");
  sub->add_option("--ctx", a.graph.talker_ctx, "the speech LM's context")->capture_default_str();
  sub->add_flag("--vocoder-worker", a.vocoder_worker, "run the vocoder in an edge-infer worker process");
  sub->add_option("-t,--threads", a.threads, "threads (0: all the process may use)");
  sub->add_option("--stage-pools", a.stage_pools,
                  "split: each in-process stage its share of the threads (a pipeline); shared: "
                  "one pool the stages take turns on")
      ->capture_default_str();
}

}  // namespace

void register_tts(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<TtsArgs>();
  CLI::App* sub = app.add_subcommand("tts", "Text to speech (Qwen3-TTS, or OuteTTS + WavTokenizer) into a WAV");
  add_common(sub, *a);
  sub->add_option("-o,--output", a->out, "output WAV (24 kHz 16-bit mono)")->required();
  sub->add_flag("--json", a->json, "print the utterance's figures as JSON");
  sub->callback([a, &ctx] { ctx.exit_code = run_tts(*a); });

  auto b = std::make_shared<TtsArgs>();
  CLI::App* bench = app.add_subcommand("bench-tts", "TTFA, RTF, underruns and prebuffer of speech, as JSON");
  add_common(bench, *b);
  bench->add_option("-r,--runs", b->runs, "utterances")->capture_default_str();
  bench->callback([b, &ctx] { ctx.exit_code = run_bench_tts(*b); });
}

}  // namespace edge::cli
