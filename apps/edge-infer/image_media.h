// Image input for the CLI (generate --mmproj P --image FILE) and make-model's random vision
// projectors (--arch clip-gemma3 | clip-mlp).
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

// A prompt with an image before the text: BOS + the family's begin marker, one placeholder
// per image row, the end marker, then the text (as mtmd lays it out). Gemma-3 rows are
// bidirectional.
struct ImagePrompt {
  std::vector<int32_t> tokens;
  std::vector<float> rows;  // [n_image, n_embd]
  std::vector<EmbeddingSplice> splices;
  int64_t n_image = 0;
  double encode_ms = 0;
};
Expected<ImagePrompt> build_image_prompt(const Model& lm, const std::string& mmproj,
                                         const std::string& image_path, const std::string& text);

// make-model flags mapped onto the projector: --dim the ViT width, --layers its blocks,
// --heads, --ffn its MLP (0: 3/2 dim), --proj-dim the LM width (0: dim), --image-size and
// --patch-size; gemma3 pools to 16 tokens at the default 64 / 4. class_embd: mlp with a
// CLIP class token and pre-LN (false: a SigLIP tower under the mlp projector).
int make_vision_projector(const RandomModelOptions& m, int proj_dim, int image_size, int patch_size,
                          bool class_embd, const std::string& type, const std::string& out);

}  // namespace edge::cli
