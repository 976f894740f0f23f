// Int8 prefill-tile benchmark (issue 11, item 2): GOP/s of one packed A8 matmul variant on
// a large GEMM, beside this core's measured maddubs peak.
//
//   peak   a loop of independent vpmaddubsw ymm (12 chains, nothing else): 32 u8 x s8
//          multiply-adds = 64 int8 ops per instruction. The clock is measured with a chain of
//          dependent 1-cycle integer adds, so the figure is also given per cycle.
//   tile   y [M, N] = x [M, K] . W^T with W packed (w4s/w4a/w8, group G) and x already
//          quantised (the kernel alone, 2*M*N*K ops), panels split between the threads.
//   e2e    the same through packed_matmul_a8 (activation quantisation included).
//
// Build (against a Release build of the kernel library):
//   g++ -O2 -std=c++20 -mavx2 -mfma -mf16c -I src -I build/release/generated \
//     bench/results/2026-12-01-avx2-int8-tile/int8_tile_bench.cpp build/release/libedge_kernels.a \
//     build/release/libedge_quant.a build/release/libedge_formats.a build/release/libedge_core.a \
//     -lfmt -lpthread -o /tmp/int8_tile_bench
// Run: EDGE_MAX_ISA=avx2 /tmp/int8_tile_bench [M K N kind group reps variant]
#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/packed_api.h"

using namespace edge;

namespace {

double now(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Cycles per second of this thread: 1-cycle dependent adds, best of 5.
double clock_hz() {
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const long n = 200'000'000;
    long x = 0;
    const double t0 = now(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < n; i += 8)
      asm volatile(
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
          : "+r"(x));
    best = std::max(best, static_cast<double>(n) / (now(CLOCK_THREAD_CPUTIME_ID) - t0));
  }
  return best;
}

// vpmaddubsw ymm per second: 12 independent chains (latency 3-4 cycles x 2 per cycle needs
// at least 8), written in asm so the compiler can neither spill nor fold them.
double maddubs_per_s() {
  const long iters = 20'000'000;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = now(CLOCK_THREAD_CPUTIME_ID);
    asm volatile(
        "vpcmpeqb %%ymm12, %%ymm12, %%ymm12\n\t"
        "mov %0, %%rcx\n\t"
        "1:\n\t"
        "vpmaddubsw %%ymm12, %%ymm0, %%ymm0\n\tvpmaddubsw %%ymm12, %%ymm1, %%ymm1\n\t"
        "vpmaddubsw %%ymm12, %%ymm2, %%ymm2\n\tvpmaddubsw %%ymm12, %%ymm3, %%ymm3\n\t"
        "vpmaddubsw %%ymm12, %%ymm4, %%ymm4\n\tvpmaddubsw %%ymm12, %%ymm5, %%ymm5\n\t"
        "vpmaddubsw %%ymm12, %%ymm6, %%ymm6\n\tvpmaddubsw %%ymm12, %%ymm7, %%ymm7\n\t"
        "vpmaddubsw %%ymm12, %%ymm8, %%ymm8\n\tvpmaddubsw %%ymm12, %%ymm9, %%ymm9\n\t"
        "vpmaddubsw %%ymm12, %%ymm10, %%ymm10\n\tvpmaddubsw %%ymm12, %%ymm11, %%ymm11\n\t"
        "dec %%rcx\n\tjnz 1b\n\tvzeroupper"
        :
        : "r"(iters)
        : "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
          "xmm10", "xmm11", "xmm12", "cc");
    best = std::max(best, 12.0 * iters / (now(CLOCK_THREAD_CPUTIME_ID) - t0));
  }
  return best;
}

