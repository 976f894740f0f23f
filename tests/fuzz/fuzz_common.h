// Shared by the libFuzzer targets (tests/fuzz/fuzz_*.cpp): what each does with a parsed
// result so that a bad view or a broken tokenizer shows up under ASan/UBSan, not only a bad
// parse. Every function here must be safe on anything a loader accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/tensor.h"
#include "tokenizer/tokenizer.h"

namespace edge::fuzz {

// Reads the first and last byte of every view (ASan: the view lies inside the buffer) and
// the shape helpers a model loader calls.
inline void touch_tensors(const TensorSet& set) {
  volatile uint8_t sink = 0;
  for (const TensorView& v : set.all()) {
    if (v.nbytes > 0) sink = sink ^ v.data[0] ^ v.data[v.nbytes - 1];
    (void)v.numel();
    (void)v.rows();
    (void)v.cols();
    (void)v.shape_string();
    (void)set.find(v.name);
  }
  (void)sink;
}

// Encodes a few fixed strings and `extra` (bytes from the input) every way, decodes the ids
// back (whole and streaming), and decodes a few arbitrary ids (out of range included).
inline void exercise_tokenizer(const Tokenizer& tok, std::string_view extra) {
  static const char* const kTexts[] = {
      "Hello, world!",
      " leading and  double  spaces\n\nnew lines\t tabs",
      "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<s></s><bos>",
      "caf\xc3\xa9 na\xc3\xafve \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80 1234567",
      "bad utf-8: \xff\xfe\xc3 end",
  };
  std::vector<std::string_view> texts(std::begin(kTexts), std::end(kTexts));
  texts.push_back(extra);
  for (std::string_view t : texts) {
    for (int mode = 0; mode < 2; ++mode) {
      const std::vector<int32_t> ids =
          tok.encode(t, /*add_special=*/mode == 0, /*parse_special=*/mode == 0);
      (void)tok.decode(ids, /*special=*/mode == 0);
      Tokenizer::StreamDecoder sd(tok, mode == 0);
      for (int32_t id : ids) (void)sd.push(id);
      (void)sd.flush();
    }
  }
  const int32_t n = tok.n_vocab();
  const std::vector<int32_t> odd = {-1,        0,         n - 1,        n,           n + 1,
                                    INT32_MAX, INT32_MIN, tok.bos_id(), tok.eos_id()};
  (void)tok.decode(odd, true);
  for (int32_t id : odd) {
    (void)tok.token_text(id);
    (void)tok.is_eog(id);
  }
}

}  // namespace edge::fuzz
