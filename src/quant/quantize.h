// Quantisation into the packed layout (packed.h), one panel of 16 rows at a time, so the
// transient is a [16, K] float panel per thread, never the expanded matrix.
//
// Scale choice per (row, group) of G values x:
//   W4 sym  (w = (q - 8) s, q in 0..15): candidates s = m / t, m the signed value of largest
//           magnitude and t in [-10, -6.5] u [6, 8.5] (step 0.5); for each, codes by rounding
//           with the fp16-rounded s, then the least-squares s for those codes, codes again;
//           the candidate with the smallest squared error (with fp16 s) wins. t = -8 alone,
//           no refit, is "absmax" (the classic Q4_0 choice); the search includes it.
//   W4 asym (w = q s + mn, q in 0..15): candidates s = (max - min) / (15 + d), d in [-1, 2]
//           (step 0.5), mn = min; codes, then least-squares (s, mn) for those codes, codes
//           again; smallest squared error (fp16 s and mn) wins. d = 0 alone is "absmax".
//   W6      (w = (q - 32) s, q in 0..63): the W4 sym search with t in [-35, -30] u [28, 33]
//           (step 1), each candidate refitted; t = -32 alone is "absmax".
//   W8      (w = q s, q in -127..127): s = absmax / 127, rounded UP to the next fp16 so no
//           code clips: |error| <= s / 2 <= absmax / 254 * (1 + 2^-10).
//   MXFP4   (G = 32; w = 2^(e - 128) * E2M1 value doubled): GGML's rule, no search
//           (quant/mxfp4.h), so the codes equal what llama.cpp writes for the same floats.
// Padding rows of the last panel get codes 0 and scale 0 (and min 0, sum 0).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "formats/tensor.h"
#include "quant/packed.h"

namespace edge {

// Fills out[0..k) with row `row` (0 <= row < n) of the source matrix. Called concurrently
// from several threads when quantize_matrix runs threaded.
using RowSource = std::function<Status(int64_t row, float* out)>;

// Rows of a 2-D tensor view of a type dequantize_gguf_row decodes (F32, F16, BF16, Q*,
// MXFP4), or of a 3-D one [E, N, K] (row e * N + r is expert e's row r).
// Checks the view's byte size against its type first. The view must outlive the source.
Expected<RowSource> tensor_row_source(const TensorView& t);

enum class ScaleSearch { kAbsmax, kRmse };

// Quantises one panel. rows: [16, k] floats, the first `valid_rows` real (the rest ignored
// and written as padding). dst: (k / G) * group_bytes() bytes. Non-finite input, or
// |x| > 65504 (the fp16 scales could not hold it), is refused.
Status quantize_panel(const PackedFormat& f, int64_t k, const float* rows, int64_t valid_rows,
                      uint8_t* dst, ScaleSearch search = ScaleSearch::kRmse);

// Quantises a whole [n, k] matrix into dst (f.matrix_bytes(n, k) bytes), panel by panel,
// on `threads` threads (each holds one [16, k] float panel). k % f.group must be 0.
Status quantize_matrix(const PackedFormat& f, int64_t n, int64_t k, const RowSource& src,
                       uint8_t* dst, uint64_t dst_bytes, int threads = 1,
                       ScaleSearch search = ScaleSearch::kRmse);

// Scalar reference: row `row` of a packed [n, k] matrix as k floats (the embedding lookup
// and every test use it).
void dequantize_row(const PackedFormat& f, const uint8_t* matrix, int64_t n, int64_t k,
                    int64_t row, float* out);
// The whole [n, k] matrix, row-major (tests only: this is the expansion we otherwise avoid).
std::vector<float> dequantize_matrix(const PackedFormat& f, const uint8_t* matrix, int64_t n,
                                     int64_t k);

// fp16 of a positive scale, rounded up (never below s) so codes computed with it never clip.
uint16_t f16_round_up(float s);

}  // namespace edge
