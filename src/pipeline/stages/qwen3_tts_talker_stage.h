// The speech.codes@3 stage kind on the Qwen3-TTS talker and code predictor
// (qwen3_tts_talker_stage.cpp): kind "qwen3_tts_talker", in process.
#pragma once

#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

extern const StageKind kQwen3TtsTalkerKind;

}  // namespace edge::pipeline
