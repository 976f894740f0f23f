// The Engine API over a pipeline whose text stage runs in another process (a worker, an
// external OpenAI-compatible server): `serve --pipeline` drives every graph through the
// same Engine calls, so the server has one code path. Requests become graph requests
// (prompt token ids to input.prompt, the client's generation settings to the text
// stage); output.text (and output.tokens where routed) become the stream's chunks.
//
// The tokenizer and configuration come from the text stage's model file (metadata only:
// no weights are loaded here). Not available across a process boundary: logprobs (refused
// with the reason) and prefix-cache statistics (the other process keeps its own).
#pragma once

#include <memory>

#include "edge/engine.h"
#include "pipeline/graph/executor.h"

namespace edge::pipeline {

// Fails when the graph has no stage feeding output.text, or its model cannot be read.
Expected<std::unique_ptr<Engine>> make_graph_engine(PipelineRuntime& graph);

}  // namespace edge::pipeline
