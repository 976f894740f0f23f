// The audio.pcm@2 stage kind on the Qwen3-TTS 12 Hz codec decoder (qwen3_tts_codec_stage.cpp):
// kind "qwen3_tts_codec", in process or in a worker; the stage declares its reservation.
#pragma once

#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

extern const StageKind kQwen3TtsCodecKind;

}  // namespace edge::pipeline
