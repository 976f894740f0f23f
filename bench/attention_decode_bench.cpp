// Decode attention alone at a long context (issue 36, decode at 16K): one query of 16 heads
// over 2 KV heads of 128 against CTX cached F16 keys, the KV in 16-token blocks, cache-hot
// (the same KV re-read N times). Build (outside CMake, like bench/packed_bench.cpp):
//   g++ -std=c++20 -O2 -march=native -Isrc -Ibuild/release/generated bench/attention_decode_bench.cpp \
//     build/release/libedge_{kernels,quant,formats,core}.a -lfmt -lpthread -o attention_decode_bench
//   ./attention_decode_bench THREADS CTX
#include <chrono>
#include <cstdio>
#include <vector>
#include <random>
#include "kernels/api.h"
#include "core/thread_pool.h"
using namespace edge;
int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  int64_t ctx = argc > 2 ? atoll(argv[2]) : 16384;
  const int H = 16, HKV = 2, HD = 128;
  KernelTable k = select_kernels();
  ThreadPool pool(threads);
  const int64_t rb = kv_row_bytes(KvType::kF16, HKV, HD);
  const int64_t bt = 16;
  int64_t nblocks = (ctx + bt) / bt;
  std::vector<uint8_t> K(nblocks * bt * rb), Vv(nblocks * bt * rb);
  std::mt19937 rng(1); std::normal_distribution<float> nd;
  std::vector<float> row(HKV * HD);
  for (int64_t p = 0; p < nblocks * bt; ++p) {
    for (auto& x : row) x = nd(rng);
    kv_store_row(KvType::kF16, row.data(), HKV, HD, K.data() + p * rb);
    kv_store_row(KvType::kF16, row.data(), HKV, HD, Vv.data() + p * rb);
  }
  std::vector<const uint8_t*> kb(nblocks), vb(nblocks);
  for (int64_t b = 0; b < nblocks; ++b) { kb[b] = K.data() + b * bt * rb; vb[b] = Vv.data() + b * bt * rb; }
  std::vector<float> q(H * HD), out(H * HD);
  for (auto& x : q) x = nd(rng) * 0.1f;
  AttentionArgs a; a.q = q.data(); a.k_blocks = kb.data(); a.v_blocks = vb.data(); a.block_tokens = bt;
  a.row_bytes = rb; a.kv_type = KvType::kF16; a.out = out.data(); a.n_q = 1; a.pos0 = ctx - 1;
  a.n_head = H; a.n_head_kv = HKV; a.head_dim = HD; a.scale = 0.088f;
  for (int w = 0; w < 3; ++w) attention(k, a, pool);
  const int N = 50;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < N; ++i) attention(k, a, pool);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / N;
  double bytes = 2.0 * ctx * HKV * HD * 2;
  printf("%s threads %d ctx %ld: %.3f ms/layer, %.1f GB/s of KV, %.1f GFMA/s\n", k.name, threads, (long)ctx, ms, bytes / ms / 1e6, 2.0 * H * ctx * HD / ms / 1e6);
}
