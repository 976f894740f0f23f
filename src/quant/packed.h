// Our packed weight layouts: ONE layout per tensor, read by the decode GEMV, the prefill
// GEMM, the embedding lookup and a tied output head alike (no second copy, no row-major
// expansion). Stored in GGUF with type ids >= kFirstPackedType (formats/tensor.h), so a
// pre-packed file loads by mmap with no repack.
//
// A matrix W has logical shape [N, K] (N output rows, K input features). Rows are grouped
// in panels of kPanelRows = 16 (the last panel is padded with zero rows: codes 0, scales
// 0), columns in groups of G along K (G = 32, 64 or 128; K % G == 0). Bytes:
//
//   panel 0 | panel 1 | ... | panel P-1            P = ceil(N / 16)
//   panel  = group 0 | group 1 | ... | group K/G-1
//
// W4 group (4-bit codes, symmetric: w = (code - 8) * scale; asymmetric: w = code * scale + min):
//   codes  G/8 blocks of 64 bytes. Block b holds k0 = g*G + 8b .. k0+7 for the 16 rows:
//          byte j (0..63): low nibble  = code(row j/4, k0 + j%4)
//                          high nibble = code(row j/4, k0 + 4 + j%4)
//          so (byte & 15) is, lane by lane, 16 rows x 4 consecutive k as u8: the operand
//          layout of VNNI vpdpbusd (a 32-bit lane = one row, 4 k), and (byte >> 4) the next
//          4 k. AVX2 reads the same block as two 32-byte halves (rows 0-7, 8-15).
//   scales 16 x fp16, one per row of the panel
//   mins   16 x fp16 (asymmetric only)
//
// W8 group (int8 codes, w = code * scale; code in [-127, 127]):
//   codes  G/4 blocks of 64 bytes. Block b holds k0 = g*G + 4b .. k0+3:
//          byte j = code(row j/4, k0 + j%4) as int8
//   scales 16 x fp16
//   sums   16 x int16: sum of the row's G codes (lets integer kernels feed activations
//          as u8 = a + 128 and subtract 128 * sum afterwards)
//
// W6 group (6-bit codes, symmetric: w = (code - 32) * scale, code in 0..63):
//   low    the low 4 bits of the codes in exactly the W4 block layout above (G/8 blocks of
//          64 bytes), so the W4 nibble unpack is reused as is
//   high   the top 2 bits, G/16 blocks of 64 bytes. High block m covers W4 blocks 2m and
//          2m+1 (k0 = g*G + 16m .. k0+15): byte j holds, for the lane of low byte j,
//            bits 0-1: code(row j/4, k0 + j%4)      >> 4   (W4 block 2m,   low nibble)
//            bits 2-3: code(row j/4, k0 + 4 + j%4)  >> 4   (W4 block 2m,   high nibble)
//            bits 4-5: code(row j/4, k0 + 8 + j%4)  >> 4   (W4 block 2m+1, low nibble)
//            bits 6-7: code(row j/4, k0 + 12 + j%4) >> 4   (W4 block 2m+1, high nibble)
//          so one load of the high block and a shift + mask (0x30) per nibble plane gives
//          bits 4-5 of the same bytes the nibble unpack produced: code = nibble | high.
//   scales 16 x fp16
//   No sums: integer kernels feed the unsigned codes (u8, <= 63) to maddubs / vpdpbusd
//   against s8 activations and subtract 32 * sum(activation block), as W4 sym does with 8.
//   12 G + 32 bytes a cell: 6.5 bits per weight at G = 32 (Q6_K: 6.5625).
//
// Q4K group (G = 256 only: GGUF Q4_K's super-block, kept as it is, so the integer kernels
// fold the 6-bit sub-scales into their int32 dot and apply one float scale per 256;
// w = d * sc_j * code - dmin * m_j for sub-block j = kk / 32 of 32 weights). The per-row
// fields come first, so a GEMV reads each cell front to back (reading a tail 2 KiB ahead
// of the codes for every sub-block halved the decode rate: the hardware prefetcher lost
// the stream):
//   sc     [8 sub-blocks j][16 rows] u8 (0..63): 8 bytes per half-panel and sub-block
//   m      [4 pairs i][16 rows][2] u8: byte 32 i + 2 r + e = m_{2i+e} of row r, so a
//          half-panel's pair i is 16 bytes that widen to 8 int32 lanes of (m_2i, m_2i+1)
//   d      16 x fp16 (Q4_K's super-block scale, per row)
//   dmin   16 x fp16
//   codes  at byte 320: the W4 block layout above (32 blocks of 64 bytes)
//   2368 bytes a cell: 4.625 bits per weight (Q4_K: 4.5; w4a_g32: 5.0).
//
// Q6K group (G = 256 only: GGUF Q6_K's super-block, kept as it is; w = d * sc_j * (code -
// 32) for sub-block j = kk / 16 of 16 weights, code 0..63, sc_j int8). Per-row fields first:
//   sc     [8 pairs i][16 rows][2] s8: byte 32 i + 2 r + e = sc_{2i+e} of row r, so a
//          half-panel's pair i is 16 bytes that widen to 8 int32 lanes of (sc_2i, sc_2i+1)
//   d      16 x fp16 at byte 256
//   codes  at byte 288: 16 chunks of 192 bytes, chunk m = k 16m .. 16m+15 in the W6 layout
//          of a group of 16 (low nibbles: W4 blocks 2m and 2m+1; then their high block),
//          so a GEMV reads the codes front to back (with the whole high plane after the
//          nibbles, as W6 keeps it, each block's high bits lay 2 KiB ahead of its nibbles:
//          the single-thread Q4_K_M decode ran at 57% of its rate)
//   3360 bytes a cell: 6.5625 bits per weight, exactly Q6_K's (w6_g32: 6.5, requantised).
//
// Q5K group (G = 256 only: GGUF Q5_K's super-block, kept as it is; w = d * sc_j * code -
// dmin * m_j for sub-block j = kk / 32, code 0..31). The per-row fields are Q4K's (bytes 0 to
// 319: sc, m pairs, d, dmin), then the codes:
//   codes  at byte 320: 8 chunks of 320 bytes, chunk j = sub-block j (k 32j .. 32j+31): its
//          low nibbles in the W4 block layout of a group of 32 (4 blocks of 64 bytes), then
//          one high block of 64 bytes: byte 4 r + i holds bit 4 of code(row r, 32j + 4m + i)
//          in bit m (m = 0..7), i.e. bit 2b + e for W4 block b's low (e = 0) or high (e = 1)
//          nibble plane, so one load and a shift + mask (0x10) per nibble plane gives bit 4 of
//          the bytes the nibble unpack produced. Read front to back by a GEMV, as Q6K's.
//   2880 bytes a cell: 5.625 bits per weight (Q5_K: 5.5; w6_g32: 6.5, requantised).
//
// MXFP4 group (G = 32 only: GGUF MXFP4's block, kept as it is; w = 2^(e - 128) * v(code), v the
// E2M1 value doubled, -12..12, quant/mxfp4.h):
//   codes  the 4-bit E2M1 codes in exactly the W4 block layout above (4 blocks of 64 bytes),
//          so the W4 nibble unpack is reused and one table lookup (pshufb / vpermb / tbl)
//          turns a nibble plane into int8 values
//   e      16 x u8 at byte 256: the E8M0 exponent of each row's block
//   272 bytes a cell: 4.25 bits per weight, exactly MXFP4's 17 bytes per 32 weights.
//
// Tensors of 3 dims [E, N, K] (a mixture of experts' weights, outermost first) are E packed
// [N, K] matrices back to back: expert e's bytes start at e * matrix_bytes(N, K), each padded
// to whole panels on its own (packed_tensor_bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "formats/gguf.h"
#include "formats/tensor.h"

