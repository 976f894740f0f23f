// Qwen3-TTS 12 Hz codec decoder ("Qwen3-TTS-Tokenizer-12Hz", HF model_type
// qwen3_tts_tokenizer_12hz, class Qwen3TTSTokenizerV2Model, the `decoder.*` tensors): frames
// of n_q codes at 12.5 Hz -> 24 kHz mono PCM. Loaded from the tokenizer's Hugging Face
// directory (config.json with a "decoder_config" object, model.safetensors) under the
// published tensor names. docs/qwen3-tts.md ("12 Hz codec decoder") has the graph in words.
//
// Graph (T frames; widths of the published checkpoint in brackets):
//   quantizer: codebook 0 -> rvq_first.output_proj, codebooks 1.. summed -> rvq_rest.output_proj,
//     the two added [T, codebook_dim 512] (codebook rows = embedding_sum / max(usage, 1e-5))
//   pre_conv: causal conv k3 -> [T, latent 1024]
//   pre_transformer: input_proj -> [T, hidden 512], n_layer (8) pre-norm layers with layer
//     scales (RMSNorm, RoPE attention over a causal sliding window of 72 frames, SwiGLU),
//     norm, output_proj -> [T, latent]
//   upsample: per ratio (2, 2) a transposed conv k = s = ratio and a causal ConvNeXt block
//   decoder: causal conv k7 -> decoder_dim (1536); per rate (8, 5, 4, 3) SnakeBeta, a
//     transposed conv k = 2 * rate, s = rate (width halves), three residual units (SnakeBeta,
//     causal conv k7 dilation 1 | 3 | 9, SnakeBeta, conv k1); SnakeBeta, causal conv k7 -> 1
//   clamp to [-1, 1]: T * 1920 samples.
//
// Every operation is causal (left-padded convolutions, transposed convolutions trimmed on
// the right, causal windowed attention), so a stream that keeps each operation's left state
// (Qwen3TtsCodecState) produces the whole-utterance decode sample for sample.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/tensor_schema.h"

namespace edge {

struct KernelTable;
class ThreadPool;

inline constexpr const char* kQwen3TtsCodecModelType = "qwen3_tts_tokenizer_12hz";

struct Qwen3TtsCodecHparams {
  int64_t codebook_size = 2048;  // entries per codebook
  int64_t codebook_dim = 512;    // quantizer output width (the codec's "codebook_dim")
  int64_t n_quantizers = 16;     // codebooks per frame (1 semantic + the rest)
  int64_t latent_dim = 1024;     // pre_conv / transformer in-out / upsample width
  int64_t hidden = 512;          // transformer width
  int64_t n_head = 16, n_head_kv = 16, head_dim = 64;
  int64_t n_ff = 1024;  // SwiGLU width
  int64_t n_layer = 8;
  int32_t sliding_window = 72;  // frames a query sees, itself included
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  std::vector<int32_t> upsampling_ratios{2, 2};     // transposed convs before the decoder
  std::vector<int32_t> upsample_rates{8, 5, 4, 3};  // decoder blocks
  int64_t decoder_dim = 1536;
  int32_t sample_rate = 24000;

