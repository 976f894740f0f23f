// Chooses the packed-kernel variant once: the variants the CPU's features allow (cpu_info +
// kernels/isa.h, so an ISA the CPU or OS lacks is never run), then a few ms of timing per matmul op
// between the candidates on a 2048x2048 GEMV (on some AMD parts 512-bit ops are split in two and
// AVX2 can match AVX-512). EDGE_PACKED_KERNELS=<name> forces one variant (ref, avx2, avx2_vnni,
// avx512_vnni, avx512_amx; neon, neon_dotprod on aarch64) when this CPU can run it. The
// GEMV timing runs avx512_amx on its AVX-512 VNNI entries (its tiles serve prefill only), so
// it is kept as the widest unless another variant is faster at decode.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/check.h"
#include "core/cpu_info.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/isa.h"
#include "kernels/packed_api.h"

namespace edge {
namespace {

struct Variants {
  std::vector<std::unique_ptr<PackedKernels>> tables;  // the SIMD variants' tables
  std::vector<const PackedKernels*> list;  // runnable here, reference first, narrow to wide
};

// A variant without its own W6 kernels (or Q4K / Q5K / Q6K A16, or Q6K A8) takes those of
// the next narrower variant in the list (runnable here too: AVX-512 on top of AVX2) rather
// than the scalar reference. Q4K and Q5K A8 are not borrowed: every SIMD table installs its
// own (the aarch64 i8mm table installs the SDOT ones itself), and a
// variant without would make GGUF Q4_K / Q5_K repack into w4a_g32 / w6_g32 instead
// (packed_kernels_run_q4k() / _q5k()); a borrowed narrower one would be slower than the
// variant's own W4 tile (on a Zen 5 the ymm Q4K tile ran prefill at 57% of the zmm w4a_g32
// one). Q6K A8 is borrowed like W6, which it replaces.
void borrow_narrower_entries(const PackedKernels* narrower, PackedKernels* t) {
  const PackedKernels& ref = reference_packed_kernels();
  if (t->matmul_w6_a8 == ref.matmul_w6_a8) t->matmul_w6_a8 = narrower->matmul_w6_a8;
  if (t->matmul_w6_a16 == ref.matmul_w6_a16) t->matmul_w6_a16 = narrower->matmul_w6_a16;
  if (t->matmul_q4k_a16 == ref.matmul_q4k_a16) t->matmul_q4k_a16 = narrower->matmul_q4k_a16;
  if (t->matmul_q5k_a16 == ref.matmul_q5k_a16) t->matmul_q5k_a16 = narrower->matmul_q5k_a16;
  if (t->matmul_q6k_a8 == ref.matmul_q6k_a8) t->matmul_q6k_a8 = narrower->matmul_q6k_a8;
  if (t->matmul_q6k_a16 == ref.matmul_q6k_a16) t->matmul_q6k_a16 = narrower->matmul_q6k_a16;
  if (t->matmul_mxfp4_a8 == ref.matmul_mxfp4_a8) t->matmul_mxfp4_a8 = narrower->matmul_mxfp4_a8;
  if (t->matmul_mxfp4_a16 == ref.matmul_mxfp4_a16) t->matmul_mxfp4_a16 = narrower->matmul_mxfp4_a16;
}

const Variants& variants() {
  static const Variants v = [] {
    Variants out;
    out.list.push_back(&reference_packed_kernels());
    for (const std::string& name : packed_variants_for(cpu_info())) {
      const KernelVariant* kv = find_kernel_variant("packed", name);
      CHECK(kv != nullptr && kv->install_packed != nullptr);
      auto t = std::make_unique<PackedKernels>(reference_packed_kernels());
      kv->install_packed(t.get());
      borrow_narrower_entries(out.list.back(), t.get());
      out.list.push_back(t.get());
      out.tables.push_back(std::move(t));
    }
    return out;
  }();
  return v;
}

// ---- calibration ---------------------------------------------------------------------

// A random W4 sym / W8 g128 matrix [n, k] (codes random, scales 1/64): timing only.
std::vector<uint8_t> random_matrix(PackedKind kind, int64_t n, int64_t k) {
  const int64_t cb = packed_cell_bytes(kind, 128);
  std::vector<uint8_t> m(PackedFormat::panels(n) * (k / 128) * cb);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  const uint64_t mask = kind == PackedKind::kW8 ? 0x3F3F3F3F3F3F3F3Full : ~0ull;
  for (size_t i = 0; i + 8 <= m.size(); i += 8) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t v = (state >> 11 ^ state << 21) & mask;
    std::memcpy(&m[i], &v, 8);
  }
  const int64_t scale_off = kind == PackedKind::kW8 ? 128 * 16 : 128 * 8;
  const uint16_t s = f32_to_f16(1.0f / 64);
  for (int64_t c = 0; c < static_cast<int64_t>(m.size()) / cb; ++c)
    for (int r = 0; r < 16; ++r) std::memcpy(&m[c * cb + scale_off + 2 * r], &s, 2);
  return m;
}

// Best-of microseconds of one single-threaded GEMV per candidate, measured in interleaved
// rounds (so a burst of load on a shared machine hits every candidate alike), ~3 ms total.
std::vector<double> time_gemv(const std::vector<const PackedKernels*>& cands, PackedKind kind,
                              bool a8, const PackedMatrixView& w, const float* x,
                              const QuantizedActivations& qa, float* y) {
  using clock = std::chrono::steady_clock;
  std::vector<double> best(cands.size(), 1e30);
  const auto deadline = clock::now() + std::chrono::microseconds(3000);
  for (int round = 0; round < 100 && (round < 3 || clock::now() < deadline); ++round) {
    for (size_t i = 0; i < cands.size(); ++i) {
      const auto t0 = clock::now();
      if (a8)
        cands[i]->a8(kind)(w, qa, 0, PackedFormat::panels(w.n), y);
      else
        cands[i]->a16(kind)(w, x, 1, 0, PackedFormat::panels(w.n), y);
      const double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
      best[i] = std::min(best[i], us);
    }
  }
  return best;
}

// The widest ISA (last candidate) unless another is more than 10% faster: timing noise
// must not flip the choice from run to run.
size_t pick(const std::vector<double>& us) {
  size_t best = us.size() - 1;
  for (size_t i = 0; i < us.size(); ++i)
    if (us[i] < 0.9 * us[us.size() - 1] && us[i] < us[best]) best = i;
  return best;
}

struct Choice {
  PackedKernels table;
  std::string why;
};

constexpr const char* kOps[] = {"w4_a8", "w4_a16", "w8_a8", "w8_a16"};

// Installs op `op` of `from` into `to`; the table is named after its W4A8 (main) path.
void install_op(PackedKernels* to, const PackedKernels& from, const std::string& op) {
  if (op == "w8_a8") {
    to->matmul_w8_a8 = from.matmul_w8_a8;
  } else if (op == "w8_a16") {
    to->matmul_w8_a16 = from.matmul_w8_a16;
  } else if (op == "w4_a8") {
    to->matmul_w4_a8 = from.matmul_w4_a8;
    to->quantize_act = from.quantize_act;
    to->name = from.name;
  } else {
    to->matmul_w4_a16 = from.matmul_w4_a16;
  }
}

// Times every candidate on each op and keeps the fastest (see pick()).
void calibrate(const std::vector<const PackedKernels*>& cands, Choice* out) {
  constexpr int64_t kN = 2048, kK = 2048;
  std::vector<float> x(kK), y(kN);
  for (int64_t i = 0; i < kK; ++i) x[i] = static_cast<float>((i * 37) % 201 - 100) / 100.0f;
  ActivationBuffer buf;
  QuantizedActivations qa = buf.view(1, kK, 128);
  reference_packed_kernels().quantize_act(x.data(), qa, 0, 1);
  for (PackedKind kind : {PackedKind::kW4Sym, PackedKind::kW8}) {
    std::vector<uint8_t> m = random_matrix(kind, kN, kK);
    PackedMatrixView w{PackedFormat{kind, 128}, m.data(), kN, kK};
    for (bool a8 : {true, false}) {
      const std::vector<double> us = time_gemv(cands, kind, a8, w, x.data(), qa, y.data());
      const PackedKernels* best = cands[pick(us)];
      std::string line;
      for (size_t i = 0; i < cands.size(); ++i)
        line += fmt::format(" {} {:.1f} us", cands[i]->name, us[i]);
      const char* op =
          kind == PackedKind::kW8 ? (a8 ? "w8_a8" : "w8_a16") : (a8 ? "w4_a8" : "w4_a16");
      install_op(&out->table, *best, op);
      out->why += fmt::format(
          "  {:7} -> {:12} (best of 2048x2048 GEMV, 1 thread:{}; widest "
          "kept unless another is >10% faster)\n",
          op, best->name, line);
    }
  }
}

// Every op from one variant, with the reason printed per op.
void choose_all(const PackedKernels& v, const std::string& reason, Choice* out) {
  out->table = v;
  for (const char* op : kOps) out->why += fmt::format("  {:7} -> {:12} ({})\n", op, v.name, reason);
}

const Choice& choice() {
  static const Choice ch = [] {
    const Variants& vs = variants();
    Choice out;
    if (const char* env = std::getenv("EDGE_PACKED_KERNELS")) {
      for (const PackedKernels* v : vs.list) {
        if (std::strcmp(v->name, env) == 0) {
          choose_all(*v, "forced by EDGE_PACKED_KERNELS", &out);
          return out;
        }
      }
      out.why += fmt::format("  EDGE_PACKED_KERNELS={} is not runnable here; ignored\n", env);
    }
    // Candidates: the SIMD variants (the reference never wins).
    std::vector<const PackedKernels*> cands(vs.list.begin() + 1, vs.list.end());
    if (cands.empty()) {
      choose_all(*vs.list.back(), "no SIMD variant runs on this CPU", &out);
    } else if (cands.size() == 1) {
      choose_all(*cands.back(), "the only SIMD variant this CPU runs; nothing to calibrate", &out);
    } else {
      out.table = *cands.back();  // the widest variant, then the faster per op
      calibrate(cands, &out);
    }
    return out;
  }();
  return ch;
}

}  // namespace