std::vector<uint8_t> random_packed(PackedKind kind, int32_t g, int64_t n, int64_t k) {
  const int64_t cb = packed_cell_bytes(kind, g);
  std::vector<uint8_t> m(PackedFormat::panels(n) * (k / g) * cb);
  std::mt19937 rng(1);
  for (auto& b : m) b = static_cast<uint8_t>(rng());
  const int64_t so = kind == PackedKind::kW8 ? g * 16 : g * 8;
  const int halves = kind == PackedKind::kW8 ? 16 : (kind == PackedKind::kW4Asym ? 32 : 16);
  for (int64_t c = 0; c < static_cast<int64_t>(m.size()) / cb; ++c) {
    for (int r = 0; r < halves; ++r) {
      const uint16_t s = f32_to_f16(0.01f);
      std::memcpy(&m[c * cb + so + 2 * r], &s, 2);
    }
    if (kind == PackedKind::kW8) {  // W8 codes in [-127, 127] with their row sums
      for (int64_t i = 0; i < g * 16; ++i)
        if (m[c * cb + i] == 0x80) m[c * cb + i] = 0x81;
      for (int r = 0; r < 16; ++r) {
        int sum = 0;
        for (int64_t kk = 0; kk < g; ++kk)
          sum += static_cast<int8_t>(m[c * cb + (kk / 4) * 64 + r * 4 + kk % 4]);
        const int16_t s16 = static_cast<int16_t>(sum);
        std::memcpy(&m[c * cb + g * 16 + 32 + 2 * r], &s16, 2);
      }
    }
  }
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t M = argc > 1 ? std::atoll(argv[1]) : 512;
  const int64_t K = argc > 2 ? std::atoll(argv[2]) : 2048;
  const int64_t N = argc > 3 ? std::atoll(argv[3]) : 6144;
  const std::string kind_s = argc > 4 ? argv[4] : "w4s";
  const int32_t G = argc > 5 ? std::atoi(argv[5]) : 128;
  const int reps = argc > 6 ? std::atoi(argv[6]) : 7;
  const std::string want = argc > 7 ? argv[7] : "";
  const PackedKind kind = kind_s == "w8"    ? PackedKind::kW8
                          : kind_s == "w4a" ? PackedKind::kW4Asym
                                            : PackedKind::kW4Sym;
  const PackedKernels* v = &packed_kernels();
  for (const PackedKernels* c : available_packed_kernels())
    if (want == c->name) v = c;
  std::printf("%s\n", packed_kernels_description().c_str());

  const double hz = clock_hz(), mps = maddubs_per_s();
  const double peak = mps * 64 / 1e9;  // 32 multiply-adds = 64 ops per vpmaddubsw ymm
  std::printf("clock %.2f GHz; vpmaddubsw ymm %.2f /cycle; measured 1-core int8 peak %.1f GOP/s"
              " (theory 2/cycle: %.1f GOP/s)\n",
              hz / 1e9, mps / hz, peak, 2 * 64 * hz / 1e9);

  std::vector<uint8_t> wb = random_packed(kind, G, N, K);
  const PackedMatrixView w{PackedFormat{kind, G}, wb.data(), N, K};
  std::vector<float> x(M * K), y(M * N);
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& e : x) e = nd(rng);
  ActivationBuffer buf;
  const QuantizedActivations qa = buf.view(M, K, G);
  v->quantize_act(x.data(), qa, 0, M);
  const auto fn = v->a8(kind);
  const double ops = 2.0 * static_cast<double>(M) * N * K;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    const int64_t panels = PackedFormat::panels(N);
    std::vector<double> tile_s, e2e_s;
    // One thread: this thread's CPU time (the pool runs it on the caller), which leaves out
    // preemption on the shared machine; two threads: wall time.
    const clockid_t clk = threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
    for (int r = 0; r < reps + 1; ++r) {  // interleaved: tile, e2e, tile, e2e, ...; first warms
      double t0 = now(clk);
      pool.run([&](int tid, int nth) {
        auto [p0, p1] = ThreadPool::split(panels, tid, nth);
        if (p0 < p1) fn(w, qa, p0, p1, y.data());
      });
      const double t_tile = now(clk) - t0;
      ActivationBuffer b2;
      t0 = now(clk);
      packed_matmul_a8(*v, w, x.data(), M, y.data(), b2, pool);
      const double t_e2e = now(clk) - t0;
      if (r == 0) continue;
      tile_s.push_back(t_tile);
      e2e_s.push_back(t_e2e);
    }
    const double tm = median(tile_s), tb = *std::min_element(tile_s.begin(), tile_s.end());
    const double tmax = *std::max_element(tile_s.begin(), tile_s.end());
    std::printf(
        "{\"variant\": \"%s\", \"kind\": \"%s\", \"group\": %d, \"M\": %lld, \"K\": %lld, \"N\": "
        "%lld, \"threads\": %d, \"reps\": %d, \"tile_gops_median\": %.1f, \"tile_gops_best\": "
        "%.1f, \"tile_gops_worst\": %.1f, \"e2e_gops_median\": %.1f, \"pct_of_measured_peak\": "
        "%.1f, \"peak_gops_per_core\": %.1f, \"clock_ghz\": %.2f}\n",
        v->name, kind_s.c_str(), G, (long long)M, (long long)K, (long long)N, threads, reps,
        ops / tm / 1e9, ops / tb / 1e9, ops / tmax / 1e9, ops / median(e2e_s) / 1e9,
        100.0 * ops / tm / 1e9 / (peak * threads), peak, hz / 1e9);
    std::fflush(stdout);
  }
}
