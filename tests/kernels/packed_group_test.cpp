// matmul_group (and matmul, which is a group of one): every weight's result must equal a
// direct single-threaded kernel call over all its rows, bit for bit, for packed weights
// (int8 and f32 activations, mixed group sizes), dense weights and mixtures, at several
// thread counts and token counts (panel splits land mid-weight and across weights).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/packed_api.h"
#include "quant/packed.h"

namespace edge {
namespace {

// A weight with its storage: packed (random codes, small positive scales) or dense.
struct Weight {
  std::vector<uint8_t> bytes;
  TensorView view;
};

Weight packed_weight(PackedKind kind, int32_t g, int64_t rows, int64_t in, uint32_t seed) {
  Weight w;
  const PackedFormat fmt{kind, g};
  const int64_t cb = packed_cell_bytes(kind, g);
  w.bytes.resize(PackedFormat::panels(rows) * (in / g) * cb);
  std::mt19937 rng(seed);
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng() & (kind == PackedKind::kW8 ? 0x3F : 0xFF));
  const int64_t so = kind == PackedKind::kW8 ? g * 16 : g * 8;
  for (int64_t c = 0; c < static_cast<int64_t>(w.bytes.size()) / cb; ++c)
    for (int r = 0; r < 16 * (kind == PackedKind::kW4Asym ? 2 : 1); ++r) {
      const uint16_t s = f32_to_f16(0.001f * static_cast<float>(1 + rng() % 50));
      std::memcpy(&w.bytes[c * cb + so + 2 * r], &s, 2);
    }
  w.view.dtype = packed_dtype(fmt);
  w.view.shape = {rows, in};
  w.view.data = w.bytes.data();
  w.view.nbytes = w.bytes.size();
  return w;
}

Weight dense_weight(DType t, int64_t rows, int64_t in, uint32_t seed) {
  Weight w;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  const size_t es = t == DType::F32 ? 4 : 2;
  w.bytes.resize(rows * in * es);
  for (int64_t i = 0; i < rows * in; ++i) {
    const float v = u(rng);
    if (t == DType::F32) {
      std::memcpy(&w.bytes[i * 4], &v, 4);
    } else {
      const uint16_t h = t == DType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
      std::memcpy(&w.bytes[i * 2], &h, 2);
    }
  }
  w.view.dtype = t;
  w.view.shape = {rows, in};
  w.view.data = w.bytes.data();
  w.view.nbytes = w.bytes.size();
  return w;
}

// y [n, rows] from one direct kernel call over the whole weight (no driver, one thread).
std::vector<float> direct(const KernelTable& k, const TensorView& w, const float* x, int64_t n) {
  const int64_t rows = w.shape[0], in = w.shape[1];
  std::vector<float> y(n * rows);
  if (is_packed_dtype(w.dtype)) {
    const PackedKernels& pk = packed_kernels();
    const PackedMatrixView v = packed_matrix_view(w);
    if (k.packed_int8_activations) {
      ActivationBuffer buf;
      const QuantizedActivations qa = buf.view(n, in, v.fmt.group);
      pk.quantize_act(x, qa, 0, n);
      pk.a8(v.fmt.kind)(v, qa, 0, PackedFormat::panels(rows), y.data());
    } else {
      pk.a16(v.fmt.kind)(v, x, n, 0, PackedFormat::panels(rows), y.data());
    }
    return y;
  }
  std::vector<float> scratch(kMatmulRowTile * in);
  auto fn = w.dtype == DType::F32 ? k.matmul_f32 : w.dtype == DType::F16 ? k.matmul_f16 : k.matmul_bf16;
  fn(x, n, in, w.data, w.nbytes / rows, rows, 0, rows, y.data(), scratch.data());
  return y;
}

void check_group(const std::vector<const Weight*>& ws, const std::string& what) {
  const int64_t in = ws[0]->view.shape[1];
  for (bool a8 : {true, false}) {
    KernelTable k = select_kernels();
    k.packed_int8_activations = a8;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (int64_t n : {1, 3, 17}) {
        std::mt19937 rng(static_cast<uint32_t>(n * 7 + threads));
        std::normal_distribution<float> d(0.0f, 1.0f);
        std::vector<float> x(n * in);
        for (auto& v : x) v = d(rng);
        std::vector<const TensorView*> views;
        std::vector<std::vector<float>> ys;
        std::vector<float*> yp;
        for (const Weight* w : ws) {
          views.push_back(&w->view);
          ys.emplace_back(n * w->view.shape[0] + 16, 777.0f);  // a guard tail
        }
        for (auto& y : ys) yp.push_back(y.data());
        matmul_group(k, x.data(), n, views, yp, pool);
        for (size_t i = 0; i < ws.size(); ++i) {
          const std::string at = what + " w" + std::to_string(i) + " a8=" + std::to_string(a8) +
                                 " t=" + std::to_string(threads) + " n=" + std::to_string(n);
          const std::vector<float> want = direct(k, ws[i]->view, x.data(), n);
          for (size_t j = want.size(); j < ys[i].size(); ++j) ASSERT_EQ(ys[i][j], 777.0f) << at;
          ys[i].resize(want.size());
          EXPECT_EQ(ys[i], want) << at;
          // matmul() of the one weight agrees as well.
          std::vector<float> one(want.size());
          matmul(k, x.data(), n, ws[i]->view, one.data(), pool);
          EXPECT_EQ(one, want) << at << " (matmul)";
        }
      }
    }
  }
}

