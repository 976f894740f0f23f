// libFuzzer target: a Hugging Face tokenizer.json (and, after the first NUL byte, a
// tokenizer_config.json) from arbitrary bytes; when it loads, encode and decode a few fixed
// strings and the first bytes of the input itself.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string tokenizer_json = input.substr(0, nul);
  const std::string config = nul == std::string::npos ? std::string() : input.substr(nul + 1);
  auto tok = edge::Tokenizer::from_tokenizer_json_text(tokenizer_json, config, "fuzz");
  if (!tok.ok()) return 0;
  edge::fuzz::exercise_tokenizer(*tok,
                                 std::string_view(input).substr(0, std::min<size_t>(size, 256)));
  return 0;
}