QuantizedActivations ActivationBuffer::view(int64_t n, int64_t k, int32_t group) {
  CHECK(group > 0 && k % group == 0);
  if (static_cast<int64_t>(q.size()) < n * k) q.resize(n * k);
  if (static_cast<int64_t>(scales.size()) < n * (k / group)) {
    scales.resize(n * (k / group));
    sums.resize(n * (k / group));
  }
  int16_t *s32 = nullptr, *s16 = nullptr;
  if (group == 256) {
    if (static_cast<int64_t>(sums32.size()) < n * (k / 32)) sums32.resize(n * (k / 32));
    if (static_cast<int64_t>(sums16.size()) < n * (k / 16)) sums16.resize(n * (k / 16));
    s32 = sums32.data();
    s16 = sums16.data();
  }
  return QuantizedActivations{q.data(), scales.data(), sums.data(), s32, n, k, group, s16};
}

void quantize_activations(const PackedKernels& kern, const float* x, const QuantizedActivations& a,
                          int64_t t0, int64_t t1) {
  kern.quantize_act(x, a, t0, t1);
  if (a.sums32 == nullptr) return;
  // |sum| <= 32 * 127: fits int16. Plain loops: the compiler vectorises them.
  const int64_t nb = a.k / 32;
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      const int8_t* q = a.q + t * a.k + b * 32;
      int32_t s0 = 0, s1 = 0;
      for (int i = 0; i < 16; ++i) s0 += q[i], s1 += q[16 + i];
      a.sums32[t * nb + b] = static_cast<int16_t>(s0 + s1);
      if (a.sums16 == nullptr) continue;
      a.sums16[t * 2 * nb + 2 * b] = static_cast<int16_t>(s0);
      a.sums16[t * 2 * nb + 2 * b + 1] = static_cast<int16_t>(s1);
    }
}

