// Kernels over the packed weight layout of quant/packed.h (panels of 16 rows, groups of G
// along K; W4 symmetric/asymmetric, W8). One function table per ISA variant: the scalar
// reference (ref/packed_ref.cpp), AVX2 (+AVX-VNNI or maddubs), AVX-512 VNNI and AMX-INT8
// (prefill int8 matmuls on the AMX tiles, the rest AVX-512 VNNI's). W6 has its
// own entries; a variant that does not install them keeps the reference's (slow, correct).
// packed_kernels() picks one variant once, from the CPU's features and a short timing.
//
// Every matmul computes y[t, r] = sum_k x[t, k] * W[r, k] for tokens t in [0, n) and the
// rows of panels [p0, p1) (rows 16*p0 .. min(16*p1, W.n)); the caller splits panels among
// threads. y is [n, W.n] row-major (padded rows of the last panel are never written).
// n = 1 is decode (a GEMV, bound by weight bytes); n > 1 is prefill (a GEMM: the SIMD
// variants keep a weight block in registers across a tile of tokens).
//
// A8 entries take activations quantised to int8 per row in blocks of `group` along K, one
// scale per (row, block), plus the block's sum of codes (for the W4 -8 offset / asymmetric
// min, the W6 -32 offset and the W8 +128 correction). The activation block must equal the
// weight group. Q4K takes blocks of 256 (one scale, as GGML's Q8_K) with the sums of each
// 32 codes (its mins are per sub-block of 32), as does Q5K; Q6K the sums of each 16. MXFP4
// takes blocks of 32 with their sums (its nibbles become int8 by a table lookup: the E2M1
// values doubled, -12..12; the x86 tiles look up value + 12 as u8 for vpdpbusd / maddubs and
// take 12 * sum(q) off per block, as W4 sym does with 8).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "quant/packed.h"

