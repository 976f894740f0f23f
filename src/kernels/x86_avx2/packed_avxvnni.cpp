// AVX-VNNI packed kernels: the integer tiles of packed_avx2_tiles.h (decode) and
// packed_avx2_gemm.h (prefill) with vpdpbusd (VEX encoding, Alder Lake and later, Zen 5) in
// place of maddubs + madd. W8A8 feeds vpdpbusd u8 = q + 128 and subtracts 128 * the stored
// row code sum. The float (A16) paths and the activation quantiser are the plain AVX2 ones.
// This development machine (Zen 3) lacks AVX-VNNI: the tiles here were checked against the
// reference with vpdpbusd emulated bit-exactly on AVX2, not on such a CPU.
//
// Compiled with -mavx2 -mfma -mf16c -mavxvnni (kernels/isa.h: selected only where the CPU
// reports avxvnni).
#include "kernels/x86_avx2/packed_avx2_gemm.h"

namespace edge {

void install_packed_avxvnni(PackedKernels* t) {
  install_packed_avx2(t);
  t->name = "avx2_vnni";
  t->matmul_w4_a8 = w4_a8<true>;
  t->matmul_w8_a8 = w8_a8<true>;
  t->matmul_w6_a8 = w6_a8<true>;
  t->matmul_q4k_a8 = q4k_a8<true>;
  t->matmul_q6k_a8 = q6k_a8<true>;
  t->matmul_q5k_a8 = q5k_a8<true>;
  t->matmul_mxfp4_a8 = mxfp4_a8<true>;
}

}  // namespace edge
