// Which tensors a model must (or may) have, with their shapes, declared by a family file
// from its ModelConfig. The loader checks a file's tensors against it before binding
// anything, so a wrong file is refused with the tensor's name and expected vs found shape.
// Names are canonical (GGUF): token_embd.weight, blk.N.attn_q.weight, ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/config.h"

namespace edge {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;  // row-major, outermost first
  bool required = true;
};

class TensorSchema {
 public:
  void require(std::string name, std::vector<int64_t> shape);
  void optional(std::string name, std::vector<int64_t> shape);
  const std::vector<TensorSpec>& specs() const { return specs_; }
  const TensorSpec* find(const std::string& name) const;

  // Every required tensor present; every present one (required or optional) with the
  // declared shape and a dtype the kernels read (F32/F16/BF16). Extra tensors are ignored.
  Status check(const TensorSet& tensors) const;

 private:
  std::vector<TensorSpec> specs_;
};

// "blk.3.attn_q.weight" for layer_name(3, "attn_q"); suffix "bias" for biases.
std::string layer_name(int layer, const char* what, const char* suffix = "weight");
// Shape as text: "[512, 64]".
std::string shape_string(const std::vector<int64_t>& shape);

// The part every decoder family shares: embeddings, final norm, output head (unless tied),
// and per layer the attention norm, q/k/v/o projections, FFN norm and gate/up/down.
TensorSchema decoder_schema(const ModelConfig& c);

}  // namespace edge