namespace edge {

class ThreadPool;

// A packed matrix [n, k] (n logical rows; storage is padded to whole panels).
struct PackedMatrixView {
  PackedFormat fmt;
  const uint8_t* data = nullptr;
  int64_t n = 0, k = 0;
};

// Activations [n, k] quantised per (row, block of `group`): x ~= q * scales[t * (k/group) + b].
// sums[t * (k/group) + b] = sum of the block's q codes.
struct QuantizedActivations {
  int8_t* q = nullptr;      // [n, k]
  float* scales = nullptr;  // [n, k / group]
  int32_t* sums = nullptr;  // [n, k / group]
  // [n, k / 32]: sum of each 32 codes, for Q4K / Q5K weights (group 256), else null. Filled by
  // quantize_activations() after the variant's quantize_act.
  int16_t* sums32 = nullptr;
  int64_t n = 0, k = 0;
  int32_t group = 0;
  // [n, k / 16]: sum of each 16 codes, for Q6K weights (group 256, beside sums32), else null.
  int16_t* sums16 = nullptr;
};

// Owns the buffers of a QuantizedActivations (reused across calls; grows only).
struct ActivationBuffer {
  std::vector<int8_t> q;
  std::vector<float> scales;
  std::vector<int32_t> sums;
  std::vector<int16_t> sums32, sums16;
  // With group 256 (Q4K, Q6K) the view carries sums32 and sums16 too.
  QuantizedActivations view(int64_t n, int64_t k, int32_t group);
};

// Bytes of one (panel, group) cell; same as PackedFormat::group_bytes(), but constexpr and
// header-only so kernels do not depend on the quant library's object code.
constexpr int64_t packed_cell_bytes(PackedKind kind, int32_t group) {
  return kind == PackedKind::kW8       ? group * 16 + 64   // codes, scales, sums
         : kind == PackedKind::kW4Asym ? group * 8 + 64    // codes, scales, mins
         : kind == PackedKind::kW6     ? group * 12 + 32   // nibbles, high bits, scales
         : kind == PackedKind::kQ4K    ? group * 8 + 320   // nibbles, sc, m, d, dmin
         : kind == PackedKind::kQ6K    ? group * 12 + 288  // 6-bit codes, sc, d
         : kind == PackedKind::kQ5K    ? group * 10 + 320  // nibbles + 1 bit, sc, m, d, dmin
         : kind == PackedKind::kMxfp4  ? group * 8 + 16    // E2M1 nibbles, E8M0 bytes
                                       : group * 8 + 32;    // codes, scales
}

// Quantises rows [t0, t1) of x [a.n, a.k] into a (buffers sized by the caller): per block,
// scale = max|x| / 127, q = round(x / scale) (an all-zero block gets scale 0, codes 0).
using QuantizeActFn = void (*)(const float* x, const QuantizedActivations& a, int64_t t0,
                               int64_t t1);
// y[n, w.n] (panels [p0, p1)) = x[n, w.k] . W^T with f32 activations.
using PackedMatmulA16Fn = void (*)(const PackedMatrixView& w, const float* x, int64_t n, int64_t p0,
                                   int64_t p1, float* y);
// The same with int8 activations (a.k == w.k, a.group == w.fmt.group).
using PackedMatmulA8Fn = void (*)(const PackedMatrixView& w, const QuantizedActivations& a,
                                  int64_t p0, int64_t p1, float* y);
// out [w.k] = row `row` of W in f32 (embedding lookup, tied head checks).
using DequantRowFn = void (*)(const PackedMatrixView& w, int64_t row, float* out);

struct PackedKernels {
  const char* name = "ref";
  QuantizeActFn quantize_act = nullptr;
  PackedMatmulA16Fn matmul_w4_a16 = nullptr;  // kW4Sym and kW4Asym
  PackedMatmulA8Fn matmul_w4_a8 = nullptr;
  PackedMatmulA16Fn matmul_w8_a16 = nullptr;  // kW8
  PackedMatmulA8Fn matmul_w8_a8 = nullptr;
  PackedMatmulA16Fn matmul_w6_a16 = nullptr;  // kW6
  PackedMatmulA8Fn matmul_w6_a8 = nullptr;
  PackedMatmulA16Fn matmul_q4k_a16 = nullptr;  // kQ4K
  PackedMatmulA8Fn matmul_q4k_a8 = nullptr;
  PackedMatmulA16Fn matmul_q6k_a16 = nullptr;  // kQ6K
  PackedMatmulA8Fn matmul_q6k_a8 = nullptr;
  PackedMatmulA16Fn matmul_q5k_a16 = nullptr;  // kQ5K
  PackedMatmulA8Fn matmul_q5k_a8 = nullptr;
  DequantRowFn dequant_row = nullptr;  // any kind
  PackedMatmulA16Fn matmul_mxfp4_a16 = nullptr;  // kMxfp4
  PackedMatmulA8Fn matmul_mxfp4_a8 = nullptr;

