// One-stage graphs around a media encoder, for a server that routes its image parts through
// the pipeline (serve --vision-placement stage|worker): input.image -> vision.image,
// vision.embeddings -> output.embeddings. The stage's reservation (the projector's weights
// plus one encode, plus the worker's own process when it runs in one) is then on the
// server's ledger beside the language model's, and the encoder can live in its own process.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "formats/image.h"
#include "pipeline/graph/executor.h"
#include "pipeline/graph/graph.h"

namespace edge::pipeline {

Expected<PipelineSpec> vision_pipeline(const std::string& projector_path, Placement placement);
// The same around audio.encode@1: input.pcm -> audio.pcm, audio.embeddings -> output.embeddings.
Expected<PipelineSpec> audio_pipeline(const std::string& projector_path, Placement placement);

// The rows of one decoded image through such a graph: f32 [rows][n_embd] (row-major), the
// row count in *rows. The graph's error otherwise (a dead worker: unavailable).
Expected<std::vector<float>> encode_on_graph(PipelineRuntime& rt, const RgbImage& img, int64_t* rows);
// The rows of a 16 kHz mono clip through an audio graph, likewise.
Expected<std::vector<float>> encode_on_graph(PipelineRuntime& rt, const std::vector<float>& pcm16k,
                                             int64_t* rows);

}  // namespace edge::pipeline
