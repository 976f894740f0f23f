// The vision.encode@1 stage on our SigLIP/CLIP encoder (model/arch/clip_vision.h): an RGB
// image in (port "image", u8 [height][width][3]), LM input embeddings out (port
// "embeddings", f32 [rows][n_embd], one terminal event): resized to the projector's input
// with its filter, normalised with the file's mean/std, encoded. In process; its memory is
// reserved on the pipeline's ledger from the projector's footprint (weights + one encode).
#pragma once

#include <memory>
#include <string>

#include "pipeline/graph/executor.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

// Kind "vision_encoder": vision.encode@1, in process or in a worker; reservation "plan" is its
// projector's weights and one encode.
extern const StageKind kVisionEncoderKind;

// Bytes to reserve for a vision stage: the projector's weights and one encode's activations.
Expected<int64_t> vision_stage_reservation(const std::string& projector_path);

}  // namespace edge::pipeline
