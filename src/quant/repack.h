// Repacks a GGUF-quantised weight [n, k] into our packed layout, one panel (16 rows) at a
// time, so a pre-quantised model needs no float expansion:
//
//   Q4_0 -> w4s_g32  lossless: the same 4-bit codes, the same fp16 scale d (w = (q-8) d).
//   Q4_1 -> w4a_g32  lossless: codes, scale d, min m (w = q d + m).
//   Q8_0 -> w8_g32   lossless: codes and d; a code of -128 (GGML's own quantiser never
//                    writes one) is clamped to -127, an error of |d| for that weight.
//   Q4_K -> q4k_g256 lossless where the kernels have Q4K cells (KQuantCells::q4k): codes,
//                    the 6-bit sc_j and m_j, d and dmin as stored (4.625 bits per weight).
//   Q4_K -> w4a_g32  otherwise: each 32-wide sub-block j: scale = fp16(d * sc_j), min =
//                    fp16(-dmin * m_j), codes as stored. Per weight |error| <= 15 * u(d sc_j)
//                    + u(dmin m_j), where u(v) = max(|v| 2^-11, 2^-25) is half an fp16 ulp
//                    (relative 2^-11, so about 0.05% of the sub-block's range). A product
//                    that overflows fp16 is refused. 5 bits per weight.
//   Q6_K -> q6k_g256 lossless where the kernels have Q6K cells (KQuantCells::q6k): codes,
//                    the int8 sc_j and d as stored (6.5625 bits per weight, as Q6_K).
//   Q5_K -> q5k_g256 lossless where the kernels have Q5K cells (KQuantCells::q5k): codes,
//                    the 6-bit sc_j and m_j, d and dmin as stored (5.625 bits per weight;
//                    Q5_K: 5.5).
//   Q5_0, Q5_1, Q5_K, Q6_K, Q3_K -> w6_g32 (Q5_K / Q6_K: where their cells are not kept): the
//   exactly dequantised values requantised by
//                    the W6 scale search (quantize.h; least squared error per group of 32).
//                    Not exact: Q6_K's int8 scale per 16 weights (and the K/_1 mins) have
//                    no W6 counterpart. The winner's squared error is at most that of the
//                    absmax candidate (step absmax_group / 32, |error| <= step / 2 but for
//                    a value clipped to +31); the tests check rms <= step / 2 and
//                    |error| <= 3.5 steps (the widest candidate, amax / 35, clips by 3).
//   Q2_K -> w8_g32: requantised with s = absmax / 127 rounded up to fp16 (no clipping):
//                    |error| <= s / 2 <= absmax_group / 254 * (1 + 2^-10).
//   MXFP4 -> mxfp4_g32 lossless: the E2M1 codes and the E8M0 byte as stored (4.25 bits).
//
// A tensor of 3 dims [E, N, K] (experts) repacks as E matrices [N, K] one after another:
// expert e's bytes start at e * matrix_bytes(N, K), each padded to whole panels on its own
// (packed.h); its panels are numbered on through the experts (expert e's panel p is panel
// e * panels(N) + p), so the bytes of panel i start at i * panel bytes.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "formats/tensor.h"
#include "quant/packed.h"

namespace edge {

// Which GGUF K-quant super-blocks keep cells of their own: Q4_K as q4k_g256, Q5_K as
// q5k_g256 and Q6_K as q6k_g256, which keep the source's bytes and let the integer kernels apply
// its sub-scales inside the dot, or else the portable w4a_g32 / w6_g32 that every kernel variant
// runs (the engine asks for each where its kernels have the entries:
// packed_kernels_run_q4k/q5k/q6k()).
struct KQuantCells {
  bool q4k = false;
  bool q6k = false;
  bool q5k = false;  // Q5_K as q5k_g256
};

// The packed format a GGUF quantised type repacks into, or unsupported.
Expected<PackedFormat> repack_format(DType src, KQuantCells cells = {});
bool is_repackable(DType src);

// Repacks panel `panel` of the 2-D tensor `src` (its type repackable, bytes checked by the
// caller with check_tensor_bytes) into dst: (k / 32) * f.group_bytes() bytes.
// scratch: [16, k] floats, used by the requantising types.
Status repack_panel(const TensorView& src, const PackedFormat& f, int64_t panel, uint8_t* dst,
                    float* scratch);

// Panel i of a 2-D or 3-D tensor (numbered on through the experts, see above): repack_panel
// of the expert's matrix.
Status repack_tensor_panel(const TensorView& src, const PackedFormat& f, int64_t i, uint8_t* dst,
                           float* scratch);
// Panels of a 2-D or 3-D tensor: experts * panels(N).
int64_t tensor_panels(const TensorView& t);
// Expert e of a 3-D tensor of a block or float type as a 2-D view [N, K] (a 2-D view as is).
// The view's bytes must have been checked (check_tensor_bytes).
TensorView expert_matrix(const TensorView& t, int64_t e);
// A 2-D or 3-D tensor whose bytes match its type and shape, no dim 0, K % f.group == 0.
Status check_repackable_tensor(const TensorView& src, const PackedFormat& f);

// The whole tensor ([N, K] or [E, N, K]): checks the source's byte size against its type and
// shape (a corrupt tensor is refused with its name), then repacks panel by panel on
// `threads` threads. dst: packed_tensor_bytes(repack_format(src.dtype, cells), shape) bytes.
Status repack_matrix(const TensorView& src, uint8_t* dst, uint64_t dst_bytes, int threads = 1,
                     KQuantCells cells = {});

// Hugging Face's MXFP4 expert tensors (GPT-OSS's release) into mxfp4_g32 cells, lossless:
//   blocks  [E, R, K / 32, 16] u8: block g of row r holds k = 32 g .. 32 g + 31, element 2j in
//           the low nibble of byte j and element 2j + 1 in its high nibble (GGUF's block
//           instead keeps element j low and j + 16 high);
//   scales  [E, R, K / 32] u8: the E8M0 byte of each block, 2^(s - 127), as GGUF's e.
// Rows row0, row0 + step, row0 + 2 step, ... of each expert become rows 0, 1, 2, ... of the
// packed [E, R / step, K] (step 2 takes the gate (row0 0) or up (row0 1) half of a
// gate_up_proj whose rows interleave). dst: packed_tensor_bytes(mxfp4_g32, {E, R / step, K}).
Status repack_hf_mxfp4(const TensorView& blocks, const TensorView& scales, int64_t row0,
                       int64_t step, uint8_t* dst, uint64_t dst_bytes, int threads = 1);

}  // namespace edge
