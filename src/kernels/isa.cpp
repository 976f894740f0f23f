#include "kernels/isa.h"

#include "core/check.h"

namespace edge {

const std::vector<IsaLevel>& isa_levels() {
  static const std::vector<IsaLevel> levels = [] {
    const std::vector<std::string> avx2 = {"avx2", "fma", "f16c"};
    std::vector<std::string> avxvnni = avx2, avx512 = avx2;
    avxvnni.push_back("avxvnni");
    for (const char* f : {"avx512f", "avx512bw", "avx512vl", "avx512dq"}) avx512.push_back(f);
    std::vector<std::string> avx512vnni = avx512;
    avx512vnni.push_back("avx512vnni");
    return std::vector<IsaLevel>{{Isa::kAvx2, "avx2", avx2},
                                 {Isa::kAvxVnni, "avxvnni", avxvnni},
                                 {Isa::kAvx512, "avx512", avx512},
                                 {Isa::kAvx512Vnni, "avx512vnni", avx512vnni}};
  }();
  return levels;
}

const IsaLevel& isa_level(Isa isa) {
  for (const IsaLevel& l : isa_levels())
    if (l.isa == isa) return l;
  CHECK(false && "unknown Isa");
  return isa_levels().front();
}

const IsaLevel* isa_level_by_suffix(const std::string& suffix) {
  for (const IsaLevel& l : isa_levels())
    if (suffix == l.suffix) return &l;
  return nullptr;
}

std::string isa_missing_features(Isa isa, const CpuInfo& cpu) {
  std::string missing;
  for (const std::string& f : isa_level(isa).features)
    if (!cpu.has(f)) missing += (missing.empty() ? "" : " ") + f;
  return missing;
}

const std::vector<KernelVariant>& kernel_variants() {
  static const std::vector<KernelVariant> v = {
      {"dense", "avx2", Isa::kAvx2},
      {"dense", "avx512", Isa::kAvx512},
      {"packed", "avx2", Isa::kAvx2},
      {"packed", "avx2_vnni", Isa::kAvxVnni},
      {"packed", "avx512_vnni", Isa::kAvx512Vnni},
      {"stream_read", "avx2", Isa::kAvx2},
      {"stream_read", "avx512", Isa::kAvx512},
  };
  return v;
}

namespace {

std::vector<std::string> runnable(const char* family, const CpuInfo& cpu) {
  std::vector<std::string> out;
  for (const KernelVariant& v : kernel_variants())
    if (std::string(v.family) == family && isa_runnable(v.isa, cpu)) out.emplace_back(v.name);
  return out;
}

}  // namespace

std::string dense_variant_for(const CpuInfo& cpu) {
  const auto r = runnable("dense", cpu);
  return r.empty() ? "ref" : r.back();
}

std::vector<std::string> packed_variants_for(const CpuInfo& cpu) {
  return runnable("packed", cpu);
}

std::string stream_read_variant_for(const CpuInfo& cpu) {
  const auto r = runnable("stream_read", cpu);
  return r.empty() ? "ref" : r.back();
}

}  // namespace edge
