// Exact dequantisation of GGUF (GGML) tensor types, as the format defines them:
// F32, F16, BF16 and the block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (32 elements a block)
// and Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (256-element super-blocks), and MXFP4 (32 a block). Products are
// computed in float in the same order the format's reference decoder uses, so results are
// bit-equal.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "formats/tensor.h"

namespace edge {

// True when dequantize_gguf_row() decodes type t.
bool gguf_type_decodable(DType t);

// Decodes n consecutive elements of type t starting at a block boundary (n a multiple of
// the block size): out[0..n). Unsupported types and a bad n are errors, never a crash.
Status dequantize_gguf_row(DType t, const uint8_t* src, int64_t n, float* out);

// Row r of a 2-D (or higher, rows = all but the last dim) tensor view, decoded to float.
// Checks the view's byte size against its type and shape first.
Status dequantize_tensor_row(const TensorView& t, int64_t row, float* out);

// Checks that a view's nbytes equals what its dtype and shape require: a clear error
// naming the tensor otherwise (corrupt or mis-typed tensor).
Status check_tensor_bytes(const TensorView& t);

// Block field helpers shared with repack (the sub-block scale/min of Q4_K and Q5_K).
void q4k_scale_min(int j, const uint8_t* scales12, uint8_t* sc, uint8_t* m);

}  // namespace edge
