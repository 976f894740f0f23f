// The audio.pcm@1 stage on our vocoder (model/vocoder.h, WavTokenizer decoder): audio
// codes in as they arrive, 24 kHz mono PCM out as it becomes final (events on port "pcm",
// samples in [-1, 1]; the API turns them into s16le). Exact mode (window 0) emits the
// utterance at the end; windowed mode (stage keys window / context / lookahead, in codes)
// emits a window as soon as its lookahead has arrived.
#pragma once

#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

// Kind "vocoder": audio.pcm@1, in process or in a worker, starting on its first codes; its
// reservation is declared.
extern const StageKind kVocoderKind;

}  // namespace edge::pipeline