bool packed_kernels_run_q4k() {
  return packed_kernels().matmul_q4k_a8 != reference_packed_kernels().matmul_q4k_a8;
}

bool packed_kernels_run_q6k() {
  return packed_kernels().matmul_q6k_a8 != reference_packed_kernels().matmul_q6k_a8;
}

bool packed_kernels_run_q5k() {
  return packed_kernels().matmul_q5k_a8 != reference_packed_kernels().matmul_q5k_a8;
}

PackedMatrixView packed_matrix_view(const TensorView& w) {
  PackedMatrixView v;
  CHECK(w.shape.size() == 2 && packed_format_of(w.dtype, &v.fmt));
  v.data = w.data;
  v.n = w.shape[0];
  v.k = w.shape[1];
  return v;
}

PackedMatrixView packed_expert_view(const TensorView& w, int64_t e) {
  PackedMatrixView v;
  CHECK(w.shape.size() == 3 && packed_format_of(w.dtype, &v.fmt));
  CHECK(e >= 0 && e < w.shape[0]);
  v.n = w.shape[1];
  v.k = w.shape[2];
  v.data = w.data + e * PackedFormat::panels(v.n) * (v.k / v.fmt.group) *
                        packed_cell_bytes(v.fmt.kind, v.fmt.group);
  return v;
}

