// AMX-INT8 packed kernels: the AVX-512 VNNI table (packed_avx512vnni.cpp) with the int8
// matmuls of prefill (at least kAmxMinTokens activation rows) run on the AMX tiles by
// packed_amx_gemm.h (W4 sym / asym, W8, W6, MXFP4, Q4K, Q5K, Q6K A8; tdpbssd into int32 tiles,
// then the reference's per-group epilogue). Decode and short prefills keep the AVX-512 VNNI
// tiles: an A tile holds 16 tokens, and below that most of each tdpbssd would be idle while
// the cache block's weights still have to be unpacked once.
//
// This development machine (Zen 3) has no AMX: the tile logic was checked against the
// reference over the exact scalar emulation of the tile operations (amx_tile_ops.h,
// tests/kernels/amx_emulated_x86_test.cpp), not on an AMX CPU. kAmxMinTokens = 16 is the
// A tile's height, not a measured crossover.
//
// Compiled with the AVX-512 VNNI level's flags plus -mamx-tile -mamx-int8 (kernels/isa.h:
// selected only where the CPU reports amx-tile and amx-int8, which core/cpu_features_x86.cpp
// reports only once Linux granted this process the tile data state, ARCH_REQ_XCOMP_PERM).
#include "kernels/x86_avx512/amx_tile_ops.h"
#include "kernels/x86_avx512/packed_amx_gemm.h"

namespace edge {
namespace {

constexpr int64_t kAmxMinTokens = 16;

// The AVX-512 VNNI entries the AMX ones fall back to (for few tokens).
const PackedKernels& vnni_table() {
  static const PackedKernels t = [] {
    PackedKernels k = reference_packed_kernels();
    install_packed_avx512vnni(&k);
    return k;
  }();
  return t;
}

// The VNNI table's A8 entry for w's kind (PackedKernels::a8() spelled out here: an inline
// member compiled with these flags could be the copy the linker keeps for portable code).
PackedMatmulA8Fn vnni_a8(PackedKind kind) {
  const PackedKernels& t = vnni_table();
  switch (kind) {
    case PackedKind::kW4Sym:
    case PackedKind::kW4Asym:
      return t.matmul_w4_a8;
    case PackedKind::kW8:
      return t.matmul_w8_a8;
    case PackedKind::kW6:
      return t.matmul_w6_a8;
    case PackedKind::kQ4K:
      return t.matmul_q4k_a8;
    case PackedKind::kQ5K:
      return t.matmul_q5k_a8;
    case PackedKind::kQ6K:
      return t.matmul_q6k_a8;
    case PackedKind::kMxfp4:
      return t.matmul_mxfp4_a8;
  }
  return t.matmul_w4_a8;
}

void matmul_a8(const PackedMatrixView& w, const QuantizedActivations& a, int64_t p0, int64_t p1,
               float* y) {
  if (a.n >= kAmxMinTokens) {
    if (amx::GemmFn fn = amx::gemm_for<AmxTileOps>(w))
      return fn(w, a, p0, p1, y, packed_tiling().block_bytes);
  }
  vnni_a8(w.fmt.kind)(w, a, p0, p1, y);
}

}  // namespace

void install_packed_amx(PackedKernels* t) {
  install_packed_avx512vnni(t);
  t->name = "avx512_amx";
  t->matmul_w4_a8 = matmul_a8;
  t->matmul_w8_a8 = matmul_a8;
  t->matmul_w6_a8 = matmul_a8;
  t->matmul_mxfp4_a8 = matmul_a8;
  t->matmul_q4k_a8 = matmul_a8;
  t->matmul_q5k_a8 = matmul_a8;
  t->matmul_q6k_a8 = matmul_a8;
}

}  // namespace edge
