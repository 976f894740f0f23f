// The kernels read what the quant layer writes: matrices from quantize_matrix (quant/
// quantize.h) through every packed-kernel variant agree with quant's own dequantize_row.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/packed_api.h"
#include "quant/quantize.h"

namespace edge {
namespace {

TEST(PackedInterop, QuantizedMatricesMatchQuantDequantizer) {
  const int64_t n = 37, k = 256, tokens = 5;
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> src(n * k), x(tokens * k);
  for (auto& v : src) v = d(rng);
  for (auto& v : x) v = d(rng) * 20.0f;
  RowSource rows = [&](int64_t r, float* out) {
    std::copy(src.begin() + r * k, src.begin() + (r + 1) * k, out);
    return Status::ok_status();
  };
  for (PackedKind kind :
       {PackedKind::kW4Sym, PackedKind::kW4Asym, PackedKind::kW8, PackedKind::kW6}) {
    for (int32_t g : {32, 64, 128}) {
      const PackedFormat f{kind, g};
      std::vector<uint8_t> packed(f.matrix_bytes(n, k));
      ASSERT_EQ(packed_cell_bytes(kind, g), f.group_bytes());
      ASSERT_TRUE(quantize_matrix(f, n, k, rows, packed.data(), packed.size()).ok());
      const PackedMatrixView w{f, packed.data(), n, k};
      const std::vector<float> dense = dequantize_matrix(f, packed.data(), n, k);
      std::vector<float> row(k);
      for (int64_t r = 0; r < n; ++r) {
        reference_packed_kernels().dequant_row(w, r, row.data());
        for (int64_t i = 0; i < k; ++i)
          ASSERT_EQ(row[i], dense[r * k + i]) << f.name() << " r" << r;
      }
      // y = x . dense^T, and sum |x * w| as the error scale.
      std::vector<double> want(tokens * n), mag(tokens * n);
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t r = 0; r < n; ++r)
          for (int64_t i = 0; i < k; ++i) {
            const double p = double{x[t * k + i]} * dense[r * k + i];
            want[t * n + r] += p;
            mag[t * n + r] += std::fabs(p);
          }
      for (const PackedKernels* v : available_packed_kernels()) {
        std::vector<float> y(tokens * n);
        v->a16(kind)(w, x.data(), tokens, 0, PackedFormat::panels(n), y.data());
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], want[i], 2e-6 * mag[i] + 1e-7)
              << v->name << " " << f.name() << " a16 " << i;
        // A8: within the activation rounding (<= half a block scale per element; the
        // blocks' max |x| is < 1.5, so 1/254 of sum |w| bounds it).
        ActivationBuffer buf;
        QuantizedActivations qa = buf.view(tokens, k, g);
        v->quantize_act(x.data(), qa, 0, tokens);
        v->a8(kind)(w, qa, 0, PackedFormat::panels(n), y.data());
        for (int64_t t = 0; t < tokens; ++t)
          for (int64_t r = 0; r < n; ++r) {
            double bound = 0;
            for (int64_t i = 0; i < k; ++i)
              bound += std::fabs(dense[r * k + i]) * qa.scales[t * (k / g) + i / g] / 2;
            ASSERT_LE(std::fabs(y[t * n + r] - want[t * n + r]),
                      bound * 1.001 + 1e-5 * mag[t * n + r])
                << v->name << " " << f.name() << " a8 t" << t << " r" << r;
          }
      }
    }
  }
}

}  // namespace
}  // namespace edge
