// Shared by the hand-built x86 micro-benchmarks (int8_peak.cpp, int8_tile_ports.cpp): the
// core's clock while it runs, and best-of-5 timing. Not part of the build.
#pragma once

#include <chrono>

namespace bench {

// A chain of n dependent 64-bit adds: one retires per cycle, so n / seconds is the clock.
__attribute__((noinline)) inline unsigned long add_chain(unsigned long x, long n) {
  for (long i = 0; i < n / 10; ++i)
    asm volatile(
        "add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n"
        "add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0"
        : "+r"(x));
  return x;
}

// Seconds of f's fastest of 5 runs: a shared machine only ever slows a run.
template <typename F>
double best_seconds(F&& f) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = s < best ? s : best;
  }
  return best;
}

// Cycles per second, measured with n adds.
inline double clock_hz(long n) {
  volatile unsigned long sink = 0;
  return n / best_seconds([&] { sink = add_chain(sink, n); });
}

}  // namespace bench
