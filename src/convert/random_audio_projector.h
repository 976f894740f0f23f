// Writes an audio projector ("mmproj" in llama.cpp's clip conventions: a Whisper-style
// encoder plus an ultravox or qwen2a projector) with deterministic random weights, so the
// tests and the demo need no download. The same file loads in llama.cpp's mtmd.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/arch/whisper_enc.h"

namespace edge {

struct RandomAudioProjectorOptions {
  AudioProjector projector = AudioProjector::kUltravox;
  int32_t n_embd = 64;   // encoder width (Whisper-base 512)
  int32_t n_ff = 128;    // block MLP (2048)
  int32_t n_head = 4;    // (8)
  int32_t n_layer = 2;   // (6)
  int32_t n_mel = 128;   // llama.cpp's mtmd takes 128 only
  int32_t n_ctx = 1500;  // positions: 30 s after the stride-2 convolution
  int32_t n_out = 64;    // the LM's embedding width
  // Ultravox's stack factor (the real model: 8). 4 by default: ik_llama.cpp's mtmd counts
  // ceil(3000 / k) / 2 tokens for a 30 s chunk while its graph makes ceil(1500 / k) rows,
  // and aborts where they differ (k = 8: 187 vs 188); with 4 both are 375.
  int32_t stack = 4;
  int32_t n_mm_ff = 128;     // ultravox projector MLP width (even)
  DType dtype = DType::F32;  // matrices and kernels: F32 | F16 | BF16 (vectors stay F32)
  uint64_t seed = 1;
};

Status write_random_audio_projector(const RandomAudioProjectorOptions& o, const std::string& path);

}  // namespace edge
