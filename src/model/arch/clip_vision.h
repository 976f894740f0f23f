// Vision encoder of a projector file in llama.cpp's `clip` conventions (an "mmproj" GGUF:
// general.architecture "clip", clip.has_vision_encoder, clip.vision.* keys, v.* encoder
// and mm.* projector tensors): a SigLIP/CLIP ViT with one of two projectors.
//
// Graph for one image, pixels [3][S][S] (normalised; S = image_size, P = patch_size,
// n = (S/P)^2 patches, E = n_embd):
//   patches: conv P x P stride P, 3 -> E, as one matmul over im2col rows [n][3 P P] + bias
//   [CLS first when v.class_embd exists] + v.position_embd rows [0, n(+1))
//   [pre_ln]  (CLIP)
//   L pre-LN blocks: x += out(attn(LN1(x)))   (bidirectional, all biased)
//                    x += down(act(up(LN2(x))))  act: GELU (clip.use_gelu) or quick GELU
//     L = clip.vision.feature_layer when the file names one (hidden state index, 0 = the
//     embeddings), else every stored block: llama.cpp's LLaVA converter already drops the
//     blocks after the feature layer (-2), so block_count is what the projector was trained
//     on. (mtmd's llava graph runs one block fewer, and puts CLS last: upstream llama.cpp
//     bugs #25817 / #25814; we follow the models, CLS first with position 0.)
//   [post_ln]
//   gemma3: [n][E] as a (S/P) x (S/P) grid, average pool k x k (k = projector scale factor)
//           -> [(S/P/k)^2][E], RMS norm (eps) * mm.soft_emb_norm, x . mm.input_projection
//           ([E, D], stored transposed as mtmd reads it) -> [256][D] at Gemma-3's shape
//   mlp:    drop CLS, mm.0 [D1, E] + bias, GELU, mm.2 [D, D1] + bias  (LLaVA)
// Output: one embedding of the LM's width D per image token.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/gguf.h"
#include "formats/image.h"
#include "model/packed_weights.h"
#include "model/tensor_schema.h"

namespace edge {

struct KernelTable;
class ThreadPool;

enum class VisionProjector { kGemma3, kMlp };

// The projector table: one row per type, what files call it and how the language model's
// prompt frames its image rows (mtmd's markers).
struct VisionProjectorInfo {
  VisionProjector projector;
  const char* name;         // clip.projector_type: "gemma3" | "mlp"
  const char* image_begin;  // text before the rows: Gemma-3 "<start_of_image>"; "" for none
  const char* image_end;    // text after them: Gemma-3 "<end_of_image>"
  bool bidirectional;       // the rows attend to each other both ways in the LM (Gemma-3)
};
const VisionProjectorInfo& vision_projector_info(VisionProjector p);
// The row named `name`; null for a name no row has.
const VisionProjectorInfo* find_vision_projector(const std::string& name);
const char* vision_projector_name(VisionProjector p);  // vision_projector_info(p).name

struct ClipVisionHparams {
  VisionProjector projector = VisionProjector::kGemma3;
  int64_t image_size = 0;     // S (SigLIP-400M in Gemma-3: 896)
  int64_t patch_size = 0;     // P (14)
  int64_t n_embd = 0;         // E (1152)
  int64_t n_ff = 0;           // (4304)
  int64_t n_head = 0;         // (16)
  int64_t n_layer = 0;        // (27) stored blocks
  int64_t feature_layer = 0;  // blocks run: clip.vision.feature_layer; 0: all n_layer
  int64_t n_out = 0;          // D: the LM's embedding width, clip.vision.projection_dim
  int64_t n_mm_ff = 0;        // mlp: mm.0 rows
  int64_t pool = 1;           // gemma3: clip.vision.projector.scale_factor (4)
  float eps = 1e-6f;          // clip.vision.attention.layer_norm_epsilon
  bool use_gelu = false;      // clip.use_gelu (else quick GELU)
  bool class_embd = false;    // v.class_embd present (CLIP)
  bool pre_ln = false, post_ln = false;
  float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};

