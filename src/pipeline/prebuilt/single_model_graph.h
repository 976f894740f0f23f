// The graph `serve -m MODEL` serves, built in code: one in-process lm stage "lm"
// (text.generate@1) with input.prompt -> lm.prompt, lm.text -> output.text and
// lm.tokens -> output.tokens.
#pragma once

#include <cstdint>
#include <string>

#include "pipeline/graph/graph.h"

namespace edge::pipeline {

PipelineSpec single_model_pipeline(const std::string& model_path, int32_t capacity,
                                   const EngineSettings& engine, int64_t reservation_bytes);

}  // namespace edge::pipeline