  // The codebooks' width: the quantizer's hidden "dimension", half of codebook_dim.
  int64_t vq_dim() const { return codebook_dim / 2; }
  // Channels after decoder block b (b = -1: the decoder's first conv).
  int64_t block_out(int b) const { return decoder_dim >> (b + 1); }
  int64_t samples_per_frame() const;
};

// Reads the decoder's hyper-parameters from the tokenizer's config.json (its
// "decoder_config" object; defaults are the published values, as in Qwen's config class).
// An error names the key and what is wrong with it.
Expected<Qwen3TtsCodecHparams> qwen3_tts_codec_hparams(const nlohmann::json& config);
// The config.json a published tokenizer directory has (decoder side only).
nlohmann::json qwen3_tts_codec_config(const Qwen3TtsCodecHparams& h);

// Every decoder tensor under its published name with its PyTorch shape (the encoder's and the
// quantizer input projections are optional: decoding never reads them).
TensorSchema qwen3_tts_codec_schema(const Qwen3TtsCodecHparams& h);

// Weights. Matrices and k = 1 convolution kernels are views into the mapped file in its own
// type; wider convolution kernels are copies in the file's type rearranged tap-major
// ([c_out][k][c_in], the im2col row order); vectors, codebooks, depthwise kernels and the
// rearranged transposed-conv kernels are F32.
struct Qwen3TtsCodecWeights {
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;    // [hidden]
    TensorView wq, wk, wv, wo;                 // [n_head*hd, hidden] .. [hidden, n_head*hd]
    std::vector<float> attn_scale, ffn_scale;  // [hidden] layer scales
    TensorView gate, up, down;                 // [n_ff, hidden], [n_ff, hidden], [hidden, n_ff]
  };
  // A transposed conv (c_in -> c_out, kernel k = taps * stride) as one matmul per input step:
  // rows [x[i], x[i-1], .., x[i-taps+1]] times w [stride * c_out, taps * c_in] give
  // outputs i * stride .. i * stride + stride - 1, trimmed as the causal module trims.
  struct TransConv {
    int64_t c_in = 0, c_out = 0, stride = 0, taps = 0;
    std::vector<float> w;     // [stride * c_out, taps * c_in]
    std::vector<float> bias;  // [c_out]
  };
  // A causal conv. k == 1: w is the file's [c_out, c_in] and the matrix itself. k > 1: w is
  // the file's [c_out, c_in * k] (shape and type) and the matrix is taps_major, the same
  // elements rearranged as [c_out][k][c_in] (matrix() gives the view).
  struct Conv {
    TensorView w;
    std::vector<uint8_t> taps_major;  // [c_out, k * c_in] in w's type, k > 1 only
    std::vector<float> bias;          // [c_out]
    int64_t c_in = 0, c_out = 0, k = 1, dilation = 1;
    TensorView matrix() const {
      TensorView v = w;
      if (!taps_major.empty()) v.data = taps_major.data();
      return v;
    }
  };
  struct Snake {
    std::vector<float> alpha, inv_beta;  // exp(alpha), 1 / (exp(beta) + 1e-9)
  };
  struct ConvNext {
    std::vector<float> dw_w, dw_b;      // [C, 1, 7], [C]
    std::vector<float> norm_w, norm_b;  // [C]
    TensorView pw1, pw2;                // [4C, C], [C, 4C]
    std::vector<float> pw1_b, pw2_b, gamma;
  };
  struct ResUnit {
    Snake act1, act2;
    Conv conv1, conv2;
  };
  struct Block {
    Snake act;
    TransConv up;
    ResUnit res[3];
  };
  std::vector<float> codebooks;      // [n_q, codebook_size, vq_dim], normalised
  TensorView proj_first, proj_rest;  // [codebook_dim, vq_dim]
  Conv pre_conv;
  TensorView input_proj, output_proj;  // [hidden, latent], [latent, hidden]
  std::vector<float> input_proj_b, output_proj_b, final_norm;
  std::vector<Layer> layers;
  std::vector<TransConv> upsample;
  std::vector<ConvNext> convnext;
  Conv dec_in;
  std::vector<Block> blocks;
  Snake act_out;
  Conv conv_out;
};

// Binds views and copies vectors; the set must already have passed the schema check and the
// memory it points into must outlive the weights.
Expected<Qwen3TtsCodecWeights> bind_qwen3_tts_codec_weights(const Qwen3TtsCodecHparams& h,
                                                            const TensorSet& tensors);

// What a stream carries from one chunk of frames to the next: each causal op's last inputs
// and the attention's keys and values (paged; pages that left every window are freed).
struct Qwen3TtsCodecState {
  int64_t pos = 0;                       // frames decoded so far
  std::vector<std::vector<float>> hist;  // one per stateful op, in graph order, time-major
  struct KvPages {
    std::vector<std::vector<float>> k, v;  // page p: positions [p * kPage, (p + 1) * kPage)
  };
  std::vector<KvPages> kv;  // per layer
  static constexpr int64_t kPage = 32;
  // Activation and im2col buffers reused from chunk to chunk (not stream state: whatever
  // they hold is overwritten before it is read). They grow to the largest chunk's needs:
  // 3 x 0.74 MB per frame of the chunk at the published sizes, plus the im2col tiles.
  struct Scratch {
    std::vector<float> x, y, z, cols;
  } scratch;
};

struct Qwen3TtsCodecExec {
  const KernelTable& kernels;
  ThreadPool& pool;
};

// codes [t][n_q] (each in [0, codebook_size): checked by the caller) -> t * samples_per_frame
// samples appended to pcm, continuing the stream in `state` (a fresh state: the utterance's
// start).
void qwen3_tts_codec_forward(const Qwen3TtsCodecExec& ex, const Qwen3TtsCodecHparams& h,
                             const Qwen3TtsCodecWeights& w, const int32_t* codes, int64_t t,
                             Qwen3TtsCodecState& state, std::vector<float>& pcm);

}  // namespace edge
