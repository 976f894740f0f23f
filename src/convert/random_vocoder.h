// Writes a WavTokenizer decoder ("wavtokenizer-dec") with deterministic random weights in
// llama.cpp's GGUF layout (tensor names, shapes, hparams), so tests and demos have a
// vocoder file without a download. Defaults are small except the head: n_fft 1280 and
// hop 320 are what llama.cpp's tts example assumes, so the same file runs there too.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "formats/tensor.h"

namespace edge {

struct RandomVocoderOptions {
  int32_t n_vocab = 64;     // codes (WavTokenizer-75: 4096)
  int32_t n_features = 16;  // code embedding width (512)
  int32_t n_embd = 32;      // pos-net / ConvNeXt width (768)
  int32_t n_ff = 48;        // ConvNeXt MLP width (2304)
  int32_t n_convnext = 2;   // ConvNeXt blocks (12)
  int32_t n_groups = 4;     // group norm groups (32)
  int32_t n_fft = 1280;     // head width n_fft + 2
  int32_t hop = 320;
  DType dtype = DType::F32;  // weights with more than one element per row: F32 | F16 | BF16
  uint64_t seed = 1;
};

Status write_random_vocoder(const RandomVocoderOptions& o, const std::string& path);

}  // namespace edge
