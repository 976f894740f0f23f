// The text probe over a running pipeline, and probe_pipeline_file() around both probes.
#include <signal.h>
#include <sys/wait.h>

#include <thread>

#include "harness/owned_process.h"
#include "harness/probe.h"
#include "harness/probe_check.h"
#include "harness/probe_pipeline_util.h"
#include "pipeline/stages/lm_stage.h"

namespace edge {

using namespace probe_detail;
using pipeline::PipelineHandle;
using pipeline::PipelineRuntime;

namespace probe_detail {

ReadOut read_all(PipelineRuntime& rt, const PipelineHandle& h, std::chrono::seconds timeout) {
  ReadOut out;
  for (;;) {
    auto e = rt.next(h, timeout);
    if (!e.ok()) {
      out.end = e.status();
      return out;
    }
    if (e->end_of_request) {
      out.end = e->error;
      return out;
    }
    out.ids.insert(out.ids.end(), e->value.tokens.begin(), e->value.tokens.end());
    out.samples.insert(out.samples.end(), e->value.samples.begin(), e->value.samples.end());
  }
}

bool wait_for_depth(PipelineRuntime& rt, const PipelineHandle& h, int32_t depth,
                    std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    auto d = rt.stream_depth(h);
    if (d.ok() && d->first >= depth) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a condition
  }
  return false;
}

Expected<StageWorker> stage_worker(const PipelineRuntime& rt, const std::string& stage) {
  const nlohmann::json state = rt.state_json();  // held: the loop reads into it
  for (const auto& s : state["stages"]) {
    if (s["stage"] != stage) continue;
    // "worker pid N" or "external pid N: ..." (a server the stage spawned).
    const std::string where = s["placement_actual"];
    size_t at = std::string::npos;
    for (const char* prefix : {"worker pid ", "external pid "})
      if (where.rfind(prefix, 0) == 0) at = std::string(prefix).size();
    if (at == std::string::npos)
      return Status::not_found("stage " + stage + " runs " + where + ", not in a process of its own");
    ASSIGN_OR_RETURN(OwnedProcess p, OwnedProcess::child(std::stoi(where.substr(at))));
    return StageWorker{stage, s["worker_generation"].get<uint32_t>(), p};
  }
  return Status::not_found("no stage " + stage);
}

void remember(std::vector<StageWorker>* seen, const Expected<StageWorker>& w) {
  if (!w.ok()) return;
  for (const StageWorker& s : *seen)
    if (s.process.pid == w->process.pid && s.process.start_ticks == w->process.start_ticks) return;
  seen->push_back(*w);
}

}  // namespace probe_detail

namespace {

constexpr double kPromptEndS = 5.0;  // "at once": generous for a loaded 2-core machine

std::map<std::string, pipeline::PortValue> id_inputs(const pipeline::PipelineSpec& spec,
                                                     const std::vector<int32_t>& ids) {
  std::map<std::string, pipeline::PortValue> in;
  for (const pipeline::Route& r : spec.routes) {
    if (r.from.stage != "input") continue;
    // A chat stage's conversation and media ports are optional; its prompt goes as text
    // (llama-server with a projector takes no token ids on /v1/completions).
    const pipeline::StageSpec* s = spec.stage(r.to.stage);
    const bool chat = s && s->contract.name == "chat.generate";
    if (chat && r.to.port != "prompt") continue;
    in[r.from.port] = chat ? pipeline::PortValue{"Once upon a time, in a small town, there lived", {}, {}}
                           : pipeline::PortValue{"", ids, {}};
  }
  return in;
}

class TextProbe {
 public:
  TextProbe(PipelineRuntime& rt, const TextProbeOptions& o, ProbeReport& r)
      : rt_(rt),
        o_(o),
        r_(r),
        hw_(rt.options().stream_high_water),
        inputs_(id_inputs(rt.spec(), o.prompt)) {}

  void run() {
    if (!baseline()) return;
    saturation();
    cancel_after_saturation();
    worker_killed();
  }

 private:
  bool baseline() {
    Running c(r_, "text.baseline");
    auto h = rt_.submit(inputs_);
    if (!c.expect(h.ok(), "submit: " + h.status().to_string())) return false;
    const ReadOut out = read_all(rt_, *h, o_.timeout);
    baseline_ = out.ids;
    c.figures()["tokens"] = out.ids.size();
    c.expect(out.end.ok(), "the request ended in error: " + out.end.to_string());
    c.expect(static_cast<int32_t>(out.ids.size()) > hw_,
             "too few tokens (" + std::to_string(out.ids.size()) +
                 ") to pass the high-water mark " + std::to_string(hw_));
    return !c.failed();
  }

