// BERT-family text encoders in llama.cpp's GGUF conventions: "bert" (BERT, MiniLM, BGE and
// the BGE-reranker-style cross-encoders) and "nomic-bert" (nomic-embed-text). They embed
// text; they generate nothing, keep no KV cache, and every token sees every other token of
// its sequence.
//
// Graph for one batch of sequences, T tokens in all, activations [T][E]:
//   x = token_embd[id] + token_types[0] (+ position_embd[pos], bert) ; x = LN_embd(x)
//   per layer (post-norm):
//     bert:       q, k, v = x Wq + bq, x Wk + bk, x Wv + bv
//     nomic-bert: q | k | v = x Wqkv (no bias); q, k rotated (NeoX pairs, theta)
//     a = softmax(q k^T / sqrt(d)) v, per head, over the sequence's own tokens
//     x = LN_attn(x + a Wo (+ bo))
//     bert:       f = (gelu(x Wup + bup)) Wdown + bdown      (gelu: tanh approximation)
//     nomic-bert: f = (silu(x Wgate) * x Wup) Wdown
//     x = LN_out(x + f)
// Pooling per sequence: mean of its rows, its first row ([CLS]), its last row, or "rank": the
// first row through the classification head, tanh(x Wcls + bcls), then cls.output when the
// file has it: one relevance score.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/gguf.h"
#include "formats/tensor.h"
#include "model/config.h"
#include "model/tensor_schema.h"

namespace edge {

struct KernelTable;
class ThreadPool;
class GgufWriter;

// GGUF general.architecture values served by this file.
bool is_text_encoder_arch(const std::string& arch);

// What an encoder needs beyond ModelConfig's common fields.
struct BertHparams {
  bool nomic = false;        // "nomic-bert": fused qkv, RoPE, SwiGLU, no biases
  int64_t n_types = 2;       // token_types rows (only row 0 is read, as llama.cpp does)
  int64_t n_ctx_train = 0;   // position_embd rows (bert), the advertised context
  int64_t n_cls_out = 0;     // cls.output rows (0: no cls.output; a rank score is cls's)
  bool cls_head = false;     // cls.weight/bias present: rank pooling is possible
};

// ModelConfig (encoder_only set; one LayerConfig per layer with the RoPE of nomic-bert) and
// the extras, from {arch}.* keys and the tensors' shapes; the error names the key.
Expected<ModelConfig> bert_config_from_gguf(const GgufFile& f, const std::string& arch,
                                            BertHparams* extras);
// Writes the keys as llama.cpp's converter does (writers).
void write_bert_hparams(const ModelConfig& c, const BertHparams& h, GgufWriter& w);
// Every tensor with its row-major shape (GGUF ne[] reversed).
TensorSchema bert_schema(const ModelConfig& c, const BertHparams& h);

// Matrices are views in the file's type (or packed); vectors are F32 copies.
struct BertWeights {
  struct Layer {
    TensorView q_w, k_w, v_w, qkv_w, o_w;  // [E, E] each, or qkv [3E, E] (nomic)
    std::vector<float> q_b, k_b, v_b, o_b;  // [E] (bert)
    std::vector<float> attn_ln_w, attn_ln_b, out_ln_w, out_ln_b;  // [E]
    TensorView up_w, gate_w, down_w;        // [n_ff, E], [n_ff, E] (nomic), [E, n_ff]
    std::vector<float> up_b, down_b;        // [n_ff], [E] (bert)
  };
  TensorView tok_embd;               // [n_vocab, E]
  TensorView pos_embd;               // [n_ctx_train, E] (bert)
  std::vector<float> type0;          // [E] token_types row 0
  std::vector<float> embd_ln_w, embd_ln_b;
  std::vector<Layer> layers;
  TensorView cls_w;                  // [E, E] (cls_head)
  std::vector<float> cls_b;
  TensorView cls_out_w;              // [n_cls_out, E] (n_cls_out > 0)
  std::vector<float> cls_out_b;
  int64_t vector_bytes() const;      // the F32 copies
};

// The set must already have passed bert_schema's check; its memory must outlive the weights.
Expected<BertWeights> bind_bert_weights(const ModelConfig& c, const BertHparams& h,
                                        const TensorSet& tensors);

enum class EncoderPooling : uint8_t { kMean, kCls, kLast, kRank };

struct BertExec {
  const KernelTable& kernels;
  ThreadPool& pool;
};

// Runs sequences tokens[offsets[i] .. offsets[i + 1]) (each 1..n_ctx_train tokens for
// bert: CHECKed, the caller validates) and pools each: [n_seqs][E], or [n_seqs][1] for kRank
// (CHECKs the head). Token ids must be in range (CHECKed).
std::vector<float> bert_encode(const BertExec& ex, const ModelConfig& c, const BertHparams& h,
                               const BertWeights& w, std::span<const int32_t> tokens,
                               std::span<const int64_t> offsets, EncoderPooling pooling);
// Floats of activations bert_encode holds for a batch of `tokens` tokens whose longest
// sequence has `longest` (the memory plan's scratch).
int64_t bert_scratch_floats(const ModelConfig& c, int64_t tokens, int64_t longest);

}  // namespace edge
