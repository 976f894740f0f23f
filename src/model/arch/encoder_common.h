// Pieces the non-causal encoders share (the Whisper-style audio encoder, the ViT, the
// WavTokenizer decoder): hparam reading with the key in the error, weight binding from a
// checked tensor set, exact GELU and bidirectional attention on the kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/gguf.h"
#include "formats/tensor.h"

namespace edge {

struct KernelTable;
class ThreadPool;

// An integer hparam in [1, max]; the error names the key.
Expected<int64_t> gguf_positive_int(const GgufFile& f, const std::string& key,
                                    int64_t max = int64_t{1} << 24);

// Binds tensors of a set that already passed its schema check: vectors as F32 copies,
// matrices (and convolution kernels) as views reshaped to 2-D [dim 0, the rest], read in
// place in the file's type (a packed matrix as it is). A missing name is a not_found
// naming it.
class WeightBinder {
 public:
  explicit WeightBinder(const TensorSet& t) : t_(t) {}
  Status operator()(const std::string& name, std::vector<float>* out) const;
  Status operator()(const std::string& name, TensorView* out) const;

 private:
  const TensorSet& t_;
};

// y [t][out] = x [t][in] . w^T (+ b [out] when b is not empty): a weight view of any
// kernel dtype, through the dispatched matmul.
void linear_rows(const KernelTable& k, ThreadPool& pool, const float* x, int64_t t,
                 const TensorView& w, const std::vector<float>& b, float* y);

// Exact GELU, x * Phi(x) (PyTorch nn.GELU(), ggml_gelu_erf), in place.
void gelu_erf(float* x, int64_t n);

// Multi-head attention where every query sees every key: q, k, v, out [t][n_head *
// head_dim], scores scaled by 1/sqrt(head_dim). Per head two matmuls through the kernel
// table (scores [t][t] = q k^T, row softmax, times v): the kernels' attention is causal,
// and one call per query (each placed after the last key) was 91% of a 4096-token ViT.
// Scratch: [t][t] + 4 [t][head_dim] floats.
void attention_bidirectional(const KernelTable& k, ThreadPool& pool, const float* q,
                             const float* kk, const float* v, int64_t t, int32_t n_head,
                             int32_t head_dim, float* out);

}  // namespace edge
