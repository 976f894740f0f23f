// Throughput of single instructions on this core, 8 independent copies per loop iteration:
// a dependent scalar add chain (checks the 3.66 GHz the cycle figures assume), maddubs,
// vpaddw, vpbroadcastd from memory, pmaddwd, and 2 broadcasts + 4 maddubs + 4 vpaddw
// together. Min of 15 timed runs.
#include <chrono>
#include <cstdio>

alignas(64) static char Q[4096];
using clk = std::chrono::steady_clock;

template <class F>
void run(F f, int ops, const char* name) {
  const long n = 2000000;
  f(1000);
  double best = 1e9;
  for (int r = 0; r < 15; ++r) {
    const auto t0 = clk::now();
    f(n);
    const double s = std::chrono::duration<double>(clk::now() - t0).count();
    if (s < best) best = s;
  }
  const double cycles = best * 3.66e9 / n;
  std::printf("%-34s %.2f cycles/iteration, %.2f per cycle\n", name, cycles, ops / cycles);
}

#define X8(op) op "2\n" op "3\n" op "4\n" op "5\n" op "6\n" op "7\n" op "8\n" op "9\n"
#define CLOB "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"

int main() {
  run(
      [](long n) {
        long x = 0;
        for (long i = 0; i < n; ++i) asm volatile(X8("add $1,%0 #") : "+r"(x));
      },
      8, "8 dependent scalar adds");
  run(
      [](long n) {
        for (long i = 0; i < n; ++i) asm volatile(X8("vpmaddubsw %%ymm0,%%ymm1,%%ymm")::: CLOB);
      },
      8, "8 maddubs");
  run(
      [](long n) {
        for (long i = 0; i < n; ++i) asm volatile(X8("vpaddw %%ymm0,%%ymm1,%%ymm")::: CLOB);
      },
      8, "8 vpaddw");
  run(
      [](long n) {
        for (long i = 0; i < n; ++i) asm volatile(X8("vpbroadcastd (%0),%%ymm")::"r"(Q) : CLOB);
      },
      8, "8 vpbroadcastd m32");
  run(
      [](long n) {
        for (long i = 0; i < n; ++i) asm volatile(X8("vpmaddwd %%ymm0,%%ymm1,%%ymm")::: CLOB);
      },
      8, "8 pmaddwd");
  run(
      [](long n) {
        for (long i = 0; i < n; ++i)
          asm volatile(
              "vpbroadcastd (%0),%%ymm2\n vpmaddubsw %%ymm0,%%ymm1,%%ymm3\n"
              "vpmaddubsw %%ymm0,%%ymm1,%%ymm4\n vpaddw %%ymm0,%%ymm1,%%ymm5\n"
              "vpaddw %%ymm0,%%ymm1,%%ymm10\n vpbroadcastd 16(%0),%%ymm6\n"
              "vpmaddubsw %%ymm0,%%ymm1,%%ymm7\n vpmaddubsw %%ymm0,%%ymm1,%%ymm8\n"
              "vpaddw %%ymm0,%%ymm1,%%ymm9\n vpaddw %%ymm0,%%ymm1,%%ymm11\n" ::"r"(Q)
              : CLOB);
      },
      10, "2 bcast + 4 maddubs + 4 vpaddw");
}
