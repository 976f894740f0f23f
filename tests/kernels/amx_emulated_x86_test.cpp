// The AMX-INT8 prefill GEMM (src/kernels/x86_avx512/packed_amx_gemm.h) on any x86 CPU: its
// logic (cell unpacking to the VNNI tile layout, tile shapes and configs, token and panel
// tails, cache blocks, per-group and K-quant sub-block epilogues) runs here over the scalar
// emulation of the tile operations (amx_tile_ops.h) and is held to the scalar reference
// bit for bit. Built with plain flags (CMakeLists.txt), so neither side can contract into
// FMAs and the float steps are the reference's own. This does not check the real
// instructions: AmxReal below runs the avx512_amx variant where the CPU (and the OS) allows
// AMX, and is skipped elsewhere, naming what is missing (this development machine, a Zen 3,
// has no AMX).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "core/half.h"
#include "kernels/isa.h"
#include "kernels/x86_avx512/packed_amx_gemm.h"
#include "packed_random_cells.h"

namespace edge {
namespace {

// ---- the emulated tile operations against the instruction's definition -------------------

TEST(AmxEmulatedOps, DpbssdAccumulatesSignedQuadsOverTheConfiguredShape) {
  using Ops = EmulatedTileOps;
  // C [3 x 3 int32] += A [3 x 8 s8] . B [2 x 12 s8], on tiles 0 (C), 4 (A), 6 (B).
  TileConfig cfg;
  cfg.set(0, 3, 12);
  cfg.set(4, 3, 8);
  cfg.set(6, 2, 12);
  Ops::config(cfg);
  std::mt19937 rng(7);
  int8_t a[3][8], b[2][12];
  int32_t c0[3][3];
  for (auto& row : a)
    for (int8_t& v : row) v = static_cast<int8_t>(rng());
  for (auto& row : b)
    for (int8_t& v : row) v = static_cast<int8_t>(rng());
  for (auto& row : c0)
    for (int32_t& v : row) v = static_cast<int32_t>(rng() % 100000) - 50000;
  a[0][0] = -128, b[0][0] = -128;  // the extreme product, 2^14
  Ops::load<0>(c0, sizeof(c0[0]));
  Ops::load<4>(a, sizeof(a[0]));
  Ops::load<6>(b, sizeof(b[0]));
  Ops::dpbssd<0, 4, 6>();
  int32_t got[3][4];
  std::memset(got, 0x5A, sizeof(got));
  Ops::store<0>(got, sizeof(got[0]));
  Ops::release();
  for (int m = 0; m < 3; ++m) {
    for (int n = 0; n < 3; ++n) {
      int64_t want = c0[m][n];
      for (int k = 0; k < 8; ++k) want += int64_t{a[m][k]} * b[k / 4][4 * n + k % 4];
      EXPECT_EQ(got[m][n], want) << "m " << m << " n " << n;
    }
    int32_t guard;
    std::memset(&guard, 0x5A, 4);
    EXPECT_EQ(got[m][3], guard) << "stored past the row's 12 configured bytes";
  }
}

// ---- the GEMM over the emulated tiles against the reference ------------------------------

struct Case {
  PackedKind kind;
  int32_t group;
};


std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (PackedKind kind :
       {PackedKind::kW4Sym, PackedKind::kW4Asym, PackedKind::kW6, PackedKind::kW8})
    for (int32_t g : {32, 64, 128}) cases.push_back({kind, g});
  for (PackedKind kind : {PackedKind::kMxfp4}) cases.push_back({kind, 32});
  for (PackedKind kind : {PackedKind::kQ4K, PackedKind::kQ5K, PackedKind::kQ6K})
    cases.push_back({kind, 256});
  return cases;
}

std::string label(const Case& cs, int64_t rows, int64_t k, int64_t tokens) {
  return "kind " + std::to_string(static_cast<int>(cs.kind)) + " g" + std::to_string(cs.group) +
         " rows " + std::to_string(rows) + " k " + std::to_string(k) + " tokens " +
         std::to_string(tokens);
}

// One matrix and its activations, with the reference's output.
struct Problem {
  std::vector<uint8_t> cells;
  PackedMatrixView w;
  ActivationBuffer buf;
  QuantizedActivations qa;
  std::vector<float> want;
  Problem(const Case& cs, int64_t rows, int64_t k, int64_t tokens) {
    std::mt19937 rng(static_cast<uint32_t>(rows * 131 + tokens * 7 + cs.group + k));
    cells = random_cells(cs.kind, cs.group, rows, k, rng);
    w = PackedMatrixView{PackedFormat{cs.kind, cs.group}, cells.data(), rows, k};
    std::vector<float> x(tokens * k);
    for (auto& v : x) v = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
    qa = buf.view(tokens, k, cs.group);
    quantize_activations(reference_packed_kernels(), x.data(), qa, 0, tokens);
    want.assign(tokens * rows, 0.0f);
    reference_packed_kernels().a8(cs.kind)(w, qa, 0, PackedFormat::panels(rows), want.data());
  }
};

// Token counts around the two 16-token A tiles of a pass (1 tile, 2, partial ones, passes
// of 32 plus a tail); rows: one panel, a panel pair with a short last panel, an odd number
// of panels (a lone last panel); K: several groups, and the G = 32 K steps half a tile.
TEST(AmxEmulated, GemmMatchesReferenceBitForBit) {
  int64_t checked = 0;
  for (const Case& cs : all_cases())
    for (int64_t rows : {16, 23, 72})
      for (int64_t tokens : {1, 5, 16, 17, 33, 50}) {
        const int64_t k = (cs.group == 256 ? 2 : 3) * cs.group;
        Problem pr(cs, rows, k, tokens);
        const amx::GemmFn fn = amx::gemm_for<EmulatedTileOps>(pr.w);
        ASSERT_NE(fn, nullptr) << label(cs, rows, k, tokens);
        const int64_t panels = PackedFormat::panels(rows);
        // The whole range in one cache block, then blocks of one panel pair (block_bytes 1).
        for (int64_t block : {int64_t{1} << 30, int64_t{1}}) {
          std::vector<float> got(tokens * rows, NAN);
          fn(pr.w, pr.qa, 0, panels, got.data(), block);
          for (int64_t i = 0; i < tokens * rows; ++i, ++checked)
            ASSERT_EQ(got[i], pr.want[i])
                << label(cs, rows, k, tokens) << " block " << block << " output " << i;
        }
      }
  EXPECT_GT(checked, 100000);
}

// A thread's panel range [p0, p1) writes exactly those panels' rows.
TEST(AmxEmulated, PanelRangeWritesOnlyItsRows) {
  const Case cs{PackedKind::kW4Sym, 64};
  const int64_t rows = 72, k = 256, tokens = 20;
  Problem pr(cs, rows, k, tokens);
  std::vector<float> got(tokens * rows, NAN);
  amx::gemm_for<EmulatedTileOps>(pr.w)(pr.w, pr.qa, 1, 4, got.data(), 1);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      const float v = got[t * rows + r];
      if (r >= 16 && r < 64)
        ASSERT_EQ(v, pr.want[t * rows + r]) << "token " << t << " row " << r;
      else
        ASSERT_TRUE(std::isnan(v)) << "token " << t << " row " << r << " outside panels [1, 4)";
    }
}

