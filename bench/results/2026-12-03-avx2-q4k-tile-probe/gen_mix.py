"""Writes mix.cpp to stdout: the instruction mix of one 64-byte block of the AVX2 Q4K prefill
tile for 4 tokens, without its dependencies on memory or the fold: 4 plane loads, 8
broadcasts, 16 maddubs, 16 vpaddw into 8 accumulators. The program prints cycles per block
(3.66 GHz assumed; min of 15 timed runs)."""


def block(bcast_from_memory, plane_loads):
    lines = []
    for step in range(2):
        if plane_loads:
            lines += [f"vmovdqu {64 * step}(%0),%%ymm0", f"vmovdqu {64 * step + 32}(%0),%%ymm1"]
        for t in range(4):
            lines.append(f"vpbroadcastd {4 * t + 16 * step}(%1),%%ymm2" if bcast_from_memory
                         else "vpshufd $0,%%ymm15,%%ymm2")
            lines += ["vpmaddubsw %%ymm2,%%ymm0,%%ymm3", f"vpaddw %%ymm3,%%ymm{4 + 2 * t},%%ymm{4 + 2 * t}",
                      "vpmaddubsw %%ymm2,%%ymm1,%%ymm14", f"vpaddw %%ymm14,%%ymm{5 + 2 * t},%%ymm{5 + 2 * t}"]
    return "\\n".join(lines)


CLOBBERS = ",".join(f'"xmm{i}"' for i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 14])
print("""#include <chrono>
#include <cstdio>
alignas(64) static char W[4096];
alignas(64) static char Q[4096];
using clk = std::chrono::steady_clock;
template <class F> void run(F f, const char* name) {
  const long n = 2000000;
  f(1000);
  double best = 1e9;
  for (int r = 0; r < 15; ++r) {
    auto t0 = clk::now();
    f(n);
    double s = std::chrono::duration<double>(clk::now() - t0).count();
    if (s < best) best = s;
  }
  printf("%-40s %.2f cycles/block\\n", name, best * 3.66e9 / n);
}
int main() {""")
for name, bcast, loads in [("loads+bcast mem", True, True), ("no plane loads", True, False),
                           ("bcast as vpshufd", False, True)]:
    print(f'  run([](long n) {{ for (long i = 0; i < n; ++i) asm volatile("{block(bcast, loads)}" '
          f':: "r"(W), "r"(Q) : {CLOBBERS}); }}, "{name}");')
print("}")
