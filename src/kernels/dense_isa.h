// SIMD variants of the dense (F32/F16/BF16) matmuls, attention and elementwise ops. Each
// installer overwrites entries of a KernelTable (a copy of the reference) with versions that
// honour api.h's contracts exactly (same row / task ranges, same scratch sizes). Call one
// only when the CPU (and OS) supports the ISA: dispatch.cpp's select_kernels() does.
#pragma once

#include <vector>

#include "kernels/api.h"

namespace edge {

// Needs Isa::kAvx512 (AVX-512 F/BW/VL/DQ + AVX2 + FMA + F16C).
void install_dense_avx512(KernelTable* t);
// Needs Isa::kAvx2 (AVX2 + FMA + F16C).
void install_dense_avx2(KernelTable* t);
// Needs Isa::kNeon (aarch64 Advanced SIMD): matmuls, attention and the elementwise ops
// (arm_neon/dense_neon.cpp, dense_neon_mm.cpp).
void install_dense_neon(KernelTable* t);

// The Gated DeltaNet entries (conv, recurrent, chunked, gated RMSNorm) of each level
// (kernels/delta_net_blocking.h over the level's primitives); the dense installers call them.
void install_delta_net_avx2(KernelTable* t);
void install_delta_net_avx512(KernelTable* t);
void install_delta_net_neon(KernelTable* t);

// SnakeBeta (kernels/snake_blocking.h) of each level; the dense installers call them.
void install_snake_avx2(KernelTable* t);
void install_snake_avx512(KernelTable* t);
void install_snake_neon(KernelTable* t);

// Every SIMD dense table this CPU runs (narrowest first; the reference not included):
// what the tests compare against the reference.
std::vector<KernelTable> simd_dense_kernels();

}  // namespace edge
