// The stage-kind table: one row per kind a pipeline file may name (`kind:`), in the order
// errors list them. Each row's entry lives in its stage's file, beside the code it starts;
// everything else (validation, plan, executor, worker) loops over this table.
#include "pipeline/stages/audio_stage.h"
#include "pipeline/stages/external_stage.h"
#include "pipeline/stages/lm_stage.h"
#include "pipeline/stages/qwen3_tts_codec_stage.h"
#include "pipeline/stages/qwen3_tts_talker_stage.h"
#include "pipeline/stages/speech_codes_stage.h"
#include "pipeline/stages/vision_stage.h"
#include "pipeline/stages/vocoder_stage.h"

namespace edge::pipeline {

namespace {

constinit const StageKind* const kStageKinds[] = {
    &kLmKind,             // lm_stage.cpp
    &kVisionEncoderKind,  // vision_stage.cpp
    &kAudioEncoderKind,   // audio_stage.cpp
    &kSpeechCodesKind,    // speech_codes_stage.cpp
    &kVocoderKind,        // vocoder_stage.cpp
    &kQwen3TtsTalkerKind, // qwen3_tts_talker_stage.cpp
    &kQwen3TtsCodecKind,  // qwen3_tts_codec_stage.cpp
    &kExternalKind,       // external_stage.cpp
};

}  // namespace

std::span<const StageKind* const> stage_kinds() {
  return kStageKinds;
}

}  // namespace edge::pipeline