  PackedMatmulA16Fn a16(PackedKind k) const {
    return k == PackedKind::kW8      ? matmul_w8_a16
           : k == PackedKind::kW6    ? matmul_w6_a16
           : k == PackedKind::kQ4K   ? matmul_q4k_a16
           : k == PackedKind::kQ6K   ? matmul_q6k_a16
           : k == PackedKind::kQ5K   ? matmul_q5k_a16
           : k == PackedKind::kMxfp4 ? matmul_mxfp4_a16
                                     : matmul_w4_a16;
  }
  PackedMatmulA8Fn a8(PackedKind k) const {
    return k == PackedKind::kW8      ? matmul_w8_a8
           : k == PackedKind::kW6    ? matmul_w6_a8
           : k == PackedKind::kQ4K   ? matmul_q4k_a8
           : k == PackedKind::kQ6K   ? matmul_q6k_a8
           : k == PackedKind::kQ5K   ? matmul_q5k_a8
           : k == PackedKind::kMxfp4 ? matmul_mxfp4_a8
                                     : matmul_w4_a8;
  }
};

// The parameters of the loop nest every SIMD variant shares (kernels/packed_blocking.h),
// chosen once per CPU from its cache sizes.
struct PackedTiling {
  // Weights per cache block of panels during prefill: half a core's L2, so the block and a
  // token tile's activations stay there while every tile passes over it (256 KiB when the
  // L2 size is unknown; clamped to [64 KiB, 2 MiB]).
  int64_t block_bytes = 256 << 10;
  // How far ahead of its reads a tile prefetches the weights it will read next. 1 KiB
  // measured best on the Zen 3 (decode +15% over none; 512 B-2 KiB within noise);
  // EDGE_PREFETCH_BYTES=<n> overrides it (0: none).
  int64_t prefetch_bytes = 1024;
  std::string why;  // one line for `edge-infer devices`
};
// `caches` as read from sysfs, `prefetch_env` the EDGE_PREFETCH_BYTES value (or null).
PackedTiling packed_tiling_for(const CacheSizes& caches, const char* prefetch_env);
// packed_tiling_for(cpu_info().caches, getenv("EDGE_PREFETCH_BYTES")), read once.
const PackedTiling& packed_tiling();

// The scalar table (always available, the tests' reference).
const PackedKernels& reference_packed_kernels();
// The variant the engine uses: chosen once (CPU features, then a few ms of timing).
const PackedKernels& packed_kernels();
// True when the engine's variant has SIMD kernels for Q4K cells (every x86 and aarch64
// SIMD variant); elsewhere (the reference alone) a GGUF Q4_K repacks into w4a_g32.
bool packed_kernels_run_q4k();
// The same for Q6K cells (every x86 and aarch64 SIMD variant); elsewhere a GGUF Q6_K is
// requantised into w6_g32.
bool packed_kernels_run_q6k();
// The same for Q5K cells (every x86 and aarch64 SIMD variant); elsewhere a GGUF Q5_K is
// requantised into w6_g32.
bool packed_kernels_run_q5k();
// kern.quantize_act over rows [t0, t1), then a.sums32 and a.sums16 where the view has them.
void quantize_activations(const PackedKernels& kern, const float* x, const QuantizedActivations& a,
                          int64_t t0, int64_t t1);
// Every variant this CPU can run, reference first (for tests and benchmarks).
std::vector<const PackedKernels*> available_packed_kernels();
// Human-readable: CPU name, features, the chosen variant per op and why (`edge-infer devices`).
std::string packed_kernels_description();

// The packed view of a 2-D packed TensorView (CHECKs the dtype; the loader validated it).
PackedMatrixView packed_matrix_view(const TensorView& w);
// Expert e of a 3-D packed TensorView [E, N, K] (quant/packed.h: E matrices back to back,
// expert e's bytes from e * matrix_bytes(N, K)) as an [N, K] view; CHECKs the dtype and e.
PackedMatrixView packed_expert_view(const TensorView& w, int64_t e);

// Parallel drivers over a pool: y[n, w.n] = x[n, w.k] . W^T. The A8 form quantises x into
// buf first (rows split among threads), then splits panels.
void packed_matmul_a16(const PackedKernels& kern, const PackedMatrixView& w, const float* x,
                       int64_t n, float* y, ThreadPool& pool);
void packed_matmul_a8(const PackedKernels& kern, const PackedMatrixView& w, const float* x,
                      int64_t n, float* y, ActivationBuffer& buf, ThreadPool& pool);

// ISA variants, defined in their own files: each overwrites entries of *t (a copy of the
// reference table). Only call them after checking the CPU (available_packed_kernels() does,
// through kernels/isa.h).
void install_packed_avx512vnni(PackedKernels* t);  // x86_avx512/packed_avx512vnni.cpp
// x86_avx512/packed_amx.cpp: the AVX-512 VNNI table with AMX-INT8 tiles for prefill A8.
void install_packed_amx(PackedKernels* t);
void install_packed_q4k_avx512vnni(
    PackedKernels* t);  // x86_avx512/packed_q4k_avx512vnni.cpp: Q4K, Q5K, Q6K
void install_packed_avxvnni(PackedKernels* t);     // x86_avx2/packed_avxvnni.cpp
void install_packed_avx2(PackedKernels* t);        // x86_avx2/packed_avx2.cpp
void install_packed_neon(PackedKernels* t);        // arm_neon/packed_neon.cpp
void install_packed_dotprod(PackedKernels* t);     // arm_dotprod/packed_dotprod.cpp
void install_packed_i8mm(PackedKernels* t);        // arm_i8mm/packed_i8mm.cpp

}  // namespace edge
