// Decode attention alone at a long context (issue 36, decode at 16K; issue 40, q4 KV): one
// query of H heads over HKV KV heads of 128 against CTX cached keys of type K / values of
// type V, the KV in 16-token blocks, re-read N times (cache-hot while it fits the caches;
// Llama-8B's 32/8 heads at 32K are 134 MB of f16 KV per layer, read from DRAM).
// Build (outside CMake, like bench/packed_bench.cpp):
//   g++ -std=c++20 -O2 -march=native -Isrc -Ibuild/release/generated
//   bench/attention_decode_bench.cpp \
//     build/release/libedge_{kernels,quant,formats,core}.a -lfmt -lpthread -o
//     attention_decode_bench
//   ./attention_decode_bench THREADS CTX [K_TYPE V_TYPE [H HKV]]   (types: f16 q8 q4 ...)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/api.h"
using namespace edge;
int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  int64_t ctx = argc > 2 ? atoll(argv[2]) : 16384;
  KvType kt = KvType::kF16, vt = KvType::kF16;
  if (argc > 4 && (!parse_kv_type(argv[3], &kt) || !parse_kv_type(argv[4], &vt))) return 2;
  const int H = argc > 6 ? atoi(argv[5]) : 16, HKV = argc > 6 ? atoi(argv[6]) : 2, HD = 128;
  KernelTable k = select_kernels();
  ThreadPool pool(threads);
  const int64_t krb = kv_row_bytes(kt, HKV, HD), vrb = kv_row_bytes(vt, HKV, HD);
  const int64_t bt = 16;
  int64_t nblocks = (ctx + bt) / bt;
  std::vector<uint8_t> K(nblocks * bt * krb), Vv(nblocks * bt * vrb);
  std::mt19937 rng(1); std::normal_distribution<float> nd;
  std::vector<float> row(HKV * HD);
  for (int64_t p = 0; p < nblocks * bt; ++p) {
    for (auto& x : row) x = nd(rng);
    kv_store_row(kt, row.data(), HKV, HD, K.data() + p * krb);
    kv_store_row(vt, row.data(), HKV, HD, Vv.data() + p * vrb);
  }
  std::vector<const uint8_t*> kb(nblocks), vb(nblocks);
  for (int64_t b = 0; b < nblocks; ++b) {
    kb[b] = K.data() + b * bt * krb;
    vb[b] = Vv.data() + b * bt * vrb;
  }
  std::vector<float> q(H * HD), out(H * HD);
  for (auto& x : q) x = nd(rng) * 0.1f;
  AttentionArgs a; a.q = q.data(); a.k_blocks = kb.data(); a.v_blocks = vb.data(); a.block_tokens = bt;
  a.k_row_bytes = krb;
  a.v_row_bytes = vrb;
  a.k_type = kt;
  a.v_type = vt;
  a.out = out.data();
  a.n_q = 1;
  a.pos0 = ctx - 1;
  a.n_head = H; a.n_head_kv = HKV; a.head_dim = HD; a.scale = 0.088f;
  for (int w = 0; w < 3; ++w) attention(k, a, pool);
  const int N = getenv("ADB_N") ? atoi(getenv("ADB_N")) : 50;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < N; ++i) attention(k, a, pool);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / N;
  double bytes = double(ctx) * (krb + vrb);
  printf(
      "%s K %s V %s heads %d/%d threads %d ctx %ld: %.3f ms/layer, %.1f GB/s of KV, %.1f GFMA/s\n",
      k.name, kv_type_name(kt), kv_type_name(vt), H, HKV, threads, (long)ctx, ms, bytes / ms / 1e6,
      2.0 * H * ctx * HD / ms / 1e6);
}
