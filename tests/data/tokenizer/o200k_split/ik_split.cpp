// Reference driver (built outside the tree, see README.md): runs ik_llama.cpp's
// unicode_regex_split with the regex llama-vocab.cpp uses for LLAMA_VOCAB_PRE_TYPE_GPT4O
// ("gpt-4o", "llama4", "kanana2") on each input. Input on stdin: strings separated by NUL
// bytes. Output on stdout: per string its pieces separated by 0x01, strings separated by
// NUL bytes.
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "unicode.h"

int main() {
  const std::vector<std::string> regexes = {
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+"
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}"
      "])([^a-z]))+"
      "((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,"
      "3}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  };
  const std::string in((std::istreambuf_iterator<char>(std::cin)),
                       std::istreambuf_iterator<char>());
  size_t start = 0;
  while (start < in.size()) {
    size_t end = in.find('\0', start);
    if (end == std::string::npos) end = in.size();
    const std::vector<std::string> pieces =
        unicode_regex_split(in.substr(start, end - start), regexes, false);
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (i) std::cout << '\x01';
      std::cout << pieces[i];
    }
    std::cout << '\0';
    start = end + 1;
  }
  return 0;
}
