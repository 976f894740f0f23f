// llama2.c checkpoints (legacy .bin): a header of 7 int32 then float32 arrays. The views
// use GGUF tensor names so a model family can load either format with one schema.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/mapped_file.h"
#include "core/status.h"
#include "formats/tensor.h"

namespace edge {

class Llama2cFile {
 public:
  struct Header {
    int32_t dim = 0;         // model width
    int32_t hidden_dim = 0;  // FFN width
    int32_t n_layers = 0;
    int32_t n_heads = 0;
    int32_t n_kv_heads = 0;
    int32_t vocab_size = 0;  // always positive here; the file stores -vocab if unshared
    int32_t seq_len = 0;
    bool shared_classifier = true;  // output.weight is token_embd.weight
    int32_t head_size() const { return dim / n_heads; }
    int32_t kv_dim() const { return dim / n_heads * n_kv_heads; }
  };
  static constexpr uint64_t kHeaderBytes = 7 * 4;

  static Expected<Llama2cFile> open(const std::string& path);
  // Parses bytes already mapped or in memory (MappedFile::copy_of); open() maps, then this.
  static Expected<Llama2cFile> from_mapped(MappedFile file);

  const Header& header() const { return header_; }
  // F32 views, row-major [out, in]:
  //   token_embd.weight [vocab, dim], output_norm.weight [dim], output.weight [vocab, dim]
  //   (only when not shared), and per layer N: blk.N.attn_norm.weight [dim],
  //   attn_q [dim, dim], attn_k / attn_v [kv_dim, dim], attn_output [dim, dim],
  //   ffn_norm [dim], ffn_gate (w1) / ffn_up (w3) [hidden, dim], ffn_down (w2) [dim, hidden].
  const TensorSet& tensors() const { return tensors_; }
  const std::string& path() const { return map_->path(); }

 private:
  std::unique_ptr<MappedFile> map_;  // heap: views stay valid when the file object moves
  Header header_;
  TensorSet tensors_;
};

}  // namespace edge