TEST(MatmulGroup, PackedQkvSameGroup) {
  const Weight q = packed_weight(PackedKind::kW4Sym, 128, 96, 256, 1);
  const Weight kk = packed_weight(PackedKind::kW4Sym, 128, 40, 256, 2);
  const Weight v = packed_weight(PackedKind::kW4Sym, 128, 33, 256, 3);
  check_group({&q, &kk, &v}, "w4s qkv");
}

TEST(MatmulGroup, PackedMixedKindsAndGroups) {
  const Weight a = packed_weight(PackedKind::kW4Asym, 64, 48, 256, 4);
  const Weight b = packed_weight(PackedKind::kW8, 32, 20, 256, 5);
  const Weight c = packed_weight(PackedKind::kW4Sym, 128, 16, 256, 6);
  check_group({&a, &b, &c}, "mixed");
}

TEST(MatmulGroup, DenseAndMixedDensePacked) {
  const Weight a = dense_weight(DType::F16, 37, 128, 7);
  const Weight b = dense_weight(DType::F32, 16, 128, 8);
  const Weight c = dense_weight(DType::BF16, 5, 128, 9);
  check_group({&a, &b, &c}, "dense");
  const Weight p = packed_weight(PackedKind::kW4Sym, 32, 50, 128, 10);
  check_group({&a, &p}, "dense+packed");
}

TEST(MatmulGroup, GateUpLikeLargeSplitsByBytes) {
  const Weight gate = packed_weight(PackedKind::kW4Sym, 128, 384, 512, 11);
  const Weight up = packed_weight(PackedKind::kW4Sym, 128, 384, 512, 12);
  check_group({&gate, &up}, "gate/up");
}

// matmul_jobs: the experts of a MoE layer, each with its own input and token count (0 for
// an expert no token chose, 1 at decode, uneven at prefill), in one region: each job equals
// its direct kernel call bit for bit, and a job with no tokens writes nothing.
TEST(MatmulJobs, ExpertsWithTheirOwnInputsAndTokenCounts) {
  std::vector<Weight> ws;
  for (uint32_t e = 0; e < 6; ++e)
    ws.push_back(e % 3 == 2 ? dense_weight(DType::F16, 40, 128, 20 + e)
                            : packed_weight(e % 2 ? PackedKind::kW8 : PackedKind::kW4Sym,
                                            e % 2 ? 32 : 64, 48, 128, 20 + e));
  for (bool a8 : {true, false}) {
    KernelTable k = select_kernels();
    k.packed_int8_activations = a8;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (const std::vector<int64_t>& counts :
           {std::vector<int64_t>{1, 0, 1, 1, 0, 1}, std::vector<int64_t>{9, 0, 3, 17, 1, 2}}) {
        std::mt19937 rng(static_cast<uint32_t>(threads * 31 + counts[0]));
        std::normal_distribution<float> d(0.0f, 1.0f);
        std::vector<std::vector<float>> xs, ys;
        std::vector<MatmulJob> jobs;
        for (size_t e = 0; e < ws.size(); ++e) {
          xs.emplace_back(static_cast<size_t>(std::max<int64_t>(counts[e], 1) * 128));
          for (float& v : xs.back()) v = d(rng);
          ys.emplace_back(static_cast<size_t>(counts[e] * ws[e].view.shape[0] + 16), 777.0f);
        }
        for (size_t e = 0; e < ws.size(); ++e)
          jobs.push_back({&ws[e].view, xs[e].data(), counts[e], ys[e].data()});
        matmul_jobs(k, jobs, pool);
        for (size_t e = 0; e < ws.size(); ++e) {
          const std::string at = "expert " + std::to_string(e) + " a8=" + std::to_string(a8) +
                                 " t=" + std::to_string(threads) + " n=" + std::to_string(counts[e]);
          const size_t len = static_cast<size_t>(counts[e] * ws[e].view.shape[0]);
          for (size_t j = len; j < ys[e].size(); ++j) ASSERT_EQ(ys[e][j], 777.0f) << at;
          if (counts[e] == 0) continue;
          ys[e].resize(len);
          EXPECT_EQ(ys[e], direct(k, ws[e].view, xs[e].data(), counts[e])) << at;
        }
      }
    }
  }
}

// The pool's workers spin, then sleep; a region after a long idle must wake them (no lost
// wake-up), and back-to-back regions must each run every thread exactly once.
TEST(ThreadPoolRegions, WakesSleepingWorkersAndCountsEveryRegion) {
  ThreadPool pool(3);
  std::atomic<int> calls{0};
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 2000; ++i) pool.run([&](int, int) { calls.fetch_add(1); });
    std::this_thread::sleep_for(std::chrono::milliseconds(round == 3 ? 300 : 30));
  }
  EXPECT_EQ(calls.load(), 4 * 2000 * 3);
}

}  // namespace
}  // namespace edge
