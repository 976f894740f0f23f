// The speech.codes@1 and @2 stage on our engine: text (and with @2 an optional voice, an
// OuteTTS speaker profile as JSON, laid out before the text as its reference) in; audio
// codes out as they are generated (events on port "codes", WavTokenizer code indices). The model is
// an OuteTTS speech-code LM (a Qwen2/Llama LM whose vocabulary holds <|0|>..<|4095|>): the stage
// builds the OuteTTS prompt of the text (outetts_prompt.h) and guides the engine so that it emits
// only the layout that prompt asks for (outetts_guide.h); the code tokens are passed on as
// code = id - id(<|0|>). In this process (the guide does not cross a process boundary).
#pragma once

#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

// Kind "speech_codes": speech.codes@1 and @2, in process only; reservation "plan" is the
// memory plan of its model.
extern const StageKind kSpeechCodesKind;

}  // namespace edge::pipeline
