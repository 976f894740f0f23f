// Audio media -> rows of the language model's input embeddings: WAV bytes decoded to mono,
// resampled to 16 kHz, log-mel chunks of 30 s, the Whisper-style encoder and its projector.
// The caller splices the rows between the family's audio markers (docs/multimodal.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/arch/whisper_enc.h"

namespace edge {

inline constexpr double kDefaultMaxAudioSeconds = 300.0;

struct AudioEmbedding {
  int64_t n_tokens = 0;     // rows
  int64_t n_embd = 0;       // the projector's output width (the LM's n_embd)
  std::vector<float> rows;  // [n_tokens][n_embd]
  double seconds = 0.0;     // the clip's length
};

// Errors name the problem (the server returns them as 400s): invalid_format for bytes that
// are not a usable WAV, unsupported for sample formats we do not read, out_of_range for a
// clip longer than max_seconds (checked before resampling or encoding).
// The encoder's input: the WAV decoded to mono and resampled to 16 kHz; its length before
// resampling in *seconds.
Expected<std::vector<float>> wav_to_pcm16k(const uint8_t* wav, uint64_t size, double max_seconds,
                                           double* seconds);
Expected<AudioEmbedding> embed_wav(const WhisperEncExec& ex, const AudioEncoderModel& m,
                                   const uint8_t* wav, uint64_t size,
                                   double max_seconds = kDefaultMaxAudioSeconds);

// The text mtmd puts around a clip's rows: qwen2a "<|audio_bos|>" ... "<|audio_eos|>",
// ultravox "[BEGIN_AUDIO]" ... (nothing after).
struct AudioMarkers {
  std::string begin, end;
};
AudioMarkers audio_markers(AudioProjector p);

}  // namespace edge
