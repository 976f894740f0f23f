// What a model file will cost in memory, read from its metadata alone: the ModelConfig,
// every tensor's bytes and whether the loader will repack it into anonymous memory or
// use it in place from the mapping. Reads headers only (GGUF header + tensor infos,
// config.json + safetensors headers, llama2.c header): no tensor data page is touched,
// so a plan can refuse a model before any weight is read.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "formats/tensor.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"

namespace edge {

struct TensorFootprint {
  std::string name;
  DType dtype = DType::F32;       // as stored in the file
  std::vector<int64_t> shape;
  uint64_t file_bytes = 0;        // bytes in the file
  uint64_t anon_bytes = 0;        // bytes the loader allocates for it (repacked / converted)
  uint64_t mapped_bytes = 0;      // bytes used in place from the mapping
  bool expert = false;            // a MoE expert tensor (stacked or one expert's)
};

struct ModelFootprint {
  std::string path;
  std::string format;             // "gguf", "hf", "llama2c"
  ModelConfig config;
  std::vector<TensorFootprint> tensors;
  uint64_t file_bytes = 0;        // all weight files (+ header)
  uint64_t weights_anon = 0;      // sum of anon_bytes
  uint64_t weights_mapped = 0;    // sum of mapped_bytes
  // The MoE experts' share of weights_mapped / weights_anon, and of them what one decoded
  // token reads: n_expert_used / n_expert of every MoE layer's experts.
  uint64_t experts_mapped = 0, experts_anon = 0;
  uint64_t active_expert_bytes = 0;
  int64_t repacked_tensors = 0;
  // Approximate heap of the tokenizer's tables plus the file metadata kept while loaded
  // (GGUF token/merge string arrays), from the counts and lengths in the metadata.
  int64_t tokenizer_bytes = 0;
  int64_t n_vocab_strings = 0;
  int64_t n_merges = 0;
};

// Reads the footprint of a GGUF file, a Hugging Face directory or a llama2.c checkpoint.
Expected<ModelFootprint> read_model_footprint(const std::string& path);

// Heap cost of a vector of strings as libstdc++ holds it (SSO below 16 bytes; malloc
// chunks rounded to 16 plus an 8-byte header). Used for tokenizer estimates.
int64_t string_vector_heap_bytes(const std::vector<std::string>& v);
// Tokenizer heap estimate from vocabulary strings and merge count; `metadata_copy`:
// the strings are also kept once more (GGUF metadata arrays held by the open file).
int64_t estimate_tokenizer_bytes(int64_t token_string_heap, int64_t n_tokens,
                                 int64_t merge_string_heap, int64_t n_merges, bool metadata_copy);
// The same estimate for a loaded tokenizer (when the heap cannot be measured).
int64_t estimate_loaded_tokenizer(const Tokenizer& t, bool metadata_copy);

}  // namespace edge
