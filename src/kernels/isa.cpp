// The architecture-neutral half of kernels/isa.h: lookups and dispatch decisions over
// the level and variant tables of isa_x86.cpp / isa_arm.cpp.
#include "kernels/isa.h"

#include "core/check.h"

namespace edge {

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

const KernelVariant* find_kernel_variant(const std::string& family, const std::string& name) {
  for (const KernelVariant& v : kernel_variants())
    if (family == v.family && name == v.name) return &v;
  return nullptr;
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
