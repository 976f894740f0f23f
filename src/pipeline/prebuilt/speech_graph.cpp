#include "pipeline/prebuilt/speech_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "pipeline/stages/speech_codes_stage.h"
#include "pipeline/stages/vocoder_stage.h"

namespace edge::pipeline {

Expected<PipelineSpec> speech_pipeline(const SpeechGraphOptions& o) {
  std::error_code ec;
  const auto voc_bytes = std::filesystem::file_size(o.vocoder_model, ec);
  if (ec) return Status::not_found(fmt::format("vocoder {}: {}", o.vocoder_model, ec.message()));
  PipelineSpec p;
  p.name = "speech";
  StageSpec talker;
  talker.name = "talker";
  talker.kind = &kSpeechCodesKind;
  talker.contract = ContractRef{"speech.codes", 2};
  talker.artifacts.push_back(Artifact{"model", o.talker_model, ""});
  talker.capacity = o.capacity;
  talker.engine.ctx = o.talker_ctx;
  StageSpec voc;
  voc.name = "vocoder";
  voc.kind = &kVocoderKind;
  voc.contract = ContractRef{"audio.pcm", 1};
  voc.placement = o.vocoder_placement;
  voc.artifacts.push_back(Artifact{"model", o.vocoder_model, ""});
  voc.capacity = o.capacity;
  voc.vocoder = o.vocoder;
  // Weights (F32 at most twice an F16 file) plus decode buffers; a worker also holds this
  // binary's code and libraries.
  const int64_t extra = o.vocoder_placement == Placement::kWorker ? (256LL << 20) : (64LL << 20);
  voc.reservation_bytes = 2 * static_cast<int64_t>(voc_bytes) + extra;
  p.stages = {std::move(talker), std::move(voc)};
  p.routes = {Route{{"input", "text"}, {"talker", "text"}},
              Route{{"input", "voice"}, {"talker", "voice"}},
              Route{{"talker", "codes"}, {"vocoder", "codes"}},
              Route{{"vocoder", "pcm"}, {"output", "audio"}}};
  return p;
}

SpeechTimeline::SpeechTimeline(int32_t sample_rate) : rate_(sample_rate) {
  start();
}

void SpeechTimeline::start() {
  t0_ = std::chrono::steady_clock::now();
  arrivals_.clear();
}

void SpeechTimeline::chunk(int64_t n_samples) {
  chunk_at(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(),
           n_samples);
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
          {"chunks", f.chunks}};
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

std::map<std::string, PortValue> speech_inputs(const std::string& text, const std::string& voice) {
  PortValue t, v;
  t.text = text;
  v.text = voice;
  return {{"text", t}, {"voice", v}};
}

Expected<SpeechTimeline::Figures> speak(
    PipelineRuntime& rt, const std::string& text, const std::string& voice,
    const std::function<bool(const std::vector<float>&)>& on_audio,
    const std::function<bool()>& stop) {
  SpeechTimeline timeline;
  ASSIGN_OR_RETURN(PipelineHandle h, rt.submit(speech_inputs(text, voice)));
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
    if (cancelled || e->port != "audio" || e->value.samples.empty()) continue;
    timeline.chunk(static_cast<int64_t>(e->value.samples.size()));
    if (!on_audio(e->value.samples)) cancelled = true, (void)rt.cancel(h);
  }
}

}  // namespace edge::pipeline