PackedTiling packed_tiling_for(const CacheSizes& caches, const char* prefetch_env) {
  PackedTiling t;
  if (caches.l2 > 0) t.block_bytes = std::clamp<int64_t>(caches.l2 / 2, 64 << 10, 2 << 20);
  std::string pf_why = "default";
  if (prefetch_env != nullptr) {
    char* end = nullptr;
    const long long v = std::strtoll(prefetch_env, &end, 10);
    if (end != prefetch_env && *end == '\0' && v >= 0 && v <= (1 << 20)) {
      t.prefetch_bytes = v;
      pf_why = "EDGE_PREFETCH_BYTES";
    } else {
      pf_why = fmt::format("EDGE_PREFETCH_BYTES={} is not a byte count in [0, 1048576]; ignored",
                           prefetch_env);
    }
  }
  t.why = fmt::format("cache block {} KiB of weights ({}), prefetch {} bytes ahead ({})",
                      t.block_bytes >> 10,
                      caches.l2 > 0 ? fmt::format("half of the {} KiB L2", caches.l2 >> 10)
                                    : std::string("L2 size unknown"),
                      t.prefetch_bytes, pf_why);
  return t;
}

const PackedTiling& packed_tiling() {
  static const PackedTiling t = packed_tiling_for(cpu_info().caches, std::getenv("EDGE_PREFETCH_BYTES"));
  return t;
}

std::vector<const PackedKernels*> available_packed_kernels() { return variants().list; }

const PackedKernels& packed_kernels() { return choice().table; }

