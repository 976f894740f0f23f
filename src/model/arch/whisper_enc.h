// Whisper-style audio encoder with its projector into a language model, in llama.cpp's
// `clip` file conventions (an "mmproj" GGUF: general.architecture "clip",
// clip.has_audio_encoder, clip.audio.* keys, a.* encoder and mm.a.* projector tensors).
// Projector types: "ultravox" (stack k frames, RMS norm, linear, SwiGLU, RMS norm, linear)
// and "qwen2a" (average-pool pairs of frames before the final norm, then linear + bias).
//
// Graph for one log-mel chunk [n_mel][T] (T even, T/2 <= n_ctx; E = n_embd):
//   conv1d k3 s1 p1 n_mel->E, GELU(erf) -> conv1d k3 s2 p1 E->E, GELU(erf): [T/2][E]
//   + learned positions a.position_embd[0, T/2)
//   n_layer pre-LN blocks: x += attn(LN1(x)) (bidirectional, q/v/out biased, k not);
//                          x += down(GELU(erf)(up(LN2(x))))
//   qwen2a: average pool 2 -> [T/4][E]
//   LN(post_ln)
//   ultravox: stack k rows -> [ceil(T/2 / k)][k E] (zero-padded), RMS norm (eps 1e-6) *
//             norm_pre, mlp.1 [H, kE], SwiGLU with SiLU on the second half -> [H/2],
//             RMS norm * norm_mid, mlp.2 [P, H/2]
//   qwen2a:   fc [P, E] + bias
// Output: one embedding of the LM's width P per audio token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/gguf.h"
#include "model/packed_weights.h"
#include "model/tensor_schema.h"

namespace edge {

struct KernelTable;
class ThreadPool;
struct LogMel;

enum class AudioProjector { kUltravox, kQwen2a };
const char* audio_projector_name(AudioProjector p);  // "ultravox" | "qwen2a"

struct WhisperEncHparams {
  AudioProjector projector = AudioProjector::kUltravox;
  int64_t n_embd = 0;   // E (Whisper-base 512)
  int64_t n_ff = 0;     // block MLP width (2048)
  int64_t n_head = 0;   // (8)
  int64_t n_layer = 0;  // (6)
  int64_t n_mel = 0;    // mel bins: clip.audio.num_mel_bins (80 or 128)
  int64_t n_ctx = 0;    // learned positions: a.position_embd rows (1500 = 30 s)
  int64_t n_out = 0;    // P: the LM's embedding width, clip.audio.projection_dim
  int64_t stack = 1;    // ultravox: clip.audio.projector.stack_factor (8)
  int64_t n_mm_ff = 0;  // ultravox: mm.a.mlp.1 rows H (even; SwiGLU halves it)
  float eps = 1e-5f;    // clip.audio.attention.layer_norm_epsilon

  int64_t head_dim() const { return n_embd / n_head; }
  // Audio tokens (rows of embeddings) for a chunk of T mel frames.
  int64_t tokens_for_frames(int64_t t) const;
};

// Reads and validates the hparams; the error names the key. Tensor-derived sizes (n_ctx,
// n_mm_ff) come from the file's tensors, named when missing.
Expected<WhisperEncHparams> read_whisper_enc_hparams(const GgufFile& f);
// Writes the keys as llama.cpp's converter does for an audio-only mmproj.
void write_whisper_enc_hparams(const WhisperEncHparams& h, const std::string& name, GgufWriter& w);
// Every tensor with its row-major shape (GGUF ne[] reversed).
TensorSchema whisper_enc_schema(const WhisperEncHparams& h);

// Matrices (convolution kernels as [c_out, c_in * 3], the order of an im2col row) are views
// into the mapped file in its own type (F32/F16/BF16) or packed; vectors are F32 copies.
struct WhisperEncWeights {
  struct Layer {
    std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;  // [E]
    TensorView q_w, k_w, v_w, o_w;                  // [E, E]
    std::vector<float> q_b, v_b, o_b;               // [E] (k has no bias)
    TensorView up_w;                                // [n_ff, E]
    std::vector<float> up_b;                        // [n_ff]
    TensorView down_w;                              // [E, n_ff]
    std::vector<float> down_b;                      // [E]
  };
  TensorView conv1_w;          // [E, n_mel * 3]  (file: [E, n_mel, 3])
  std::vector<float> conv1_b;  // [E]             (file: [E, 1])
  TensorView conv2_w;          // [E, E * 3]
  std::vector<float> conv2_b;  // [E]
  std::vector<float> pos;      // [n_ctx, E]
  std::vector<Layer> layers;
  std::vector<float> post_ln_w, post_ln_b;  // [E]
  // ultravox
  std::vector<float> norm_pre;  // [stack * E]
  TensorView mlp1_w;            // [H, stack * E]
  std::vector<float> norm_mid;  // [H / 2]
  TensorView mlp2_w;            // [P, H / 2]
  // qwen2a
  TensorView fc_w;          // [P, E]
  std::vector<float> fc_b;  // [P]
};

// The set must already have passed the schema check; its memory must outlive the weights.
Expected<WhisperEncWeights> bind_whisper_enc_weights(const WhisperEncHparams& h,
                                                     const TensorSet& tensors);

struct WhisperEncExec {
  const KernelTable& kernels;
  ThreadPool& pool;
};

// mel [n_mel][t] (frames contiguous; t even, t / 2 <= n_ctx: CHECKed, the caller validates)
// -> [tokens_for_frames(t)][P].
std::vector<float> whisper_enc_forward(const WhisperEncExec& ex, const WhisperEncHparams& h,
                                       const WhisperEncWeights& w, const float* mel, int64_t t);

// An opened audio projector file: the mapping, its hparams and bound weights.
struct AudioEncoderModel {
  GgufFile file;
  PreparedTensors prepared;  // the file's views; GGUF block types (Q8_0, ...) repacked
  WhisperEncHparams hparams;
  WhisperEncWeights weights;
};
// Opens, checks hparams and schema (naming a missing or mis-shaped tensor), binds.
// Matrices may be F32, F16, BF16, a GGUF block type (repacked at load) or our packed types.
Expected<AudioEncoderModel> load_audio_encoder(const std::string& path, int threads = 2);
// Whether a clip file holds an audio encoder (clip.has_audio_encoder).
bool gguf_has_audio_encoder(const GgufFile& f);

// What serving an audio projector file costs, from its header (nothing is loaded): plain
// weights stay file-backed, block-quantised ones are repacked into anonymous memory (about
// their size), plus one 30 s chunk's activations (audio_encoder_activation_bytes). All zero
// for a file without an audio encoder.
struct AudioFootprint {
  uint64_t weights_mapped = 0, weights_anon = 0, activations = 0;
};
Expected<AudioFootprint> audio_encoder_footprint(const std::string& path);
// The largest live buffers of one encode: 30 s of samples (resampled and padded), the mel
// chunk, the im2col rows and block activations of whisper_enc_forward at 3000 frames.
uint64_t audio_encoder_activation_bytes(const WhisperEncHparams& h);

// 16 kHz mono samples -> audio embeddings [n_tokens][P]: log-mel chunks of 30 s (the
// file's mel bins), each encoded; the tokens of all chunks in order.
Expected<std::vector<float>> encode_audio(const WhisperEncExec& ex, const AudioEncoderModel& m,
                                          const float* pcm16k, int64_t n, int64_t* n_tokens);

}  // namespace edge
