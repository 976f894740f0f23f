// The graph `serve -m MODEL` serves (single_model_graph.h).
#include "pipeline/prebuilt/single_model_graph.h"

#include "pipeline/stages/lm_stage.h"

namespace edge::pipeline {

PipelineSpec single_model_pipeline(const std::string& model_path, int32_t capacity,
                                   const EngineSettings& engine, int64_t reservation_bytes) {
  PipelineSpec p;
  p.name = "single-model";
  StageSpec s;
  s.name = "lm";
  s.kind = &kLmKind;
  s.contract = ContractRef{"text.generate", 1};
  s.artifacts.push_back(Artifact{"model", model_path, ""});
  s.capacity = capacity;
  s.reservation_bytes = reservation_bytes;
  s.engine = engine;
  p.stages.push_back(std::move(s));
  p.routes = {Route{{"input", "prompt"}, {"lm", "prompt"}},
              Route{{"lm", "text"}, {"output", "text"}},
              Route{{"lm", "tokens"}, {"output", "tokens"}}};
  return p;
}

}  // namespace edge::pipeline
