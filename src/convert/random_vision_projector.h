// Writes a vision projector ("mmproj" in llama.cpp's clip conventions: a SigLIP/CLIP ViT
// plus a gemma3 or mlp projector) with deterministic random weights, so the tests and the
// demo need no download.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/arch/clip_vision.h"

namespace edge {

struct RandomVisionProjectorOptions {
  VisionProjector projector = VisionProjector::kGemma3;
  int32_t image_size = 64;    // SigLIP-400M in Gemma-3: 896
  int32_t patch_size = 4;     // 14
  int32_t n_embd = 64;        // 1152
  int32_t n_ff = 96;          // 4304 (!= n_embd: mtmd guesses swapped up/down from that)
  int32_t n_head = 4;         // 16
  int32_t n_layer = 2;        // 27
  int32_t n_out = 64;         // the LM's embedding width
  int32_t pool = 4;           // gemma3: 16x16 patches -> 4x4 = 16 tokens
  int32_t n_mm_ff = 96;       // mlp: mm.0 rows
  bool class_embd = false;    // mlp: a CLIP class token (and pre_ln)
  int32_t feature_layer = 0;  // mlp: clip.vision.feature_layer (0: n_layer, all blocks)
  DType dtype = DType::F32;   // matrices: F32 | F16 | BF16 | Q8_0 (vectors stay F32; the
                              // patch kernel F16 for Q8_0, as llama.cpp's converter keeps it)
  uint64_t seed = 1;
};

Status write_random_vision_projector(const RandomVisionProjectorOptions& o,
                                     const std::string& path);

}  // namespace edge
