// Test helpers for the tokenizer vectors in tests/data/tokenizer: a Vocab read straight
// from a GGUF's tokenizer.ggml.* metadata (independent of Tokenizer::from_gguf, so the
// encoders can be tested on their own), and the llama.cpp test-vector reader.
// Header-only: the test binary is built from tests/tokenizer/*_test.cpp alone.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "formats/gguf.h"
#include "tokenizer/vocab.h"

namespace edge::test {

inline std::string tokenizer_data_path(const std::string& name) {
  return std::string(EDGE_TEST_DATA) + "/tokenizer/" + name;
}

// Vocab from tokenizer.ggml.*, with llama.cpp's defaults where a key is absent:
// "llama" (SPM) prepends a space unless tokenizer.ggml.add_space_prefix says otherwise;
// "bert" (WordPiece) always lowercases.
inline Expected<Vocab> load_gguf_vocab(const GgufFile& gguf) {
  Vocab v;
  ASSIGN_OR_RETURN(std::string model, gguf.get_string("tokenizer.ggml.model"));
  if (model == "llama") v.model = TokenizerModel::kSpm;
  else if (model == "bert") v.model = TokenizerModel::kWordPiece;
  else if (model == "gpt2") v.model = TokenizerModel::kBpe;
  else return Status::unsupported("tokenizer model " + model);
  ASSIGN_OR_RETURN(v.tokens, gguf.get_string_array("tokenizer.ggml.tokens"));
  if (gguf.find("tokenizer.ggml.scores")) {
    ASSIGN_OR_RETURN(std::vector<double> scores, gguf.get_float_array("tokenizer.ggml.scores"));
    v.scores.assign(scores.begin(), scores.end());
  }
  if (gguf.find("tokenizer.ggml.token_type")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> types, gguf.get_int_array("tokenizer.ggml.token_type"));
    for (int64_t t : types) v.types.push_back(static_cast<TokenType>(t));
  }
  v.pre = gguf.get_string_or("tokenizer.ggml.pre", "default");
  v.bos_id = static_cast<int32_t>(gguf.get_int_or("tokenizer.ggml.bos_token_id", -1));
  v.eos_id = static_cast<int32_t>(gguf.get_int_or("tokenizer.ggml.eos_token_id", -1));
  v.unk_id = static_cast<int32_t>(gguf.get_int_or("tokenizer.ggml.unknown_token_id", -1));
  v.pad_id = static_cast<int32_t>(gguf.get_int_or("tokenizer.ggml.padding_token_id", -1));
  v.sep_id = static_cast<int32_t>(gguf.get_int_or("tokenizer.ggml.seperator_token_id", -1));
  v.cls_id = static_cast<int32_t>(gguf.get_int_or("tokenizer.ggml.cls_token_id", -1));
  v.add_bos = gguf.get_bool_or("tokenizer.ggml.add_bos_token", false);
  v.add_eos = gguf.get_bool_or("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix =
      gguf.get_bool_or("tokenizer.ggml.add_space_prefix", v.model == TokenizerModel::kSpm);
  v.lowercase = v.model == TokenizerModel::kWordPiece;
  v.build_index();
  return v;
}

inline Expected<Vocab> load_gguf_vocab(const std::string& path) {
  ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(path));
  return load_gguf_vocab(gguf);
}

struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;  // without BOS/EOS/CLS/SEP
};

// llama.cpp's test vectors: <name>.inp holds the texts, each followed by a line
// "__ggml_vocab_test__"; <name>.out holds one line of space-separated ids per text.
inline Expected<std::vector<VocabCase>> read_vocab_cases(const std::string& inp_path,
                                                         const std::string& out_path) {
  ASSIGN_OR_RETURN(std::string inp, read_text_file(inp_path));
  ASSIGN_OR_RETURN(std::string outs, read_text_file(out_path));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;  // the file ends with a separator
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream lines(outs);
  std::string line;
  size_t i = 0;
  for (; i < cases.size() && std::getline(lines, line); ++i) {
    std::istringstream ids(line);
    for (int64_t id; ids >> id;) cases[i].ids.push_back(static_cast<int32_t>(id));
  }
  if (i != cases.size())
    return Status::invalid_format(out_path + ": fewer id lines than texts in " + inp_path);
  return cases;
}

}  // namespace edge::test
