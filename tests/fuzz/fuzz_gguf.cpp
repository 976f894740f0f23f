// libFuzzer target: the GGUF reader over arbitrary bytes, then what loaders do with what it
// read: every typed getter on every key, every tensor view, and a tokenizer built from the
// tokenizer.ggml.* metadata (encode/decode a few strings) when the file has one.
#include <cstddef>
#include <cstdint>

#include "formats/gguf.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = edge::GgufFile::from_mapped(edge::MappedFile::copy_of("fuzz.gguf", data, size));
  if (!f.ok()) return 0;
  for (const auto& [key, value] : f->metadata()) {
    (void)f->get_string(key);
    (void)f->get_int(key);
    (void)f->get_float(key);
    (void)f->get_bool(key);
    (void)f->get_string_array(key);
    (void)f->get_int_array(key);
    (void)f->get_float_array(key);
    (void)value.array_size();
  }
  edge::fuzz::touch_tensors(f->tensors());
  auto tok = edge::Tokenizer::from_gguf(*f);
  if (tok.ok()) edge::fuzz::exercise_tokenizer(*tok, {});
  return 0;
}
