// What the generators share: random_model.cpp (config, values, GGUF), random_model_hf.cpp
// (HF directory), and the projector and vocoder writers (random_*_projector.cpp,
// random_vocoder.cpp): seeded tensors, their encodings and the GGUF entries that write them.
#pragma once

#include <string>
#include <vector>

#include "convert/random_model.h"
#include "formats/gguf.h"
#include "model/tensor_schema.h"
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

// A tensor of the spec's name and shape seeded from `seed` and its name (FNV-1a, so values
// do not depend on the order of tensors), with mean and stddev left 0 for the caller.
Tensor seeded_tensor(const TensorSpec& s, uint64_t seed);
// Inputs per output row of a weight stored [out, in...]: the product of its trailing dims.
int64_t fan_in(const std::vector<int64_t>& shape);
// GGUF general.file_type of a file whose matrices are `t`: 0 F32, 1 F16, 7 Q8_0, 32 BF16.
uint32_t gguf_file_type(DType t);
// Adds `t` to `w` as type `dt`; its values are generated and encoded when the file is
// written (one tensor in memory at a time). `writer` names the generator in errors.
Status add_generated_tensor(GgufWriter& w, const Tensor& t, DType dt, const char* writer);

// Every tensor of the family's schema (required ones, plus output.weight when untied).
std::vector<Tensor> make_tensors(const RandomModelOptions& o, const ModelConfig& c);
// Values -> bytes of dtype (F32, F16, BF16, or Q8_0 for a multiple of 32 values).
std::vector<uint8_t> encode(const std::vector<float>& v, DType t);

Status write_hf_dir(const RandomModelOptions& o, const ModelConfig& c, const Vocab& vocab,
                    const std::string& dir);

}  // namespace edge::random_model