  int64_t head_dim() const { return n_embd / n_head; }
  int64_t blocks_run() const { return feature_layer > 0 ? feature_layer : n_layer; }
  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t n_patches() const { return patches_per_side() * patches_per_side(); }
  // Image tokens (rows) one image gives.
  int64_t n_tokens() const;
  // Preprocessing as mtmd does it: a non-square image is letterboxed into S x S
  // (formats/image.h letterbox_image) with the bilinear filter for both projectors (Hugging
  // Face's Gemma-3 processor stretches instead, and CLIP's resizes bicubic); gemma3 pads
  // black, mlp with LLaVA's background int(mean * 255), (122, 116, 104) for CLIP's mean.
  ResizeFilter filter() const { return ResizeFilter::kBilinear; }
  std::array<uint8_t, 3> pad_colour() const;
};

// An RGB image of any size -> the pixels the encoder reads, [3][S][S] (letterboxed,
// resized, normalised with the file's mean/std).
std::vector<float> clip_vision_pixels(const ClipVisionHparams& h, const RgbImage& img);

// Reads and validates the hparams; the error names the key. Optional parts (class
// embedding, pre/post LN, mlp width) come from which tensors the file has.
Expected<ClipVisionHparams> read_clip_vision_hparams(const GgufFile& f);
// Writes the keys as llama.cpp's converter does for a vision-only mmproj.
void write_clip_vision_hparams(const ClipVisionHparams& h, const std::string& name, GgufWriter& w);
// Every tensor with its row-major shape (GGUF ne[] reversed).
TensorSchema clip_vision_schema(const ClipVisionHparams& h);

// Matrices are views (F32/F16/BF16 in the mapping, or packed); vectors are F32 copies.
struct ClipVisionWeights {
  struct Layer {
    std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;  // [E]
    TensorView q_w, k_w, v_w, o_w;                  // [E, E]
    std::vector<float> q_b, k_b, v_b, o_b;          // [E]
    TensorView up_w;                                // [n_ff, E]
    std::vector<float> up_b;                        // [n_ff]
    TensorView down_w;                              // [E, n_ff]
    std::vector<float> down_b;                      // [E]
  };
  TensorView patch_w;                                           // [E, 3 P P]  (file: [E, 3, P, P])
  std::vector<float> patch_b;                                   // [E]
  std::vector<float> pos;                                       // [n (+1), E]
  std::vector<float> cls;                                       // [E] or empty
  std::vector<float> pre_ln_w, pre_ln_b, post_ln_w, post_ln_b;  // [E] or empty
  std::vector<Layer> layers;
  // gemma3
  std::vector<float> soft_norm;  // [E]
  std::vector<float> in_proj_t;  // [D, E]: mm.input_projection transposed at load (F32)
  TensorView in_proj;            // view of in_proj_t
  // mlp
  TensorView mm0_w, mm2_w;  // [D1, E], [D, D1]
  std::vector<float> mm0_b, mm2_b;
};

Expected<ClipVisionWeights> bind_clip_vision_weights(const ClipVisionHparams& h,
                                                     const TensorSet& tensors);

struct ClipVisionExec {
  const KernelTable& kernels;
  ThreadPool& pool;
};

// pixels [3][S][S] (normalised) -> [n_tokens()][D].
std::vector<float> clip_vision_forward(const ClipVisionExec& ex, const ClipVisionHparams& h,
                                       const ClipVisionWeights& w, const float* pixels);

// An opened vision projector file: mapping, prepared (repacked) tensors, hparams, weights.
struct VisionEncoderModel {
  GgufFile file;
  PreparedTensors prepared;
  ClipVisionHparams hparams;
  ClipVisionWeights weights;
  uint64_t weight_bytes = 0;  // what the encoder's tensors occupy (memory plan)
  // Activations of one image: the largest live buffers of clip_vision_forward.
  uint64_t activation_bytes() const;
};
// Opens, checks hparams and schema (naming a missing or mis-shaped tensor), binds.
Expected<std::unique_ptr<VisionEncoderModel>> load_vision_encoder(const std::string& path,
                                                                  int threads);
bool gguf_has_vision_encoder(const GgufFile& f);

// What serving a vision projector file costs, from its header (nothing is loaded): plain
// weights stay file-backed, block-quantised ones are repacked into anonymous memory (about
// their size), plus one encode's activations (VisionEncoderModel::activation_bytes).
struct VisionFootprint {
  uint64_t weights_mapped = 0, weights_anon = 0, activations = 0;
};
Expected<VisionFootprint> vision_encoder_footprint(const std::string& path);

}  // namespace edge
