// Shared by the text and speech probes and probe_pipeline_file(): reading a request to its
// end, waiting for a stream to fill, and the worker process behind a stage.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "harness/owned_process.h"
#include "harness/probe.h"

namespace edge::probe_detail {

struct ReadOut {
  std::vector<int32_t> ids;
  std::vector<float> samples;
  Status end;  // the end_of_request's error, or why reading stopped
};
ReadOut read_all(pipeline::PipelineRuntime& rt, const pipeline::PipelineHandle& h,
                 std::chrono::seconds timeout);
// Waits (bounded) until the request's stream holds `depth` unread events.
bool wait_for_depth(pipeline::PipelineRuntime& rt, const pipeline::PipelineHandle& h, int32_t depth,
                    std::chrono::seconds timeout);

struct StageWorker {
  std::string stage;
  uint32_t generation = 0;
  OwnedProcess process;
};
// The worker serving `stage` now (our child, checked); not_found when it runs in process.
Expected<StageWorker> stage_worker(const pipeline::PipelineRuntime& rt, const std::string& stage);
// Adds `w` to `seen` (once), so that the cleanup check can look for it after the run.
void remember(std::vector<StageWorker>* seen, const Expected<StageWorker>& w);

// After the runtime stopped: every worker seen must have exited (within `grace`) and been
// reaped by it. One still running is killed, an unreaped one reaped, each a finding.
void check_cleanup(const std::vector<StageWorker>& seen, ProbeReport& report,
                   std::chrono::milliseconds grace);

}  // namespace edge::probe_detail
