// A stage kind (the `kind:` of a pipeline file) as one entry of a table: the contract it
// implements, where it can run and how it starts there, how its "plan" reservation is
// computed and whether it starts on part of its input. Validation, the plan, the executor
// and the worker loop over the table (stage_kinds()) and never name a kind.
//
// Each kind's entry lives in its stage's file (stages/*.cpp); the table is
// stages/stage_kinds.cpp, the one place that lists them. graph/ does not include stages/:
// the table is linked in, declared here and defined there. Adding a kind is its stage file
// plus one row there.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/graph/executor.h"
#include "pipeline/graph/graph.h"
#include "pipeline/graph/plan.h"

namespace edge::pipeline {

// What a kind's "plan" reservation comes to, and what it was computed from (the plan
// shows it, e.g. "memory plan of lm.gguf at ctx 4096 x 4 seqs").
struct PlannedBytes {
  int64_t bytes = 0;
  std::string source;
};

// Starts a stage of ours from its model artifact (`model_path`: resolved).
using StartStageFn = Expected<std::unique_ptr<StageRunner>> (*)(const std::string& model_path,
                                                                const StageSpec& s,
                                                                const PipelineRunOptions& o);
// Starts a stage another runtime serves, from the pipeline's artifacts (server, model).
using StartExternalFn = Expected<std::unique_ptr<StageRunner>> (*)(const PipelineSpec& p,
                                                                   const StageSpec& s,
                                                                   const PipelineRunOptions& o);
// The bytes a stage placed in process reserves for its model artifact (`model` as the file
// names it, `model_path` resolved). A worker's process code is added by the plan.
using PlanReservationFn = Expected<PlannedBytes> (*)(const StageSpec& s, const Artifact& model,
                                                     const std::string& model_path,
                                                     const PipelinePlanOptions& o);

struct StageKind {
  const char* name = "";  // the file key, e.g. "lm"; also in plans and errors
  // The contract it implements, by name (any version this build knows); null: any contract
  // (another runtime serves it).
  const char* contract = nullptr;
  // Placement in_process: starts it in this process (null: the kind cannot run here). A
  // worker process runs this too.
  StartStageFn start = nullptr;
  // Placement worker: starts it in a worker process of ours (worker/worker.h
  // start_in_worker); null: the kind cannot run in a worker.
  StartStageFn start_in_worker = nullptr;
  // Placement external: starts it on another runtime; non-null only for a kind that is
  // served there, and such a kind is placed external and names its backend.
  StartExternalFn start_external = nullptr;
  // Reservation "plan" (the file does not declare bytes); null: the stage must declare them.
  PlanReservationFn plan_reservation = nullptr;
  // It starts on the first chunk of its streamed inputs (a vocoder on its first codes), so
  // a worker receives them as they arrive instead of whole.
  bool streams_input = false;
  // The versions of `contract` it implements (a new version of a contract is a new shape of
  // its ports: speech.codes@3 carries frames of 16 codebooks, which @1/@2 kinds cannot make).
  int32_t min_version = 1, max_version = 1 << 20;

  bool implements(const ContractRef& ref) const;
  bool runs_in(Placement p) const;
};

// The kinds of this build, in the order errors list them (defined by stages/stage_kinds.cpp).
std::span<const StageKind* const> stage_kinds();
// The kind whose file key is `name`; null when there is none.
const StageKind* find_stage_kind(const std::string& name);
// "lm, vision_encoder, ...": every kind's file key.
std::string stage_kind_names();
// The kind a worker process runs for `ref` (one that runs in a worker and implements that
// version); null when there is none.
const StageKind* worker_stage_kind(const ContractRef& ref);
// Where the kinds run, for an error refusing one: e.g. "lm and vocoder stages in process or
// in a worker, speech_codes stages in process, and external stages placed external".
std::string stage_kind_placements();
// "a, b and c".
std::string join_with_and(const std::vector<std::string>& items);

}  // namespace edge::pipeline
