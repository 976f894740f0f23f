// libFuzzer target: one safetensors file (u64 header length, JSON header, data buffer) from
// arbitrary bytes; every view it accepts must lie inside the buffer.
#include <cstddef>
#include <cstdint>

#include "formats/safetensors.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = edge::SafetensorsModel::from_mapped(
      edge::MappedFile::copy_of("fuzz.safetensors", data, size));
  if (!m.ok()) return 0;
  edge::fuzz::touch_tensors(m->tensors());
  for (const auto& [k, v] : m->metadata()) (void)(k.size() + v.size());
  return 0;
}
