// Audio input for the CLI (generate --mmproj P --audio FILE) and make-model's random audio
// projectors (--arch clip-ultravox | clip-qwen2a).
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

// A prompt with a clip spliced before the text: BOS + the family's begin marker, one
// placeholder per audio row, the end marker, then the text (as mtmd lays it out).
struct AudioPrompt {
  std::vector<int32_t> tokens;
  std::vector<float> rows;  // [n_audio, n_embd]
  std::vector<EmbeddingSplice> splices;
  int64_t n_audio = 0;
  double encode_ms = 0;
};
Expected<AudioPrompt> build_audio_prompt(const Model& lm, const std::string& mmproj,
                                         const std::string& wav_path, const std::string& text);

// make-model flags mapped onto the projector: --dim the encoder width, --layers its
// blocks, --heads, --ffn its MLP (0: 4 * dim), --proj-dim the LM width (0: dim).
int make_audio_projector(const RandomModelOptions& m, int proj_dim, const std::string& out);

}  // namespace edge::cli
