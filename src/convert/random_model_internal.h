// Shared by random_model.cpp (config, values, GGUF) and random_model_hf.cpp (HF directory).
#pragma once

#include <string>
#include <vector>

#include "convert/random_model.h"
#include "tokenizer/vocab.h"

namespace edge::random_model {

// One canonical tensor and how to generate its values (GGUF convention: Gemma norms hold
// 1+w, Llama q/k rows in interleaved-RoPE order). Values are produced on demand so a
// large GGUF is written holding one tensor at a time.
struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  float mean = 0.0f, stddev = 0.0f;
  uint64_t seed = 0;
  std::vector<float> generate() const;  // ~N(mean, stddev^2), deterministic in seed
};

// Every tensor of the family's schema (required ones, plus output.weight when untied).
std::vector<Tensor> make_tensors(const RandomModelOptions& o, const ModelConfig& c);
// Values -> bytes of dtype (F32, F16, BF16, or Q8_0 for a multiple of 32 values).
std::vector<uint8_t> encode(const std::vector<float>& v, DType t);

Status write_hf_dir(const RandomModelOptions& o, const ModelConfig& c, const Vocab& vocab,
                    const std::string& dir);

}  // namespace edge::random_model
