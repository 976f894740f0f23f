// Times the dense attention kernel of every SIMD table this CPU has (kernels/api.h), one
// thread, F16 KV cache, 16 query heads over 8 KV heads, head dim 128, matrix in cache.
// Prefill: nq queries over nq keys (causal); decode (third argument "d"): one query at the
// last of nq positions. Prints the median and minimum of `reps` calls, GFLOP/s at the median
// (4 * head_dim flop per query-key pair per head) and a checksum of the output.
//   attention_bench [nq=512] [reps=10] [d] [table name]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/api.h"
#include "kernels/dense_isa.h"

using namespace edge;

int main(int argc, char** argv) {
  const int64_t nq = argc > 1 ? std::atoi(argv[1]) : 512;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 10;
  const bool decode = argc > 3 && argv[3][0] == 'd';
  const char* only = argc > 4 ? argv[4] : nullptr;
  const int32_t nh = 16, nkv = 8, hd = 128;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<float> q(nq * nh * hd), out(q.size()), row(nkv * hd);
  const int64_t row_bytes = kv_row_bytes(KvType::kF16, nkv, hd);
  std::vector<uint8_t> kc(nq * row_bytes), vc(nq * row_bytes);
  for (auto& x : q) x = dist(rng);
  for (int64_t p = 0; p < nq; ++p) {
    for (auto& x : row) x = dist(rng);
    kv_store_row(KvType::kF16, row.data(), nkv, hd, kc.data() + p * row_bytes);
    for (auto& x : row) x = dist(rng);
    kv_store_row(KvType::kF16, row.data(), nkv, hd, vc.data() + p * row_bytes);
  }
  const uint8_t* kb[1] = {kc.data()};
  const uint8_t* vb[1] = {vc.data()};
  AttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.k_blocks = kb;
  a.v_blocks = vb;
  a.block_tokens = nq;
  a.row_bytes = row_bytes;
  a.kv_type = KvType::kF16;
  a.n_q = decode ? 1 : nq;
  a.pos0 = decode ? nq - 1 : 0;
  a.n_head = nh;
  a.n_head_kv = nkv;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> scratch(nq + 2 * hd);
  for (const KernelTable& t : simd_dense_kernels()) {
    if (only && std::strcmp(only, t.name) != 0) continue;
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      t.attention(a, 0, a.n_q * nh, scratch.data());
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    double checksum = 0;
    for (float x : out) checksum += x;
    const double flop = decode ? 4.0 * hd * nh * nq : 4.0 * hd * nh * (nq * (nq + 1) / 2.0);
    std::printf("%s: %.2f ms (min %.2f)  %.1f GFLOP/s  checksum %.6f\n", t.name, ms[reps / 2],
                ms[0], flop / ms[reps / 2] / 1e6, checksum);
  }
}
