// Tokenizer::from_vocab_merges: a Qwen2 byte-level BPE from the two files of the slow
// tokenizer (vocab.json: token -> id; merges.txt: one "left right" pair per line, ranked
// by line, after an optional "#version" header), expressed as the tokenizer.json that
// transformers' converter would write and read through the tokenizer.json path.
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/mapped_file.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"

namespace edge {

namespace {

using json = nlohmann::json;

Expected<json> merges_from_text(const std::string& text, const std::string& path) {
  json merges = json::array();
  std::istringstream in(text);
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (n == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() ||
        line.find(' ', sp + 1) != std::string::npos)
      return Status::invalid_format(path + ": line " + std::to_string(n) +
                                    " is not a pair \"left right\"");
    merges.push_back(line);
  }
  return merges;
}

// tokenizer_config.json's added_tokens_decoder {"151643": {"content": ..., "special": ...}}
// as tokenizer.json's added_tokens list.
Expected<json> added_tokens(const json& config, const std::string& path) {
  json out = json::array();
  if (!config.is_object() || !config.contains("added_tokens_decoder")) return out;
  const json& dec = config.at("added_tokens_decoder");
  if (!dec.is_object())
    return Status::invalid_format(path + ": added_tokens_decoder must be an object");
  for (const auto& [key, t] : dec.items()) {
    char* end = nullptr;
    const long long id = std::strtoll(key.c_str(), &end, 10);
    if (end == key.c_str() || *end != '\0' || id < 0 || !t.is_object() || !t.contains("content") ||
        !t.at("content").is_string())
      return Status::invalid_format(path + ": added_tokens_decoder entry '" + key + "'");
    out.push_back({{"id", id},
                   {"content", t.at("content")},
                   {"special", t.value("special", false)},
                   {"lstrip", t.value("lstrip", false)},
                   {"rstrip", t.value("rstrip", false)},
                   {"normalized", t.value("normalized", false)},
                   {"single_word", t.value("single_word", false)}});
  }
  return out;
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_vocab_merges(const std::string& vocab_json_path,
                                                 const std::string& merges_path,
                                                 const std::string& tokenizer_config_path) {
  ASSIGN_OR_RETURN(std::string vocab_text, read_text_file(vocab_json_path));
  json vocab = json::parse(vocab_text, nullptr, /*allow_exceptions=*/false);
  if (vocab.is_discarded() || !vocab.is_object())
    return Status::invalid_format(vocab_json_path + ": not a JSON object of token -> id");
  ASSIGN_OR_RETURN(std::string merges_text, read_text_file(merges_path));
  ASSIGN_OR_RETURN(json merges, merges_from_text(merges_text, merges_path));
  std::string config_text;
  json config = json::object();
  if (!tokenizer_config_path.empty()) {
    ASSIGN_OR_RETURN(config_text, read_text_file(tokenizer_config_path));
    config = json::parse(config_text, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded())
      return Status::invalid_format(tokenizer_config_path + ": not valid JSON");
  }
  ASSIGN_OR_RETURN(json added, added_tokens(config, tokenizer_config_path));
  json seq = json::array();
  for (const std::string& r : pretokenizer_regexes("qwen2"))
    seq.push_back({{"type", "Split"},
                   {"pattern", {{"Regex", r}}},
                   {"behavior", "Isolated"},
                   {"invert", false}});
  seq.push_back({{"type", "ByteLevel"},
                 {"add_prefix_space", false},
                 {"trim_offsets", false},
                 {"use_regex", false}});
  json tj;
  tj["added_tokens"] = std::move(added);
  tj["normalizer"] = {{"type", "NFC"}};
  tj["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", std::move(seq)}};
  tj["decoder"] = {{"type", "ByteLevel"},
                   {"add_prefix_space", false},
                   {"trim_offsets", false},
                   {"use_regex", false}};
  tj["model"] = {{"type", "BPE"},
                 {"dropout", nullptr},
                 {"unk_token", nullptr},
                 {"continuing_subword_prefix", ""},
                 {"end_of_word_suffix", ""},
                 {"fuse_unk", false},
                 {"byte_fallback", false},
                 {"vocab", std::move(vocab)},
                 {"merges", std::move(merges)}};
  return from_tokenizer_json_text(tj.dump(), config_text, vocab_json_path);
}

}  // namespace edge
