// What the stages on our engine share (lm: text.generate@1, speech_codes: speech.codes@1):
// the model and an engine sized by the stage, each request in a session of its own and
// tracked by epoch so that cancel() reaches it (also when it comes before the submit), and
// the stage's resident bytes as its own ledger; and their "plan" reservation.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "edge/engine.h"
#include "model/model.h"
#include "pipeline/graph/executor.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

// Reservation "plan" of a stage on our engine: the memory plan of its model at the stage's
// context (else the run's) for its capacity (else o.max_seqs) in sequences.
Expected<PlannedBytes> engine_stage_reservation(const StageSpec& s, const Artifact& model,
                                                const std::string& model_path,
                                                const PipelinePlanOptions& o);

class EngineStage : public StageRunner {
 public:
  void cancel(uint64_t epoch) override;
  // Anonymous weights, resident pages of the mapped weights (mincore), tokenizer, KV cache.
  int64_t resident_bytes() const override;

 protected:
  explicit EngineStage(std::string name) : name_(std::move(name)) {}
  // Loads the model and starts its engine as the stage and the run say.
  Status load(const std::string& model_path, const StageSpec& s, const PipelineRunOptions& o);
  // Submits `req` in a session of its own and hands each chunk of its stream to
  // `on_chunk` (a stage turns chunks into its port's events) while cancel() can reach it,
  // until the terminal chunk: OK when the request finished, its error otherwise. The
  // session is closed whatever happened.
  Status submit_and_drain(uint64_t epoch, GenerateRequest req,
                          const std::function<void(const StreamChunk&)>& on_chunk);

  const std::string name_;
  std::unique_ptr<Model> model_;  // declared before engine_: destroyed after it
  std::unique_ptr<Engine> engine_;

 private:
  Status drain(const RequestHandle& h, const std::function<void(const StreamChunk&)>& on_chunk);
  void track(uint64_t epoch, const RequestHandle& h);
  void untrack(uint64_t epoch);

  std::mutex mu_;
  std::map<uint64_t, RequestHandle> running_;
  std::set<uint64_t> cancelled_early_;  // cancelled before run() submitted them
};

}  // namespace edge::pipeline