// ---- the real tiles, where this CPU and its OS allow them -------------------------------

TEST(AmxReal, VariantMatchesReference) {
  const std::string missing = isa_missing_features(Isa::kAmx, cpu_info());
  if (!missing.empty())
    GTEST_SKIP() << "avx512_amx not exercised: this CPU lacks " << missing
                 << (cpu_info().capped_by.empty() ? "" : " (" + cpu_info().capped_by + ")")
                 << (cpu_info().os_refused.empty() ? "" : " [" + cpu_info().os_refused + "]");
  const PackedKernels* amx = nullptr;
  for (const PackedKernels* k : available_packed_kernels())
    if (std::string(k->name) == "avx512_amx") amx = k;
  ASSERT_NE(amx, nullptr) << "the CPU runs the amx level but the variant is not available";
  for (const Case& cs : all_cases())
    for (int64_t rows : {23, 72})
      for (int64_t tokens : {3, 16, 17, 50}) {  // 3: the AVX-512 VNNI fallback
        const int64_t k = (cs.group == 256 ? 2 : 3) * cs.group;
        Problem pr(cs, rows, k, tokens);
        std::vector<float> got(tokens * rows, NAN);
        amx->a8(cs.kind)(pr.w, pr.qa, 0, PackedFormat::panels(rows), got.data());
        for (int64_t i = 0; i < tokens * rows; ++i)  // FMA contraction: not bit for bit
          ASSERT_NEAR(got[i], pr.want[i], 1e-4f * (1.0f + std::fabs(pr.want[i])))
              << label(cs, rows, k, tokens) << " output " << i;
      }
}

}  // namespace
}  // namespace edge