namespace edge {

constexpr int64_t kPanelRows = 16;

// The numeric values are part of the GGUF type ids below: never reorder.
enum class PackedKind : uint8_t { kW4Sym, kW4Asym, kW8, kW6, kQ4K, kQ6K, kQ5K, kMxfp4 };

struct PackedFormat {
  PackedKind kind = PackedKind::kW4Sym;
  int32_t group = 128;  // 32, 64 or 128 (kQ4K, kQ5K, kQ6K: 256; kMxfp4: 32)

  bool is_w4() const { return kind == PackedKind::kW4Sym || kind == PackedKind::kW4Asym; }
  // Bytes of one (panel, group) cell.
  int64_t group_bytes() const;
  // Bytes of a whole [n, k] matrix (n padded to panels).
  int64_t matrix_bytes(int64_t n, int64_t k) const { return panels(n) * (k / group) * group_bytes(); }
  static int64_t panels(int64_t n) { return (n + kPanelRows - 1) / kPanelRows; }
  // Offset of the (panel, group) cell within the matrix.
  int64_t cell_offset(int64_t panel, int64_t g, int64_t k) const {
    return (panel * (k / group) + g) * group_bytes();
  }
  // Bits per weight including scales (for reports): e.g. W4 sym g128 = 4.125.
  double bits_per_weight() const;
  // "w4s_g128", "w4a_g64", "w8_g32", "w6_g32", "q4k_g256", "q5k_g256", "q6k_g256", "mxfp4_g32"
  std::string name() const;
};

// Bytes of a packed tensor of `shape`: [N, K] is matrix_bytes(N, K); [E, N, K] is E times
// that (each expert padded to whole panels on its own). 0 for any other rank.
int64_t packed_tensor_bytes(const PackedFormat& f, const std::vector<int64_t>& shape);

// GGUF type ids of the packed formats (a reserved range; recorded in metadata as well).
// Fixed forever (files on disk carry them): id = kFirstPackedType + 3 * kind + log2(G / 32)
//   1000 w4s_g32   1001 w4s_g64   1002 w4s_g128
//   1003 w4a_g32   1004 w4a_g64   1005 w4a_g128
//   1006 w8_g32    1007 w8_g64    1008 w8_g128
//   1009 w6_g32    1010 w6_g64    1011 w6_g128
//   1012 q4k_g256  1013 q6k_g256  1014 q5k_g256
//   1021 mxfp4_g32 (kind 7, G 32: the formula again; 1015-1020 are no type)
DType packed_dtype(const PackedFormat& f);
// The packed format of a dtype id, or false if the id is not one of ours.
bool packed_format_of(DType t, PackedFormat* out);
bool is_packed_dtype(DType t);
// True for the group sizes the W4/W6/W8 layouts support (32, 64, 128; kQ4K, kQ5K and kQ6K
// have 256 only, kMxfp4 32 only).
bool is_valid_group(int64_t group);
// True when `kind` comes with group `group`.
bool is_valid_format(const PackedFormat& f);

// GGUF sizing of our ids, for GgufFile::open(path, packed_gguf_types()). The reader sizes
// a tensor as numel / block_elems * block_bytes, so a block here is one row of one group
// (G elements, group_bytes() / 16 bytes; every cell size is a multiple of 16). That equals
// matrix_bytes(N, K) when N % 16 == 0. When it is not, the padded last panel makes the
// real size larger than the reader's view.nbytes: the bytes are in the file (our writer
// states matrix_bytes), and check_packed_tensor() checks they lie inside the mapping.
bool packed_gguf_block_info(uint32_t type_id, int64_t* block_elems, int64_t* block_bytes);
GgufTypeResolver packed_gguf_types();

// Validates a packed tensor view from a GGUF file before kernels touch it: a packed dtype,
// 2-D [N, K] or 3-D [E, N, K] with K % G == 0, and all packed_tensor_bytes inside `file`.
// Returns its format.
Expected<PackedFormat> check_packed_tensor(const TensorView& t, const MappedFile& file);

}  // namespace edge
