// The audio.encode@1 stage on our Whisper-style encoder and its projector
// (model/arch/whisper_enc.h): 16 kHz mono PCM in (port "pcm", f32 [n_samples] in [-1, 1]),
// LM input embeddings out (port "embeddings", f32 [rows][n_embd], one terminal event). In
// process or in a worker; its reservation is the projector's footprint (weights + one
// encode of 30 s).
#pragma once

#include <memory>
#include <string>

#include "pipeline/graph/executor.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

// Kind "audio_encoder": audio.encode@1, in process or in a worker; reservation "plan" is its
// projector's weights and one encode.
extern const StageKind kAudioEncoderKind;

// Bytes to reserve for an audio stage: the projector's weights and one encode's activations.
Expected<int64_t> audio_stage_reservation(const std::string& projector_path);

}  // namespace edge::pipeline
