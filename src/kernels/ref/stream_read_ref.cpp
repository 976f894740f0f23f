#include <cstring>

#include "core/cpu_info.h"
#include "kernels/isa.h"
#include "kernels/stream_read.h"

namespace edge {

uint64_t stream_read_ref(const uint8_t* data, uint64_t bytes) {
  uint64_t acc = 0;
  for (uint64_t i = 0; i + 8 <= bytes; i += 8) {
    uint64_t v;
    std::memcpy(&v, data + i, 8);
    acc ^= v;
  }
  return acc;
}

StreamReadFn best_stream_read(const char** name) {
  const std::string v = stream_read_variant_for(cpu_info());
  if (const KernelVariant* kv = find_kernel_variant("stream_read", v)) {
    *name = kv->name;
    return kv->stream_read;
  }
  *name = "ref";
  return stream_read_ref;
}

}  // namespace edge
