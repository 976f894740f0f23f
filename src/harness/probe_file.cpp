// probe_pipeline_file(): start a pipeline file's stages, run the probes its graph allows,
// stop it, and look for every worker process seen during the run: one still there (running
// or an unreaped zombie) is cleaned up and reported as a finding.
#include <signal.h>
#include <sys/wait.h>

#include <thread>

#include "harness/probe.h"
#include "harness/probe_check.h"
#include "harness/probe_pipeline_util.h"
#include "pipeline/stages/lm_stage.h"

namespace edge {

using namespace probe_detail;

bool graph_has_speech(const pipeline::PipelineSpec& spec) {
  for (const pipeline::Route& r : spec.routes)
    if (r.to.stage == "output" && r.to.port == "audio") return true;
  return false;
}

// A stage serving text.generate (ours, in process or in a worker, or an external server)
// whose output reaches the graph's outputs.
bool graph_has_text(const pipeline::PipelineSpec& spec) {
  for (const pipeline::Route& r : spec.routes) {
    const pipeline::StageSpec* s = spec.stage(r.from.stage);
    if (r.to.stage == "output" && s && (s->contract.name == "text.generate" || s->contract.name == "chat.generate"))
      return true;
  }
  return false;
}

namespace probe_detail {

// After the runtime stopped: every worker seen must have exited and been reaped by it.
void check_cleanup(const std::vector<StageWorker>& seen, ProbeReport& report,
                   std::chrono::milliseconds grace) {
  for (const StageWorker& w : seen) {
    const auto deadline = Clock::now() + grace;
    while (w.process.alive() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!w.process.alive()) continue;
    const std::string who = "worker of stage " + w.stage + " (generation " +
                            std::to_string(w.generation) + ", " + w.process.to_string() + ")";
    int status = 0;
    if (::waitpid(w.process.pid, &status, WNOHANG) == w.process.pid) {
      report.findings.push_back(who + " had exited but was never reaped: reaped by the probe");
      continue;
    }
    const Status st = w.process.signal(SIGKILL);
    if (st.ok()) ::waitpid(w.process.pid, &status, 0);
    report.findings.push_back(who + " was still running after the pipeline stopped: " +
                              (st.ok() ? "killed by the probe" : st.to_string()));
  }
}

}  // namespace probe_detail

Expected<ProbeReport> probe_pipeline_file(const std::string& path, const PipelineProbeOptions& o) {
  ASSIGN_OR_RETURN(pipeline::PipelineSpec spec, pipeline::load_pipeline_file(path));
  ProbeReport report;
  report.target = "pipeline " + path;
  std::vector<StageWorker> seen;
  {
    pipeline::RamLedger ledger(INT64_MAX, "probe");
    pipeline::PipelineRunOptions ro;
    ro.ctx = o.ctx, ro.n_threads = o.n_threads, ro.max_tokens = o.max_tokens;
    ro.stream_high_water = o.high_water, ro.worker_binary = o.worker_binary;
    auto rt = pipeline::PipelineRuntime::start(spec, ledger, ro);
    if (!rt.ok()) return rt.status().with_context("starting " + path);
    // The workers before and after the probes: every generation they start is in one of
    // the two lists (a probe kills at most one generation per stage).
    for (const auto& s : spec.stages) remember(&seen, stage_worker(**rt, s.name));
    if (graph_has_text(spec)) text_probe(**rt, o.text, report);
    if (graph_has_speech(spec)) speech_probe(**rt, o.speech, report);
    for (const auto& s : spec.stages) remember(&seen, stage_worker(**rt, s.name));
    if (report.checks.empty())
      return Status::unsupported(path +
                                 ": the graph has neither a language-model output nor audio");
  }
  check_cleanup(seen, report, std::chrono::seconds(2));
  return report;
}

}  // namespace edge
