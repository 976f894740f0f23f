// libFuzzer target: a llama2.c checkpoint (7 x int32 header, then float32 arrays) from
// arbitrary bytes; header products must not overflow and every view must lie in the file.
#include <cstddef>
#include <cstdint>

#include "formats/llama2c.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = edge::Llama2cFile::from_mapped(edge::MappedFile::copy_of("fuzz.bin", data, size));
  if (!f.ok()) return 0;
  const edge::Llama2cFile::Header& h = f->header();
  (void)h.head_size();
  (void)h.kv_dim();
  edge::fuzz::touch_tensors(f->tensors());
  return 0;
}
