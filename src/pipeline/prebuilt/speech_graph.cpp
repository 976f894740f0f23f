#include "pipeline/prebuilt/speech_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "formats/hf_config.h"
#include "pipeline/stages/qwen3_tts_codec_stage.h"
#include "pipeline/stages/qwen3_tts_talker_stage.h"
#include "pipeline/stages/speech_codes_stage.h"
#include "pipeline/stages/vocoder_stage.h"

namespace edge::pipeline {

namespace {

namespace fs = std::filesystem;

// A stage on our engine or decoders: its kind, contract and model file.
StageSpec model_stage(const char* name, const StageKind& kind, ContractRef contract,
                      const std::string& model, int32_t capacity) {
  StageSpec s;
  s.name = name;
  s.kind = &kind;
  s.contract = std::move(contract);
  s.artifacts.push_back(Artifact{"model", model, ""});
  s.capacity = capacity;
  return s;
}

// Besides a decoder's weights: its buffers, and in a worker this binary's code and libraries.
int64_t decoder_overhead(Placement p) {
  return p == Placement::kWorker ? (256LL << 20) : (64LL << 20);
}

// text (and voice, and language where the talker takes one) -> talker -> decoder -> audio;
// with `codes_out` the talker's codes are a graph output too.
std::vector<Route> speech_routes(bool language, bool codes_out) {
  std::vector<Route> r = {Route{{"input", "text"}, {"talker", "text"}},
                          Route{{"input", "voice"}, {"talker", "voice"}}};
  if (language) r.push_back(Route{{"input", "language"}, {"talker", "language"}});
  r.push_back(Route{{"talker", "codes"}, {"vocoder", "codes"}});
  r.push_back(Route{{"vocoder", "pcm"}, {"output", "audio"}});
  if (codes_out) r.push_back(Route{{"talker", "codes"}, {"output", "codes"}});
  return r;
}

// A stage's model artifact for a Hugging Face folder: its model.safetensors (a file, so
// that it can be pinned by hash).
Expected<std::string> safetensors_of(const std::string& path, const char* what) {
  std::error_code ec;
  const fs::path f = fs::is_directory(path, ec) ? fs::path(path) / "model.safetensors" : fs::path(path);
  if (!fs::is_regular_file(f, ec))
    return Status::not_found(fmt::format("{} {}: no model.safetensors there", what, path));
  return f.string();
}

Expected<PipelineSpec> qwen3_tts_pipeline(const SpeechGraphOptions& o) {
  ASSIGN_OR_RETURN(const std::string talker_file, safetensors_of(o.talker_model, "talker"));
  const std::string codec_dir =
      o.vocoder_model.empty() ? default_qwen3_tts_codec(o.talker_model) : o.vocoder_model;
  ASSIGN_OR_RETURN(const std::string codec_file, safetensors_of(codec_dir, "codec"));
  std::error_code ec;
  const auto codec_bytes = fs::file_size(codec_file, ec);
  PipelineSpec p;
  p.name = "speech";
  StageSpec talker = model_stage("talker", kQwen3TtsTalkerKind, ContractRef{"speech.codes", 3},
                                 talker_file, o.capacity);
  talker.engine.ctx = o.talker_ctx;
  StageSpec codec = model_stage("vocoder", kQwen3TtsCodecKind, ContractRef{"audio.pcm", 2},
                                codec_file, o.capacity);
  codec.placement = o.vocoder_placement;
  // The file (F32 at most) plus the F32 copies made at load (transposed-conv kernels and
  // normalised codebooks, under half the file).
  codec.reservation_bytes =
      static_cast<int64_t>(codec_bytes) * 3 / 2 + decoder_overhead(o.vocoder_placement);
  p.stages = {std::move(talker), std::move(codec)};
  p.routes = speech_routes(/*language=*/true, o.codes_out);
  return p;
}

}  // namespace

SpeechFamily speech_family(const std::string& talker_model) {
  const fs::path config = fs::path(hf_folder_of(talker_model)) / "config.json";
  std::error_code ec;
  if (!fs::is_regular_file(config, ec)) return SpeechFamily::kOuteTts;
  if (!fs::is_directory(talker_model, ec) && fs::path(talker_model).extension() != ".safetensors")
    return SpeechFamily::kOuteTts;
  auto j = read_json_file(config.string());
  return j.ok() && j->value("model_type", "") == "qwen3_tts" ? SpeechFamily::kQwen3Tts
                                                             : SpeechFamily::kOuteTts;
}

std::string default_qwen3_tts_codec(const std::string& talker_model) {
  return (fs::path(hf_folder_of(talker_model)) / "speech_tokenizer").string();
}

Expected<PipelineSpec> speech_pipeline(const SpeechGraphOptions& o) {
  if (speech_family(o.talker_model) == SpeechFamily::kQwen3Tts) return qwen3_tts_pipeline(o);
  std::error_code ec;
  const auto voc_bytes = std::filesystem::file_size(o.vocoder_model, ec);
  if (ec) return Status::not_found(fmt::format("vocoder {}: {}", o.vocoder_model, ec.message()));
  PipelineSpec p;
  p.name = "speech";
  StageSpec talker = model_stage("talker", kSpeechCodesKind, ContractRef{"speech.codes", 2},
                                 o.talker_model, o.capacity);
  talker.engine.ctx = o.talker_ctx;
  StageSpec voc = model_stage("vocoder", kVocoderKind, ContractRef{"audio.pcm", 1},
                              o.vocoder_model, o.capacity);
  voc.placement = o.vocoder_placement;
  voc.vocoder = o.vocoder;
  // Weights (F32 at most twice an F16 file) plus decode buffers.
  voc.reservation_bytes = 2 * static_cast<int64_t>(voc_bytes) + decoder_overhead(o.vocoder_placement);
  p.stages = {std::move(talker), std::move(voc)};
  p.routes = speech_routes(/*language=*/false, o.codes_out);
  return p;
}

SpeechTimeline::SpeechTimeline(int32_t sample_rate) : rate_(sample_rate) {
  start();
}

void SpeechTimeline::start() {
  t0_ = std::chrono::steady_clock::now();
  arrivals_.clear();
  codes_ = 0;
  last_code_s_ = 0;
}

void SpeechTimeline::chunk(int64_t n_samples) {
  chunk_at(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(),
           n_samples);
}

void SpeechTimeline::codes(int64_t n_codes) {
  if (n_codes <= 0) return;
  codes_ += n_codes;
  last_code_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void SpeechTimeline::chunk_at(double at_seconds, int64_t n_samples) {
  if (n_samples > 0) arrivals_.emplace_back(at_seconds, n_samples);
}

SpeechTimeline::Figures SpeechTimeline::figures() const {
  Figures f;
  if (arrivals_.empty()) return f;
  const double rate = static_cast<double>(rate_);
  f.ttfa_s = arrivals_.front().first;
  f.total_s = arrivals_.back().first;
  f.chunks = static_cast<int64_t>(arrivals_.size());
  // The player starts at the first arrival; before chunk i arrives it can play what came
  // before it. `clock` is where playback would be if nothing stalled so far.
  double played_until = f.ttfa_s;  // wall time at which the buffered audio runs out
  int64_t before = 0;
  for (const auto& [at, n] : arrivals_) {
    const double ideal = f.ttfa_s + static_cast<double>(before) / rate;  // no-stall deadline
    f.prebuffer_s = std::max(f.prebuffer_s, at - ideal);
    if (before > 0 && at > played_until + 1e-9) {
      ++f.underruns;
      f.stall_s += at - played_until;
      played_until = at;
    }
    played_until = std::max(played_until, at) + static_cast<double>(n) / rate;
    before += n;
  }
  f.samples = before;
  f.audio_s = static_cast<double>(before) / rate;
  f.rtf = f.audio_s > 0 ? f.total_s / f.audio_s : 0;
  f.codes = codes_;
  f.codes_s = last_code_s_;
  f.talker_rtf = f.audio_s > 0 ? f.codes_s / f.audio_s : 0;
  return f;
}

nlohmann::json figures_json(const SpeechTimeline::Figures& f) {
  return {{"ttfa_s", f.ttfa_s},
          {"total_s", f.total_s},
          {"audio_s", f.audio_s},
          {"rtf", f.rtf},
          {"underruns", f.underruns},
          {"stall_s", f.stall_s},
          {"prebuffer_s", f.prebuffer_s},
          {"samples", f.samples},
          {"chunks", f.chunks},
          {"codes", f.codes},
          {"codes_s", f.codes_s},
          {"talker_rtf", f.talker_rtf}};
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(q * static_cast<double>(v.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(v.size()))) - 1;
  return v[i];
}

void SpeechFigureSet::add(const SpeechTimeline::Figures& f) {
  std::lock_guard<std::mutex> l(mu_);
  all_.push_back(f);
}

void SpeechFigureSet::add_cancelled() {
  std::lock_guard<std::mutex> l(mu_);
  ++cancelled_;
}

size_t SpeechFigureSet::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return all_.size();
}

namespace {

using Field = double (*)(const SpeechTimeline::Figures&);
const std::pair<const char*, Field> kFields[] = {
    {"ttfa_s", [](const SpeechTimeline::Figures& f) { return f.ttfa_s; }},
    {"rtf", [](const SpeechTimeline::Figures& f) { return f.rtf; }},
    {"underruns",
     [](const SpeechTimeline::Figures& f) { return static_cast<double>(f.underruns); }},
    {"stall_s", [](const SpeechTimeline::Figures& f) { return f.stall_s; }},
    {"prebuffer_s", [](const SpeechTimeline::Figures& f) { return f.prebuffer_s; }},
    {"audio_s", [](const SpeechTimeline::Figures& f) { return f.audio_s; }},
    {"talker_rtf", [](const SpeechTimeline::Figures& f) { return f.talker_rtf; }},
};

}  // namespace

nlohmann::json SpeechFigureSet::summary_json() const {
  std::lock_guard<std::mutex> l(mu_);
  nlohmann::json j = {{"n", all_.size()}, {"cancelled", cancelled_}};
  for (const auto& [name, get] : kFields) {
    std::vector<double> v;
    for (const auto& f : all_) v.push_back(get(f));
    j[name] = {{"p50", percentile(v, 0.5)}, {"p95", percentile(v, 0.95)}};
  }
  return j;
}

std::string SpeechFigureSet::metrics_text() const {
  const nlohmann::json s = summary_json();
  std::string out = fmt::format(
      "# HELP edge_tts_requests Utterances measured by the speech endpoint.\n"
      "# TYPE edge_tts_requests counter\nedge_tts_requests {}\n"
      "# HELP edge_tts_cancelled_total Utterances cancelled because the client left first.\n"
      "# TYPE edge_tts_cancelled_total counter\nedge_tts_cancelled_total {}\n",
      s["n"].get<size_t>(), s["cancelled"].get<uint64_t>());
  for (const auto& [name, get] : kFields) {
    (void)get;
    out += fmt::format(
        "# HELP edge_tts_{0} Speech {0} per utterance (p50, p95).\n"
        "# TYPE edge_tts_{0} gauge\n",
        name);
    for (const char* q : {"p50", "p95"})
      out += fmt::format("edge_tts_{}{{quantile=\"{}\"}} {}\n", name,
                         q == std::string("p50") ? "0.5" : "0.95", s[name][q].get<double>());
  }
  return out;
}

std::map<std::string, PortValue> speech_inputs(const std::string& text, const std::string& voice,
                                               const std::string& language) {
  PortValue t, v, l;
  t.text = text;
  v.text = voice;
  l.text = language;
  return {{"text", t}, {"voice", v}, {"language", l}};
}

Expected<SpeechTimeline::Figures> speak(
    PipelineRuntime& rt, const std::string& text, const std::string& voice,
    const std::function<bool(const std::vector<float>&)>& on_audio,
    const std::function<bool()>& stop, const std::string& language) {
  SpeechTimeline timeline;
  ASSIGN_OR_RETURN(PipelineHandle h, rt.submit(speech_inputs(text, voice, language)));
  bool cancelled = false;
  for (;;) {
    if (!cancelled && stop && stop()) cancelled = true, (void)rt.cancel(h);
    auto e = rt.next(h, std::chrono::milliseconds(50));
    if (!e.ok()) {
      if (e.status().code() == StatusCode::kDeadlineExceeded) continue;
      return e.status();
    }
    if (e->end_of_request) {
      if (cancelled) return Status::cancelled("the utterance was cancelled");
      if (!e->error.ok()) return e->error;
      return timeline.figures();
    }
    if (!cancelled && e->port == "codes") timeline.codes(static_cast<int64_t>(e->value.tokens.size()));
    if (cancelled || e->port != "audio" || e->value.samples.empty()) continue;
    timeline.chunk(static_cast<int64_t>(e->value.samples.size()));
    if (!on_audio(e->value.samples)) cancelled = true, (void)rt.cancel(h);
  }
}

}  // namespace edge::pipeline
