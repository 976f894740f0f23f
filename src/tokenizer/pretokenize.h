// Regex pre-tokenisation for byte-level BPE (and UTF-8 helpers shared by the tokenizer).
// A PreTokenizer is a sequence of regexes applied one after another, each refining the
// pieces of the previous one with Hugging Face "Isolated" semantics: every match becomes a
// piece and so does every stretch between matches, so the pieces always concatenate back
// to the input. Regexes run in PCRE2 UTF + UCP mode (\p{L}, \p{N}, \s are Unicode-aware).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace edge {

// Length of the UTF-8 sequence that starts with `lead` (1..4); 0 for a continuation or
// an invalid lead byte.
int utf8_seq_len(uint8_t lead);
// Splits into characters; an invalid byte becomes a one-byte "character".
std::vector<std::string_view> utf8_chars(std::string_view s);
// Streaming validation: appends the valid UTF-8 prefix of `in` to `out` (invalid bytes
// become U+FFFD) and returns how many bytes of `in` were consumed. An incomplete but so
// far valid sequence at the end is left unconsumed unless `final` is true (then it also
// becomes U+FFFD).
size_t utf8_sanitize(std::string_view in, bool final, std::string& out);
// Unicode NFC (utf8proc); returns the input unchanged if it is not valid UTF-8.
std::string utf8_nfc(std::string_view s);

// The split regexes a pre-tokenizer name (GGUF tokenizer.ggml.pre) stands for; empty
// when the name is unknown.
std::vector<std::string> pretokenizer_regexes(const std::string& pre);
// The inverse, for regexes read from tokenizer.json: the known name with exactly these
// regexes, or "" if none.
std::string pretokenizer_name_for(const std::vector<std::string>& regexes);

class PreTokenizer {
 public:
  // Compiles the regexes; invalid_argument naming the pattern and PCRE2's message.
  static Expected<PreTokenizer> compile(const std::vector<std::string>& patterns);

  PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // Pieces of `text` (views into it), in order, none empty, concatenating to `text`.
  // Thread-safe (match data is per call).
  std::vector<std::string_view> split(std::string_view text) const;
  bool empty() const { return regexes_.empty(); }

 private:
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace edge