std::string packed_kernels_description() {
  const CpuInfo& cpu = cpu_info();
  std::string runnable, missing;
  for (const PackedKernels* v : variants().list)
    runnable += runnable.empty() ? v->name : fmt::format(", {}", v->name);
  for (const KernelVariant& v : kernel_variants()) {
    if (std::string(v.family) != "packed" || isa_runnable(v.isa, cpu)) continue;
    missing += fmt::format("{}{} (lacks {})", missing.empty() ? "" : ", ", v.name,
                           isa_missing_features(v.isa, cpu));
  }
  // Features the CPU has but the OS refused (AMX without the tile data permission).
  if (!cpu.os_refused.empty()) missing += fmt::format(" [{}]", cpu.os_refused);
  // W6 is not calibrated: the chosen table's own (or borrowed, see borrow_narrower_entries)
  // kernels. The first variant in the list (reference first) whose kernel is the chosen table's.
  auto owner = [](PackedMatmulA8Fn PackedKernels::*op) -> const char* {
    for (const PackedKernels* v : variants().list)
      if (v->*op == choice().table.*op) return v->name;
    return "ref";
  };
  // Without Q4K / Q5K / Q6K kernels no such cell is ever run: GGUF Q4_K becomes w4a_g32
  // (w4_a8 above), Q5_K and Q6_K w6_g32 (w6_a8).
  const bool q4k_runs = packed_kernels_run_q4k(), q6k_runs = packed_kernels_run_q6k();
  const bool q5k_runs = packed_kernels_run_q5k();
  return fmt::format(
      "CPU: {}\nfeatures: {}\npacked kernel variants: {}\nnot runnable here: {}\nchosen per "
      "op:\n{}  {:7} -> {:12} (the chosen table's, or the nearest narrower variant's)\n"
      "  {:7} -> {:12} ({})\n  {:7} -> {:12} ({})\n  {:7} -> {:12} ({})\n"
      "  {:8} -> {:12} (the chosen table's, or the nearest narrower variant's; GGUF MXFP4 "
      "keeps its blocks)\n"
      "tiling: {}\n",
      cpu.model_name, cpu.features.empty() ? "none" : cpu.features_string(), runnable,
      missing.empty() ? "none" : missing, choice().why, "w6_a8",
      owner(&PackedKernels::matmul_w6_a8), "q4k_a8",
      q4k_runs ? owner(&PackedKernels::matmul_q4k_a8) : "none",
      q4k_runs ? "the chosen table's; GGUF Q4_K keeps its super-blocks"
               : "no Q4K kernels here: GGUF Q4_K repacks to w4a_g32 and runs w4_a8",
      "q6k_a8", q6k_runs ? owner(&PackedKernels::matmul_q6k_a8) : "none",
      q6k_runs ? "the chosen table's or the nearest narrower one's; GGUF Q6_K keeps its "
                 "super-blocks"
               : "no Q6K kernels here: GGUF Q6_K is requantised to w6_g32 and runs w6_a8",
      "q5k_a8", q5k_runs ? owner(&PackedKernels::matmul_q5k_a8) : "none",
      q5k_runs ? "the chosen table's; GGUF Q5_K keeps its super-blocks"
               : "no Q5K kernels here: GGUF Q5_K is requantised to w6_g32 and runs w6_a8",
      "mxfp4_a8", owner(&PackedKernels::matmul_mxfp4_a8), packed_tiling().why);
}

void packed_matmul_a16(const PackedKernels& kern, const PackedMatrixView& w, const float* x,
                       int64_t n, float* y, ThreadPool& pool) {
  auto fn = kern.a16(w.fmt.kind);
  const int64_t panels = PackedFormat::panels(w.n);
  pool.run([&](int tid, int nth) {
    auto [p0, p1] = ThreadPool::split(panels, tid, nth);
    if (p0 < p1) fn(w, x, n, p0, p1, y);
  });
}

void packed_matmul_a8(const PackedKernels& kern, const PackedMatrixView& w, const float* x,
                      int64_t n, float* y, ActivationBuffer& buf, ThreadPool& pool) {
  auto fn = kern.a8(w.fmt.kind);
  const QuantizedActivations qa = buf.view(n, w.k, w.fmt.group);
  const int64_t panels = PackedFormat::panels(w.n);
  pool.run([&](int tid, int nth) {
    auto [t0, t1] = ThreadPool::split(n, tid, nth);
    if (t0 < t1) quantize_activations(kern, x, qa, t0, t1);
    pool.barrier();
    auto [p0, p1] = ThreadPool::split(panels, tid, nth);
    if (p0 < p1) fn(w, qa, p0, p1, y);
  });
}

}  // namespace edge
