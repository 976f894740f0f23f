// Tokenizer::from_tokenizer_json: a Hugging Face tokenizer.json (+ tokenizer_config.json)
// mapped onto Vocab. Only the structures the supported families use are accepted; any
// other normalizer / pre-tokenizer / model is refused with an error naming it.
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_io.h"

namespace edge {
namespace {

using json = nlohmann::json;
const char kSpace[] = "\xE2\x96\x81";  // U+2581

// What the normalizer / pre-tokenizer sections amount to.
struct Pipeline {
  bool nfc = false;
  bool replace_space = false;   // " " -> U+2581 (normalizer Replace or Metaspace)
  bool prepend_space = false;   // Prepend U+2581 / Metaspace prepend_scheme
  bool byte_level = false;      // ByteLevel pre-tokenizer or decoder
  bool lowercase = false;       // BertNormalizer
  bool space_split_noop = false;  // Split " " on text whose spaces are already U+2581
  std::vector<std::string> regexes;
};

std::string type_of(const json& j) { return j.is_object() ? j.value("type", std::string("?")) : "?"; }

Status parse_normalizer(const json& n, Pipeline& p) {
  if (n.is_null()) return Status();
  const std::string t = type_of(n);
  if (t == "Sequence") {
    for (const json& c : n.at("normalizers")) RETURN_IF_ERROR(parse_normalizer(c, p));
  } else if (t == "NFC") {
    p.nfc = true;
  } else if (t == "Replace" && n.at("pattern").value("String", std::string()) == " " &&
             n.value("content", std::string()) == kSpace) {
    p.replace_space = true;
  } else if (t == "Prepend" && n.value("prepend", std::string()) == kSpace) {
    p.prepend_space = true;
  } else if (t == "BertNormalizer") {
    p.lowercase = n.value("lowercase", true);
  } else {
    return Status::unsupported("tokenizer.json normalizer '" + t + "'" + (t == "Replace" ? " (pattern)" : ""));
  }
  return Status();
}

Status parse_pre_tokenizer(const json& n, Pipeline& p) {
  if (n.is_null()) return Status();
  const std::string t = type_of(n);
  if (t == "Sequence") {
    for (const json& c : n.at("pretokenizers")) RETURN_IF_ERROR(parse_pre_tokenizer(c, p));
  } else if (t == "ByteLevel") {
    if (n.value("add_prefix_space", false))
      return Status::unsupported("tokenizer.json ByteLevel pre-tokenizer with add_prefix_space");
    p.byte_level = true;
    if (n.value("use_regex", true)) {
      for (const std::string& r : pretokenizer_regexes("gpt-2")) p.regexes.push_back(r);
    }
  } else if (t == "Split") {
    const json& pat = n.at("pattern");
    const std::string behavior = n.value("behavior", std::string());
    if (n.value("invert", false)) return Status::unsupported("tokenizer.json Split pre-tokenizer with invert");
    if (pat.contains("Regex") && behavior == "Isolated") {
      p.regexes.push_back(pat.at("Regex").get<std::string>());
    } else if (pat.value("String", std::string()) == " " && p.replace_space) {
      p.space_split_noop = true;  // Gemma: no raw spaces are left to split on
    } else {
      return Status::unsupported("tokenizer.json Split pre-tokenizer (behavior '" + behavior + "', pattern " +
                                 pat.dump() + ")");
    }
  } else if (t == "Metaspace") {
    if (n.value("replacement", std::string(kSpace)) != kSpace)
      return Status::unsupported("tokenizer.json Metaspace with a replacement other than U+2581");
    p.replace_space = true;
    const std::string scheme = n.value("prepend_scheme", std::string(n.value("add_prefix_space", true) ? "always" : "never"));
    p.prepend_space = scheme != "never";
    // split: each U+2581 starts a new word.
    if (n.value("split", true)) p.regexes.push_back(std::string(kSpace) + "[^" + kSpace + "]*|[^" + kSpace + "]+");
  } else if (t == "BertPreTokenizer" || t == "Whitespace" || t == "WhitespaceSplit") {
    // WordPiece does its own whitespace/punctuation split.
  } else if (t == "Digits") {
    p.regexes.push_back(n.value("individual_digits", false) ? "\\p{N}" : "\\p{N}+");
  } else {
    return Status::unsupported("tokenizer.json pre_tokenizer '" + t + "'");
  }
  return Status();
}

int32_t token_id_of(const json& tok, const Vocab& v) {
  if (tok.is_string()) return v.find(tok.get<std::string>());
  if (tok.is_object() && tok.contains("content")) return v.find(tok.at("content").get<std::string>());
  return -1;
}

// BOS/EOS from the post-processor (TemplateProcessing / Bert / Roberta).
void parse_post_processor(const json& pp, Vocab& v) {
  if (!pp.is_object()) return;
  const std::string t = type_of(pp);
  if (t == "Sequence") {
    for (const json& c : pp.value("processors", json::array())) parse_post_processor(c, v);
  } else if (t == "TemplateProcessing") {
    const json& single = pp.at("single");
    if (!single.is_array() || single.empty()) return;
    auto special_id = [&](const json& item) -> int32_t {
      if (!item.contains("SpecialToken")) return -1;
      return v.find(item.at("SpecialToken").at("id").get<std::string>());
    };
    const int32_t first = special_id(single.front()), last = special_id(single.back());
    if (first >= 0) { v.bos_id = first; v.add_bos = true; }
    if (last >= 0 && single.size() > 1) { v.eos_id = last; v.add_eos = true; }
    if (v.model == TokenizerModel::kWordPiece) {  // [CLS] $A [SEP]
      v.cls_id = first;
      v.sep_id = last;
    }
  } else if (t == "BertProcessing" || t == "RobertaProcessing") {
    v.cls_id = v.bos_id = v.find(pp.at("cls").at(0).get<std::string>());
    v.sep_id = v.eos_id = v.find(pp.at("sep").at(0).get<std::string>());
    v.add_bos = v.bos_id >= 0;
    v.add_eos = v.eos_id >= 0;
  }
}

constexpr int64_t kMaxTokenId = (1 << 24) - 1;  // larger ids are implausible (and costly)

// The largest id a file with `entries` tokens may use. Ids are dense in real files (holes
// are rare and few); bounding them by the entry count keeps the token table, which is sized
// by the largest id, proportional to the file: {"a": 16000000} must not allocate 16M entries.
int64_t max_token_id(size_t entries) {
  return std::min<int64_t>(kMaxTokenId, 2 * static_cast<int64_t>(entries) + 1024);
}

// A token id from the file: a JSON integer (a float like 1e32 has no int64 value: converting
// it is undefined behaviour) in [0, max_id].
Expected<int64_t> read_token_id(const json& id, int64_t max_id, const std::string& what) {
  if (!id.is_number_integer())
    return Status::invalid_format("tokenizer.json " + what + " is not an integer: " + id.dump());
  const int64_t i = id.is_number_unsigned() && id.get<uint64_t>() > static_cast<uint64_t>(max_id)
                        ? max_id + 1
                        : id.get<int64_t>();
  if (i < 0 || i > max_id)
    return Status::invalid_format("tokenizer.json " + what + " " + id.dump() +
                                  " is out of range [0, " + std::to_string(max_id) +
                                  "] for a file of this many tokens");
  return i;
}

Status parse_model(const json& m, const Pipeline& p, Vocab& v) {
  const std::string type = m.value("type", m.contains("merges") ? std::string("BPE") : std::string("?"));
  if (type == "BPE") {
    v.model = TokenizerModel::kBpe;
  } else if (type == "WordPiece") {
    v.model = TokenizerModel::kWordPiece;
  } else {
    return Status::unsupported("tokenizer.json model type '" + type + "'");
  }
  const json& vocab = m.at("vocab");
  if (!vocab.is_object()) return Status::invalid_format("tokenizer.json model.vocab is not an object");
  int64_t max_id = -1;
  for (const auto& [text, id] : vocab.items()) {
    ASSIGN_OR_RETURN(const int64_t i,
                     read_token_id(id, max_token_id(vocab.size()), "vocab id of '" + text + "'"));
    max_id = std::max(max_id, i);
  }
  v.tokens.assign(max_id + 1, "");
  v.types.assign(max_id + 1, TokenType::kUnused);  // holes stay unused
  for (const auto& [text, id] : vocab.items()) {
    const int64_t i = id.get<int64_t>();  // checked above
    v.tokens[i] = text;
    v.types[i] = TokenType::kNormal;
  }
  if (v.model == TokenizerModel::kBpe) {
    const auto suffix = m.value("end_of_word_suffix", json(nullptr)), prefix = m.value("continuing_subword_prefix", json(nullptr));
    if ((suffix.is_string() && !suffix.get<std::string>().empty()) || (prefix.is_string() && !prefix.get<std::string>().empty()))
      return Status::unsupported("tokenizer.json BPE with continuing_subword_prefix / end_of_word_suffix");
    for (const json& mg : m.at("merges")) {
      if (mg.is_string()) v.merges.push_back(mg.get<std::string>());
      else if (mg.is_array() && mg.size() == 2) v.merges.push_back(mg.at(0).get<std::string>() + " " + mg.at(1).get<std::string>());
      else return Status::invalid_format("tokenizer.json merge entry " + mg.dump() + " is neither \"a b\" nor [a, b]");
    }
    v.byte_fallback = m.value("byte_fallback", false);
    v.ignore_merges = m.value("ignore_merges", false);
    v.byte_level = p.byte_level;
    if (!p.byte_level && !p.replace_space)
      return Status::unsupported("tokenizer.json BPE model with neither ByteLevel nor U+2581 space handling");
  }
  return Status();
}

Status parse_added_tokens(const json& added, Vocab& v) {
  const int64_t max_id = max_token_id(static_cast<size_t>(v.n_tokens()) + added.size());
  for (const json& a : added) {
    ASSIGN_OR_RETURN(const int64_t id, read_token_id(a.at("id"), max_id, "added token id"));
    if (id >= v.n_tokens()) {
      v.tokens.resize(id + 1, "");
      v.types.resize(id + 1, TokenType::kUnused);
    }
    v.tokens[id] = a.at("content").get<std::string>();
    v.types[id] = a.value("special", false) ? TokenType::kControl : TokenType::kUserDefined;
    const uint8_t strip = (a.value("lstrip", false) ? Vocab::kStripLeft : 0) |
                          (a.value("rstrip", false) ? Vocab::kStripRight : 0);
    if (strip) {
      v.strip.resize(v.tokens.size(), 0);
      v.strip[id] = strip;
    }
  }
  return Status();
}

// The parts of tokenizer_config.json that override tokenizer.json.
void apply_config(const json& c, Vocab& v, std::string& chat_template) {
  if (!c.is_object()) return;
  auto set_id = [&](const char* key, int32_t& id) {
    if (!c.contains(key)) return;
    const int32_t found = token_id_of(c.at(key), v);
    if (found >= 0) id = found;
  };
  set_id("bos_token", v.bos_id);
  set_id("eos_token", v.eos_id);
  set_id("unk_token", v.unk_id);
  set_id("pad_token", v.pad_id);
  set_id("sep_token", v.sep_id);
  set_id("cls_token", v.cls_id);
  if (c.contains("add_bos_token") && c.at("add_bos_token").is_boolean()) v.add_bos = c.at("add_bos_token").get<bool>();
  if (c.contains("add_eos_token") && c.at("add_eos_token").is_boolean()) v.add_eos = c.at("add_eos_token").get<bool>();
  if (v.add_bos && v.bos_id < 0) v.add_bos = false;  // nothing to add
  if (c.contains("chat_template")) {
    const json& t = c.at("chat_template");
    if (t.is_string()) {
      chat_template = t.get<std::string>();
    } else if (t.is_array()) {  // [{name, template}, ...]: the default one
      for (const json& e : t)
        if (e.value("name", std::string()) == "default") chat_template = e.value("template", std::string());
    }
  }
}

Expected<Vocab> build_vocab(const json& tj, const json& config, std::string& chat_template) {
  if (!tj.is_object() || !tj.contains("model")) return Status::invalid_format("tokenizer.json has no \"model\" section");
  Pipeline p;
  RETURN_IF_ERROR(parse_normalizer(tj.value("normalizer", json(nullptr)), p));
  RETURN_IF_ERROR(parse_pre_tokenizer(tj.value("pre_tokenizer", json(nullptr)), p));
  if (type_of(tj.value("decoder", json(nullptr))) == "ByteLevel") p.byte_level = true;
  Vocab v;
  RETURN_IF_ERROR(parse_model(tj.at("model"), p, v));
  RETURN_IF_ERROR(parse_added_tokens(tj.value("added_tokens", json::array()), v));
  v.normalize_nfc = p.nfc;
  v.lowercase = p.lowercase;
  v.add_space_prefix = p.prepend_space;
  if (v.model == TokenizerModel::kBpe && v.byte_level) {
    const std::string name = pretokenizer_name_for(p.regexes);
    if (!name.empty()) {
      v.pre = name;
    } else {
      v.pre = "custom";
      v.pre_regexes = p.regexes.empty() ? std::vector<std::string>{"[\\s\\S]+"} : p.regexes;
    }
  } else if (v.model == TokenizerModel::kBpe) {
    v.pre = "default";
    v.pre_regexes = p.regexes;
  }
  if (v.byte_fallback)
    for (int32_t i = 0; i < v.n_tokens(); ++i) {
      const std::string& t = v.tokens[i];
      if (v.types[i] == TokenType::kNormal && t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>')
        v.types[i] = TokenType::kByte;
    }
  v.build_index();
  const json& model = tj.at("model");
  if (model.contains("unk_token") && model.at("unk_token").is_string()) v.unk_id = v.find(model.at("unk_token").get<std::string>());
  parse_post_processor(tj.value("post_processor", json(nullptr)), v);
  apply_config(config, v, chat_template);
  fill_eog_ids(v);
  return v;
}

Expected<json> parse_json_text(const std::string& text, const std::string& name) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::invalid_format(name + ": not valid JSON");
  return j;
}

Expected<json> load_json(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return text.status();
  return parse_json_text(*text, path);
}

// A parsed tokenizer.json and tokenizer_config.json; `name` labels errors.
Expected<Tokenizer> tokenizer_from_json(const json& tj, const json& config,
                                        const std::string& name) {
  std::string chat_template;
  Expected<Vocab> vocab = Status::internal("unset");
  try {
    vocab = build_vocab(tj, config, chat_template);
  } catch (const json::exception& e) {
    // A section with the wrong shape (a string where an object belongs, ...).
    return Status::invalid_format(name + ": " + e.what());
  }
  if (!vocab.ok()) return vocab.status().with_context(name);
  auto tok = Tokenizer::from_vocab(std::move(vocab).value());
  if (!tok.ok()) return tok.status().with_context(name);
  tok->set_chat_template(std::move(chat_template));
  return tok;
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_tokenizer_json(const std::string& tokenizer_json_path,
                                                   const std::string& tokenizer_config_path) {
  ASSIGN_OR_RETURN(json tj, load_json(tokenizer_json_path));
  json config = json::object();
  if (!tokenizer_config_path.empty()) {
    ASSIGN_OR_RETURN(config, load_json(tokenizer_config_path));
  }
  return tokenizer_from_json(tj, config, tokenizer_json_path);
}

Expected<Tokenizer> Tokenizer::from_tokenizer_json_text(const std::string& tokenizer_json,
                                                        const std::string& tokenizer_config,
                                                        const std::string& name) {
  ASSIGN_OR_RETURN(json tj, parse_json_text(tokenizer_json, name));
  json config = json::object();
  if (!tokenizer_config.empty()) {
    ASSIGN_OR_RETURN(config, parse_json_text(tokenizer_config, name + " (tokenizer config)"));
  }
  return tokenizer_from_json(tj, config, name);
}

}  // namespace edge
