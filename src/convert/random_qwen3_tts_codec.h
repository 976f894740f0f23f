// Writes a Qwen3-TTS 12 Hz codec ("Qwen3-TTS-Tokenizer-12Hz") decoder with deterministic
// random weights as its Hugging Face directory: config.json and model.safetensors under the
// published tensor names and shapes. Decoder tensors only: the encoder (audio -> codes) is
// not written, so Qwen's Python loader would not take the directory; ours does.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/arch/qwen3_tts_codec.h"

namespace edge {

struct RandomQwen3TtsCodecOptions {
  Qwen3TtsCodecHparams hp;   // defaults: the published sizes (~114M parameters)
  DType dtype = DType::F32;  // matrices and kernels: F32 | F16 | BF16 (vectors stay F32)
  uint64_t seed = 1;
};

// Small sizes for tests and demos, with the published layout (16 codebooks, 8-5-4-3 and 2-2
// upsampling: 1920 samples a frame) and a short attention window so a few frames exercise it.
Qwen3TtsCodecHparams small_qwen3_tts_codec_hparams();

Status write_random_qwen3_tts_codec(const RandomQwen3TtsCodecOptions& o, const std::string& dir);

}  // namespace edge