  // Nobody reads: the stream fills to its high-water mark and stops there; then the same
  // tokens come out, and the handle, once read to its end, is stale.
  void saturation() {
    PipelineHandle copy;
    {
      Running c(r_, "text.saturation");
      auto h = rt_.submit(inputs_);
      if (!c.expect(h.ok(), "submit: " + h.status().to_string())) return;
      copy = *h;
      c.figures()["high_water"] = hw_;
      if (c.expect(wait_for_depth(rt_, *h, hw_, o_.timeout), "the stream never filled")) {
        int32_t most = 0;
        for (int i = 0; i < 20; ++i) {  // the producer stays stalled on its credits
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          auto d = rt_.stream_depth(*h);
          if (d.ok()) most = std::max({most, d->first, d->second});
        }
        c.figures()["max_depth"] = most;
        c.expect(most <= hw_, "the high-water mark was exceeded: " + std::to_string(most));
      }
    }
    {
      Running c(r_, "text.same_tokens_after_saturation");
      const ReadOut out = read_all(rt_, copy, o_.timeout);
      c.expect(out.end.ok(), "ended in error: " + out.end.to_string());
      c.expect(out.ids == baseline_, "tokens differ from the baseline");
    }
    Running c(r_, "text.stale_handle");
    auto n = rt_.next(copy, std::chrono::milliseconds(10));
    c.expect(n.status().code() == StatusCode::kNotFound,
             "next() on a stale handle: " + n.status().to_string());
    const Status cs = rt_.cancel(copy);
    c.expect(cs.code() == StatusCode::kNotFound &&
                 cs.message().find("stale handle") != std::string::npos,
             "cancel() on a stale handle: " + cs.to_string());
    PipelineHandle forged = copy;
    forged.token ^= 1;
    c.expect(
        rt_.next(forged, std::chrono::milliseconds(10)).status().code() == StatusCode::kNotFound,
        "a handle of another runtime was accepted");
  }

  void cancel_after_saturation() {
    Running c(r_, "text.cancel");
    auto h = rt_.submit(inputs_);
    if (!c.expect(h.ok(), "submit: " + h.status().to_string())) return;
    if (!c.expect(wait_for_depth(rt_, *h, hw_, o_.timeout), "the stream never filled")) return;
    const auto t0 = Clock::now();
    c.expect(rt_.cancel(*h).ok(), "cancel refused");
    const ReadOut out = read_all(rt_, *h, o_.timeout);
    const double s = since(t0);
    c.figures()["cancel_to_end_s"] = s;
    c.expect(out.end.code() == StatusCode::kCancelled, "ended with " + out.end.to_string());
    c.expect(s < kPromptEndS, "the end came only after " + std::to_string(s) + " s");
  }

  void worker_killed();

  PipelineRuntime& rt_;
  const TextProbeOptions& o_;
  ProbeReport& r_;
  int32_t hw_;
  std::map<std::string, pipeline::PortValue> inputs_;
  std::vector<int32_t> baseline_;
};

// The worker of the text stage killed after the first token: the request ends with an
// explicit error naming the generation; the next one is served by a new generation.
// An external text stage's server is killed the same way (by the pid and start time the
// stage spawned); its error names the pid as well.
void TextProbe::worker_killed() {
  std::string stage;
  bool external = false;
  for (const auto& s : rt_.spec().stages)
    if ((s.contract.name == "text.generate" || s.contract.name == "chat.generate") &&
        (s.placement == pipeline::Placement::kWorker || s.placement == pipeline::Placement::kExternal)) {
      stage = s.name;
      external = s.placement == pipeline::Placement::kExternal;
    }
  Expected<StageWorker> w = Status::not_found("no worker");
  {
    Running c(r_, external ? "text.server_killed" : "text.worker_killed");
    if (stage.empty()) return c.skip("no language-model stage runs in a worker or an external server");
    w = stage_worker(rt_, stage);
    if (!c.expect(w.ok(), w.status().to_string())) return;
    auto h = rt_.submit(inputs_);
    if (!c.expect(h.ok(), "submit: " + h.status().to_string())) return;
    auto first = rt_.next(*h, o_.timeout);
    if (!c.expect(first.ok() && !first->end_of_request, "no first token")) return;
    if (!c.expect(w->process.signal(SIGKILL).ok(), "could not signal " + w->process.to_string()))
      return;
    const auto t0 = Clock::now();
    const ReadOut out = read_all(rt_, *h, o_.timeout);
    const double s = since(t0);
    c.figures()["kill_to_error_s"] = s;
    c.figures()["error"] = out.end.to_string();
    const std::string gen = "generation " + std::to_string(w->generation);
    c.expect(out.end.code() == StatusCode::kUnavailable, "ended with " + out.end.to_string());
    c.expect(out.end.message().find(gen) != std::string::npos, "the error does not name " + gen);
    const std::string pid = "pid " + std::to_string(w->process.pid);
    if (external) c.expect(out.end.message().find(pid) != std::string::npos, "the error does not name " + pid);
    c.expect(s < kPromptEndS, "the error came only after " + std::to_string(s) + " s");
  }
  Running next(r_, external ? "text.after_server_killed" : "text.after_worker_killed");
  auto h2 = rt_.submit(inputs_);
  if (!next.expect(h2.ok(), "submit: " + h2.status().to_string())) return;
  const ReadOut again = read_all(rt_, *h2, o_.timeout);
  next.expect(again.end.ok(), "ended in error: " + again.end.to_string());
  next.expect(again.ids == baseline_, "tokens differ from the baseline");
  auto w2 = stage_worker(rt_, stage);
  next.figures()["generation"] = w2.ok() ? w2->generation : 0;
  next.expect(w2.ok() && w2->generation > w->generation, "not served by a new generation");
}

}  // namespace

void text_probe(PipelineRuntime& rt, const TextProbeOptions& o, ProbeReport& report) {
  TextProbe(rt, o, report).run();
}

}  // namespace edge
