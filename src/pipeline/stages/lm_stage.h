// The text.generate@1 stage on our engine: prompt tokens (or text, tokenised with the
// model's tokenizer) in; generated tokens and text out, one event per engine chunk on each
// port. Runs in the pipeline's process or inside an `edge-infer worker`.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "pipeline/graph/executor.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

// Kind "lm": text.generate@1, in process or in a worker; reservation "plan" is the memory
// plan of its model.
extern const StageKind kLmKind;

// The prompt of a text.generate@1 request; refused naming the stage when it has none. Its
// optional `media` input (rows from an encoder stage) is the stage's to splice.
Expected<const PortValue*> find_prompt(const std::string& stage,
                                       const std::map<std::string, PortValue>& inputs);

}  // namespace edge::pipeline
