// Media input for the CLI (generate --mmproj P --audio FILE | --image FILE) and
// make-model's random projectors (--arch clip-ultravox | clip-qwen2a | clip-gemma3 |
// clip-mlp). audio_media.cpp holds the audio side, image_media.cpp the image side.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "model/forward.h"

namespace edge {
class Model;
struct RandomModelOptions;
}  // namespace edge

namespace edge::cli {

// A prompt with encoded media before the text: BOS + the family's begin marker, one
// placeholder per media row, the end marker, then the text (as mtmd lays it out).
struct SplicedPrompt {
  std::vector<int32_t> tokens;
  std::vector<float> rows;  // [n_rows, n_embd]: the encoder's output, projected
  std::vector<EmbeddingSplice> splices;
  int64_t n_rows = 0;
  double encode_ms = 0;
};

// A WAV clip through the Whisper-style encoder and its projector (rows attend causally).
Expected<SplicedPrompt> build_audio_prompt(const Model& lm, const std::string& mmproj,
                                           const std::string& wav_path, const std::string& text);
// An image through the ViT/SigLIP tower and its projector (Gemma-3 rows are bidirectional).
Expected<SplicedPrompt> build_image_prompt(const Model& lm, const std::string& mmproj,
                                           const std::string& image_path, const std::string& text);

// make-model flags mapped onto an audio projector: --dim the encoder width, --layers its
// blocks, --heads, --ffn its MLP (0: 4 * dim), --proj-dim the LM width (0: dim).
int make_audio_projector(const RandomModelOptions& m, int proj_dim, const std::string& out);

// make-model flags mapped onto a vision projector: --dim the ViT width, --layers its blocks,
// --heads, --ffn its MLP (0: 3/2 dim), --proj-dim the LM width (0: dim), --image-size and
// --patch-size; gemma3 pools to 16 tokens at the default 64 / 4. class_embd: mlp with a
// CLIP class token and pre-LN (false: a SigLIP tower under the mlp projector).
int make_vision_projector(const RandomModelOptions& m, int proj_dim, int image_size, int patch_size,
                          bool class_embd, const std::string& type, const std::string& out);

}  // namespace edge::cli
