// A pipeline stage in its own process: `edge-infer worker --fd N` (spawned by the
// pipeline, never through a shell) serves one stage over the socket it inherited as fd N
// (protocol: worker_protocol.h), and WorkerStageRunner is the pipeline's side of it.
//
// Lifecycle: spawn -> hello/ready handshake (contract version and artifact hash checked by
// the worker before it loads anything) -> requests -> retire (finish, exit 0). A worker
// that dies mid-request ends that request with an explicit error as soon as its socket
// closes; the next request starts a new generation. The pipeline owns the process by
// (pid, start time), reaps it, and never signals a process it did not spawn.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "pipeline/graph/executor.h"

namespace edge::pipeline {

// The worker's main loop on `fd`; returns the process exit code.
int run_worker(int fd);

struct WorkerOptions {
  std::string binary;  // the edge-infer executable (default: /proc/self/exe)
  PipelineRunOptions run;
};

// The pipeline's side: spawns the worker (again, as generation + 1, after it died).
Expected<std::unique_ptr<StageRunner>> start_worker_stage(const std::string& model_path,
                                                          const StageSpec& s,
                                                          const WorkerOptions& o);
// start_worker_stage with the run's worker binary: a stage kind's start_in_worker
// (stage_kind.h). In the worker, the kind that runs the stage is chosen by its contract.
Expected<std::unique_ptr<StageRunner>> start_in_worker(const std::string& model_path,
                                                       const StageSpec& s,
                                                       const PipelineRunOptions& o);

}  // namespace edge::pipeline
