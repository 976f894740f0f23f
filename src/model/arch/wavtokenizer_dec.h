// WavTokenizer decoder ("wavtokenizer-dec" in llama.cpp's GGUF conventions): audio codes
// -> spectral frames (log-magnitude | phase) for an inverse STFT. Not a causal LM, so it
// has its own hparams, schema and forward here; model/vocoder.h wraps it with the ISTFT.
//
// Graph (T codes, C = posnet width = convnext width, F = feature width):
//   token_embd [vocab, F] -> conv1d k7 F->C -> pos-net (6 fixed blocks: resnet, resnet,
//   attention, resnet, resnet, group norm) -> layer norm (token_embd_norm) -> N ConvNeXt
//   blocks (depthwise k7, layer norm, pw1 C->n_ff, GELU, pw2 n_ff->C, x gamma, residual)
//   -> layer norm (output_norm) -> output [n_embd, C] + bias: one row of n_embd values per
//   code, the first n_embd/2 log-magnitudes, the rest phases, of n_fft/2+1 = n_embd/2 bins.
//
// The pos-net's group norms take their statistics over the whole sequence and its
// attention is bidirectional: every output frame depends on every code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/gguf.h"
#include "model/tensor_schema.h"

namespace edge {

struct KernelTable;
class ThreadPool;

inline constexpr const char* kWavTokenizerArch = "wavtokenizer-dec";
inline constexpr int32_t kWavTokenizerSampleRate = 24000;  // fixed by the model family
inline constexpr int kWavTokenizerPosnetBlocks = 6;        // the layout is fixed (above)

struct WavTokenizerHparams {
  int64_t n_vocab = 0;     // codes (4096 for WavTokenizer-75)
  int64_t n_features = 0;  // F: code embedding width (512)
  int64_t n_embd = 0;      // C: pos-net and ConvNeXt width (768)
  int64_t n_ff = 0;        // ConvNeXt MLP width (2304)
  int64_t n_out = 0;       // head width = n_fft + 2 (1282)
  int32_t n_convnext = 0;  // ConvNeXt blocks (12)
  int32_t n_groups = 0;    // group norm groups (32)
  float norm_eps = 1e-6f;  // layer norms
  float group_norm_eps = 1e-6f;
  int32_t n_fft = 0;  // n_out - 2
  int32_t hop = 0;    // edge key or n_fft / 4 (320: llama.cpp's fixed value)

  int64_t n_bins() const { return n_out / 2; }
};

// Reads and validates the hparams (keys named in the error when missing or wrong).
Expected<WavTokenizerHparams> read_wavtokenizer_hparams(const GgufFile& f);
// Writes them as llama.cpp's converter does (plus edge.hop_length).
void write_wavtokenizer_hparams(const WavTokenizerHparams& h, const std::string& name,
                                GgufWriter& w);
// Every tensor with its row-major shape (GGUF ne[] reversed), as llama.cpp declares them.
TensorSchema wavtokenizer_schema(const WavTokenizerHparams& h);

// Weights. Matrices (and convolution kernels, viewed as [c_out, c_in * k], the order an
// im2col row has) are views into the mapped file in its own type (F32/F16/BF16), read in
// place by the matmul: no anonymous copy. Vectors (norms, biases, layer scales, the small
// depthwise kernels) are F32 copies.
struct WavTokenizerWeights {
  struct Resnet {                         // pos-net blocks 0, 1, 3, 4
    std::vector<float> norm1_w, norm1_b;  // [C]
    TensorView conv1_w;                   // [C, C * 3]  (file: [C, C, 3])
    std::vector<float> conv1_b;           // [C]
    std::vector<float> norm2_w, norm2_b;  // [C]
    TensorView conv2_w;                   // [C, C * 3]
    std::vector<float> conv2_b;           // [C]
  };
  struct ConvNext {
    std::vector<float> dw_w, dw_b;      // [C, 1, 7], [C]
    std::vector<float> norm_w, norm_b;  // [C]
    TensorView pw1_w;                   // [n_ff, C]
    std::vector<float> pw1_b;           // [n_ff]
    TensorView pw2_w;                   // [C, n_ff]
    std::vector<float> pw2_b;           // [C]
    std::vector<float> gamma;           // [C]
  };
  TensorView tok_embd;                                        // [vocab, F]
  TensorView conv_in_w;                                       // [C, F * 7]  (file: [C, F, 7])
  std::vector<float> conv_in_b;                               // [C]
  Resnet resnet[4];                                           // pos-net blocks 0, 1, 3, 4
  std::vector<float> attn_norm_w, attn_norm_b;                // [C]  (pos-net block 2)
  TensorView attn_q_w, attn_k_w, attn_v_w, attn_o_w;          // [C, C]  (file: [C, C, 1])
  std::vector<float> attn_q_b, attn_k_b, attn_v_b, attn_o_b;  // [C]
  std::vector<float> posnet_norm_w, posnet_norm_b;            // [C]  (pos-net block 5)
  std::vector<float> embd_norm_w, embd_norm_b;                // [C]
  std::vector<ConvNext> convnext;
  std::vector<float> out_norm_w, out_norm_b;  // [C]
  TensorView out_w;                           // [n_out, C]
  std::vector<float> out_b;                   // [n_out]
};

// Binds views and copies vectors; the set must already have passed the schema check, and
// the memory it points into must outlive the weights.
Expected<WavTokenizerWeights> bind_wavtokenizer_weights(const WavTokenizerHparams& h,
                                                        const TensorSet& tensors);

// Where the forward runs: a kernel table (kernels/api.h) and a pool for its matmuls.
struct WavTokenizerExec {
  const KernelTable& kernels;
  ThreadPool& pool;
};

// codes [n] (each < n_vocab; checked by the caller) -> head output [n][n_out].
std::vector<float> wavtokenizer_forward(const WavTokenizerExec& ex, const WavTokenizerHparams& h,
                                        const WavTokenizerWeights& w, const int32_t* codes,
                                        int64_t n);

}  // namespace edge
