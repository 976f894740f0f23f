// Hand-built timing of the packed kernels (not part of the test suite). Decode: GEMV (n=1)
// GB/s of weight bytes, cycling through enough copies of the matrix to defeat the caches.
// Prefill: GEMM n=64, GFLOP/s (2*n*N*K per call). Both over a ThreadPool (default 2).
// Build: see the report of issue 3 (g++ -O2 against a Release build of edge_kernels).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/packed_api.h"

using namespace edge;

static std::vector<uint8_t> random_packed(PackedKind kind, int32_t g, int64_t n, int64_t k) {
  const int64_t cb = packed_cell_bytes(kind, g);
  std::vector<uint8_t> m(PackedFormat::panels(n) * (k / g) * cb);
  std::mt19937 rng(1);
  for (auto& b : m) b = static_cast<uint8_t>(rng() & (kind == PackedKind::kW8 ? 0x3F : 0xFF));
  // Scales (and mins) start after the codes; Q4K's and Q5K's 6-bit sc and m come first, then
  // d, dmin.
  const bool q45 = kind == PackedKind::kQ4K || kind == PackedKind::kQ5K;
  const int64_t so = kind == PackedKind::kW8           ? g * 16
                     : kind == PackedKind::kW6         ? g * 12
                     : q45 || kind == PackedKind::kQ6K ? 256
                                                       : g * 8;
  const uint16_t s = f32_to_f16(0.01f);
  for (int64_t c = 0; c < static_cast<int64_t>(m.size()) / cb; ++c) {
    if (kind == PackedKind::kMxfp4) {  // E8M0 bytes: 2^(120 - 128) per row
      for (int r = 0; r < 16; ++r) m[c * cb + 256 + r] = 120;
      continue;
    }
    if (q45)
      for (int i = 0; i < 256; ++i) m[c * cb + i] &= 0x3F;
    const bool two = kind == PackedKind::kW4Asym || q45;
    for (int r = 0; r < (two ? 32 : 16); ++r) std::memcpy(&m[c * cb + so + 2 * r], &s, 2);
  }
  return m;
}

int main(int argc, char** argv) {
  // packed_bench [threads] [kind: w4s|w4a|w8|w6|q4k|q5k|q6k|mxfp4|all] [variant name|all] [N or 0
  // for all shapes]
  //              [group 32|64|128] [a8|a16|both]
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::string kind_f = argc > 2 ? argv[2] : "all", var_f = argc > 3 ? argv[3] : "all";
  const int64_t n_f = argc > 4 ? std::atoll(argv[4]) : 0;
  const int32_t g_arg = argc > 5 ? std::atoi(argv[5]) : 128;
  const std::string act_f = argc > 6 ? argv[6] : "both";
  ThreadPool pool(threads);
  const int64_t shapes[][2] = {{2048, 2048}, {6144, 2048}, {2048, 6144}, {32000, 2048}};
  std::printf("%s\nthreads %d\n", packed_kernels_description().c_str(), threads);
  auto kname = [](PackedKind k) {
    return k == PackedKind::kW8       ? "w8"
           : k == PackedKind::kW4Asym ? "w4a"
           : k == PackedKind::kW6     ? "w6"
           : k == PackedKind::kQ4K    ? "q4k"
           : k == PackedKind::kQ5K    ? "q5k"
           : k == PackedKind::kQ6K    ? "q6k"
           : k == PackedKind::kMxfp4  ? "mxfp4"
                                      : "w4s";
  };
  for (PackedKind kind :
       {PackedKind::kW4Sym, PackedKind::kW4Asym, PackedKind::kW8, PackedKind::kW6, PackedKind::kQ4K,
        PackedKind::kQ5K, PackedKind::kQ6K, PackedKind::kMxfp4}) {
    const bool in_all = kind == PackedKind::kW4Sym || kind == PackedKind::kW8;
    if (kind_f != (kind_f == "all" && in_all ? "all" : kname(kind))) continue;
    const bool super =
        kind == PackedKind::kQ4K || kind == PackedKind::kQ5K || kind == PackedKind::kQ6K;
    const int32_t g = super ? 256 : kind == PackedKind::kMxfp4 ? 32 : g_arg;
    for (auto& sh : shapes) {
      const int64_t N = sh[0], K = sh[1];
      if (n_f != 0 && n_f != N) continue;
      std::vector<uint8_t> one = random_packed(kind, g, N, K);
      const int64_t copies = std::max<int64_t>(1, (512ll << 20) / static_cast<int64_t>(one.size()));
      std::vector<uint8_t> all(one.size() * copies);
      for (int64_t c = 0; c < copies; ++c)
        std::memcpy(&all[c * one.size()], one.data(), one.size());
      std::vector<float> x(64 * K), y(64 * N);
      std::mt19937 rng(2);
      for (auto& v : x) v = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
      ActivationBuffer buf;
      for (const PackedKernels* v : available_packed_kernels()) {
        if (std::strcmp(v->name, "ref") == 0) continue;
        if (var_f != "all" && var_f != v->name) continue;
        for (bool a8 : {true, false}) {
          if (act_f != "both" && act_f != (a8 ? "a8" : "a16")) continue;
          auto call = [&](int64_t c, int64_t n) {
            PackedMatrixView w{PackedFormat{kind, g}, all.data() + c * one.size(), N, K};
            if (a8)
              packed_matmul_a8(*v, w, x.data(), n, y.data(), buf, pool);
            else
              packed_matmul_a16(*v, w, x.data(), n, y.data(), pool);
          };
          // Best-of timing (the build machine is shared: the minimum filters preemption).
          // One thread: this thread's CPU time, which excludes preemption (the machine is
          // shared); more threads: wall time.
          auto now = [&] {
            timespec ts;
            clock_gettime(threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
            return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
          };
          auto best_of = [&](int64_t n, bool cycle) {
            double best = 1e30, total = 0;
            call(0, n);
            for (int64_t it = 0; it < 2000 && (it < 10 || total < 0.4); ++it) {
              const double t0 = now();
              call(cycle ? it % copies : 0, n);
              double el = now() - t0;
              best = std::min(best, el);
              total += el;
            }
            return best;
          };
          const double gbs = static_cast<double>(one.size()) /
                             best_of(1, std::getenv("PACKED_BENCH_HOT") == nullptr) / 1e9;
          const double gf = 2.0 * 64 * N * K / best_of(64, false) / 1e9;
          std::printf(
              "%-4s g%-3d %-12s %-4s N=%-6lld K=%-5lld decode %6.1f GB/s (%7.1f us)  prefill64 "
              "%7.1f GFLOP/s\n",
              kname(kind), g, v->name, a8 ? "a8" : "a16", (long long)N, (long long)K, gbs,
              1e6 * one.size() / (gbs * 1e9), gf);
          std::fflush(stdout);
        }
      }
    }
  }
}
