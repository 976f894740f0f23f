// The speech probe: a slow consumer loses nothing, an abort is quick and final, a vocoder
// worker killed mid-stream ends the request with an explicit error and the next utterance
// is unchanged.
#include <signal.h>

#include <thread>

#include "harness/probe.h"
#include "harness/probe_check.h"
#include "harness/probe_pipeline_util.h"
#include "pipeline/prebuilt/speech_graph.h"
#include "pipeline/stages/vocoder_stage.h"

namespace edge {

using namespace probe_detail;
using pipeline::PipelineHandle;
using pipeline::PipelineRuntime;
using pipeline::StageEvent;

namespace {

constexpr double kPromptEndS = 5.0;

class SpeechProbe {
 public:
  SpeechProbe(PipelineRuntime& rt, const SpeechProbeOptions& o, ProbeReport& r)
      : rt_(rt), o_(o), r_(r) {}

  void run() {
    {
      Running c(r_, "speech.baseline");
      baseline_ = utterance(c);
      c.figures()["samples"] = baseline_.size();
      if (!c.expect(!baseline_.empty(), "no audio")) return;
    }
    slow_consumer();
    abort();
    vocoder_killed();
  }

 private:
  std::vector<float> utterance(Running& c) {
    auto h = rt_.submit(pipeline::speech_inputs(o_.text));
    if (!c.expect(h.ok(), "submit: " + h.status().to_string())) return {};
    const ReadOut out = read_all(rt_, *h, o_.timeout);
    c.expect(out.end.ok(), "ended in error: " + out.end.to_string());
    return out.samples;
  }
  // The next event with audio, or the request's end (ok() false: reading failed).
  Expected<StageEvent> next_audio(const PipelineHandle& h) {
    for (;;) {
      ASSIGN_OR_RETURN(StageEvent e, rt_.next(h, o_.timeout));
      if (e.end_of_request || !e.value.samples.empty()) return e;
    }
  }
  // Submits an utterance and reads its first audio (appended to `pcm`).
  Expected<PipelineHandle> started(Running& c, std::vector<float>* pcm) {
    ASSIGN_OR_RETURN(PipelineHandle h, rt_.submit(pipeline::speech_inputs(o_.text)));
    auto first = next_audio(h);
    if (!first.ok() || first->end_of_request) return Status::internal("no first audio");
    if (pcm) pcm->insert(pcm->end(), first->value.samples.begin(), first->value.samples.end());
    return h;
  }

  void slow_consumer() {
    Running c(r_, "speech.slow_consumer");
    std::vector<float> pcm;
    auto h = started(c, &pcm);
    if (!c.expect(h.ok(), h.status().to_string())) return;
    std::this_thread::sleep_for(o_.slow_consumer_pause);
    auto depth = rt_.stream_depth(*h);
    if (depth.ok()) c.figures()["max_depth"] = depth->second;
    c.figures()["high_water"] = rt_.options().stream_high_water;
    c.expect(depth.ok() && depth->second <= rt_.options().stream_high_water,
             "the queue grew past its high-water mark");
    const ReadOut rest = read_all(rt_, *h, o_.timeout);
    pcm.insert(pcm.end(), rest.samples.begin(), rest.samples.end());
    c.expect(rest.end.ok(), "ended in error: " + rest.end.to_string());
    c.expect(pcm == baseline_, "the samples differ from the baseline (lost or repeated audio)");
  }

  void abort() {
    Running c(r_, "speech.abort");
    auto h = started(c, nullptr);
    if (!c.expect(h.ok(), h.status().to_string())) return;
    const auto t0 = Clock::now();
    c.expect(rt_.cancel(*h).ok(), "cancel refused");
    const ReadOut rest = read_all(rt_, *h, o_.timeout);
    const double s = since(t0);
    c.figures()["abort_to_end_s"] = s;
    c.figures()["samples_after_abort"] = rest.samples.size();
    c.expect(rest.end.code() == StatusCode::kCancelled, "ended with " + rest.end.to_string());
    c.expect(rest.samples.empty(), "samples arrived after the abort");
    c.expect(s < kPromptEndS, "the end came only after " + std::to_string(s) + " s");
    c.expect(utterance(c) == baseline_, "the next utterance differs from the baseline");
  }

  void vocoder_killed() {
    std::string stage;
    for (const auto& s : rt_.spec().stages)
      if (s.kind == &pipeline::kVocoderKind && s.placement == pipeline::Placement::kWorker)
        stage = s.name;
    Running c(r_, "speech.vocoder_killed");
    if (stage.empty()) return c.skip("the vocoder does not run in a worker");
    auto w = stage_worker(rt_, stage);
    if (!c.expect(w.ok(), w.status().to_string())) return;
    const int64_t reserved = rt_.state_json()["ledger"]["reserved_bytes"];
    auto h = started(c, nullptr);
    if (!c.expect(h.ok(), h.status().to_string())) return;
    if (!c.expect(w->process.signal(SIGKILL).ok(), "could not signal " + w->process.to_string()))
      return;
    const auto t0 = Clock::now();
    const ReadOut rest = read_all(rt_, *h, o_.timeout);
    const double s = since(t0);
    const int64_t after_death = rt_.state_json()["ledger"]["reserved_bytes"];
    c.figures()["kill_to_error_s"] = s;
    c.figures()["error"] = rest.end.to_string();
    c.figures()["reserved_bytes_before"] = reserved;
    c.figures()["reserved_bytes_after_death"] = after_death;
    const std::string gen = "generation " + std::to_string(w->generation);
    c.expect(!rest.end.ok() && rest.end.code() != StatusCode::kDeadlineExceeded,
             "no explicit error: " + rest.end.to_string());
    c.expect(rest.end.to_string().find(gen) != std::string::npos, "the error does not name " + gen);
    c.expect(s < kPromptEndS, "the error came only after " + std::to_string(s) + " s");
    c.expect(after_death < reserved, "the dead worker's reservation was not released");
    c.expect(utterance(c) == baseline_, "the next utterance differs from the baseline");
    auto w2 = stage_worker(rt_, stage);
    c.figures()["generation_after"] = w2.ok() ? w2->generation : 0;
    c.expect(w2.ok() && w2->generation > w->generation, "not served by a new generation");
    c.expect(rt_.state_json()["ledger"]["reserved_bytes"] == reserved,
             "the new generation's reservation differs");
  }

  PipelineRuntime& rt_;
  const SpeechProbeOptions& o_;
  ProbeReport& r_;
  std::vector<float> baseline_;
};

}  // namespace

void speech_probe(PipelineRuntime& rt, const SpeechProbeOptions& o, ProbeReport& report) {
  SpeechProbe(rt, o, report).run();
}

}  // namespace edge
