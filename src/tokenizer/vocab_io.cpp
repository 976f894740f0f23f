// GGUF tokenizer.ggml.* <-> Vocab, and Vocab -> tokenizer.json.
#include "tokenizer/vocab_io.h"

#include <algorithm>
#include <map>

#include "tokenizer/pretokenize.h"

namespace edge {
namespace {

// Marks a SentencePiece-style vocabulary merged by rank (HF BPE + byte_fallback) in a
// GGUF whose tokenizer.ggml.model is "llama" (so other readers still see an SPM vocab).
const char kMergeByRankKey[] = "tokenizer.edge.bpe_merge_by_rank";

bool is_llama3_family(const std::string& pre) {
  return pre == "llama3" || pre == "llama-bpe" || pre == "llama-v3" || pre == "falcon3" || pre == "pixtral" ||
         pre == "smaug-bpe" || pre == "dbrx";
}

int32_t id_or(const GgufFile& g, const char* key, int32_t def) {
  return static_cast<int32_t>(g.get_int_or(key, def));
}

// tokens, scores, token_type and merges, with their lengths checked against each other.
Status read_token_arrays(const GgufFile& g, Vocab& v) {
  auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (!tokens.ok()) return tokens.status().with_context("tokenizer.ggml.tokens");
  v.tokens = std::move(*tokens);
  const size_t n = v.tokens.size();
  if (g.find("tokenizer.ggml.scores")) {
    ASSIGN_OR_RETURN(std::vector<double> scores, g.get_float_array("tokenizer.ggml.scores"));
    v.scores.assign(scores.begin(), scores.end());
  }
  if (g.find("tokenizer.ggml.token_type")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> types, g.get_int_array("tokenizer.ggml.token_type"));
    for (int64_t t : types)
      v.types.push_back(t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kUndefined);
  }
  if (g.find("tokenizer.ggml.merges")) {
    ASSIGN_OR_RETURN(v.merges, g.get_string_array("tokenizer.ggml.merges"));
  }
  if (v.types.size() != n && !v.types.empty())
    return Status::invalid_format("tokenizer.ggml.token_type has " + std::to_string(v.types.size()) +
                                  " entries for " + std::to_string(n) + " tokens");
  if (v.scores.size() != n && !v.scores.empty())
    return Status::invalid_format("tokenizer.ggml.scores has " + std::to_string(v.scores.size()) +
                                  " entries for " + std::to_string(n) + " tokens");
  return Status();
}

}  // namespace

void fill_eog_ids(Vocab& v) {
  std::vector<int32_t> eog;
  if (v.eos_id >= 0) eog.push_back(v.eos_id);
  // End-of-turn markers of the families we run; only control tokens count, so a plain
  // "</s>" in some HTML-aware vocabulary does not stop generation.
  static const char* kNames[] = {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<end_of_turn>",
                                 "<|endoftext|>", "<|end|>", "<eos>", "<|return|>", "<EOT>"};
  for (const char* name : kNames) {
    const int32_t id = v.find(name);
    if (id < 0) continue;
    const bool control = id < static_cast<int32_t>(v.types.size()) && v.types[id] == TokenType::kControl;
    if (control && std::find(eog.begin(), eog.end(), id) == eog.end()) eog.push_back(id);
  }
  for (int32_t id : v.eog_ids)
    if (std::find(eog.begin(), eog.end(), id) == eog.end()) eog.push_back(id);
  v.eog_ids = std::move(eog);
}

Expected<Vocab> read_vocab_gguf(const GgufFile& g) {
  auto model = g.get_string("tokenizer.ggml.model");
  if (!model.ok()) return Status::not_found("GGUF has no tokenizer (tokenizer.ggml.model missing)");
  Vocab v;
  if (*model == "llama") {
    v.model = g.get_bool_or(kMergeByRankKey, false) ? TokenizerModel::kBpe : TokenizerModel::kSpm;
    if (v.model == TokenizerModel::kBpe) v.byte_level = false;
  } else if (*model == "gpt2") {
    v.model = TokenizerModel::kBpe;
  } else if (*model == "bert") {
    v.model = TokenizerModel::kWordPiece;
  } else {
    return Status::unsupported("tokenizer model '" + *model + "' (tokenizer.ggml.model)");
  }
  RETURN_IF_ERROR(read_token_arrays(g, v));
  const size_t n = v.tokens.size();
  if (v.types.empty()) v.types.assign(n, TokenType::kNormal);
  v.pre = g.get_string_or("tokenizer.ggml.pre", "default");
  v.bos_id = id_or(g, "tokenizer.ggml.bos_token_id", -1);
  v.eos_id = id_or(g, "tokenizer.ggml.eos_token_id", -1);
  v.unk_id = id_or(g, "tokenizer.ggml.unknown_token_id", -1);
  v.pad_id = id_or(g, "tokenizer.ggml.padding_token_id", -1);
  // GGUF spells it "seperator"; accept the correct spelling too.
  v.sep_id = id_or(g, "tokenizer.ggml.seperator_token_id", id_or(g, "tokenizer.ggml.separator_token_id", -1));
  v.cls_id = id_or(g, "tokenizer.ggml.cls_token_id", -1);
  const bool spm_like = *model == "llama";
  if (v.model == TokenizerModel::kWordPiece) {
    // BERT: [CLS] text [SEP].
    if (v.bos_id < 0) v.bos_id = v.cls_id;
    if (v.eos_id < 0) v.eos_id = v.sep_id;
    v.lowercase = true;  // llama.cpp's WPM always lowercases GGUF BERT vocabularies
  }
  const bool wp = v.model == TokenizerModel::kWordPiece;
  v.add_bos = g.get_bool_or("tokenizer.ggml.add_bos_token", spm_like || wp);
  v.add_eos = g.get_bool_or("tokenizer.ggml.add_eos_token", wp);
  v.add_space_prefix = g.get_bool_or("tokenizer.ggml.add_space_prefix", spm_like);
  v.ignore_merges = v.model == TokenizerModel::kBpe && is_llama3_family(v.pre);
  v.byte_fallback = std::any_of(v.types.begin(), v.types.end(), [](TokenType t) { return t == TokenType::kByte; });
  if (g.find("tokenizer.edge.pre_regexes")) {
    ASSIGN_OR_RETURN(v.pre_regexes, g.get_string_array("tokenizer.edge.pre_regexes"));
  }
  v.normalize_nfc = g.get_bool_or("tokenizer.edge.normalize_nfc", false);
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    const int32_t id = id_or(g, key, -1);
    if (id >= 0 && static_cast<size_t>(id) < n) v.eog_ids.push_back(id);
  }
  auto check_id = [&](int32_t id, const char* what) -> Status {
    if (id >= static_cast<int32_t>(n))
      return Status::out_of_range(std::string("tokenizer.ggml.") + what + " " + std::to_string(id) +
                                  " is past the " + std::to_string(n) + "-token vocabulary");
    return Status();
  };
  RETURN_IF_ERROR(check_id(v.bos_id, "bos_token_id"));
  RETURN_IF_ERROR(check_id(v.eos_id, "eos_token_id"));
  RETURN_IF_ERROR(check_id(v.unk_id, "unknown_token_id"));
  RETURN_IF_ERROR(check_id(v.pad_id, "padding_token_id"));
  RETURN_IF_ERROR(check_id(v.sep_id, "seperator_token_id"));
  RETURN_IF_ERROR(check_id(v.cls_id, "cls_token_id"));
  v.build_index();
  fill_eog_ids(v);
  return v;
}

Status write_vocab_gguf(const Vocab& v, GgufWriter& w) {
  if (v.tokens.empty()) return Status::invalid_argument("cannot write an empty vocabulary");
  const bool sp_bpe = v.model == TokenizerModel::kBpe && !v.byte_level;
  const char* model = v.model == TokenizerModel::kSpm ? "llama"
                      : v.model == TokenizerModel::kWordPiece ? "bert"
                      : sp_bpe ? "llama" : "gpt2";
  w.set_string("tokenizer.ggml.model", model);
  w.set_string("tokenizer.ggml.pre", v.pre.empty() ? "default" : v.pre);
  w.set_string_array("tokenizer.ggml.tokens", v.tokens);
  std::vector<float> scores = v.scores;
  if (sp_bpe && scores.empty()) {
    // SPM readers merge by the score of the joined piece: derive it from the best rank
    // of a merge producing that piece (earlier merge = higher score).
    scores.assign(v.tokens.size(), 0.f);
    std::vector<bool> seen(v.tokens.size(), false);
    for (size_t r = 0; r < v.merges.size(); ++r) {
      std::string joined = v.merges[r];
      joined.erase(std::remove(joined.begin(), joined.end(), ' '), joined.end());
      const int32_t id = v.find(joined);
      if (id >= 0 && !seen[id]) { seen[id] = true; scores[id] = -static_cast<float>(r + 1); }
    }
  }
  if (!scores.empty()) w.set_f32_array("tokenizer.ggml.scores", scores);
  std::vector<int32_t> types(v.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  for (size_t i = 0; i < v.types.size() && i < types.size(); ++i) types[i] = static_cast<int32_t>(v.types[i]);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  if (!v.merges.empty()) w.set_string_array("tokenizer.ggml.merges", v.merges);
  if (sp_bpe) w.set_bool(kMergeByRankKey, true);
  if (!v.pre_regexes.empty()) w.set_string_array("tokenizer.edge.pre_regexes", v.pre_regexes);
  if (v.normalize_nfc) w.set_bool("tokenizer.edge.normalize_nfc", true);
  const std::pair<const char*, int32_t> ids[] = {
      {"tokenizer.ggml.bos_token_id", v.bos_id},     {"tokenizer.ggml.eos_token_id", v.eos_id},
      {"tokenizer.ggml.unknown_token_id", v.unk_id}, {"tokenizer.ggml.padding_token_id", v.pad_id},
      {"tokenizer.ggml.seperator_token_id", v.sep_id}, {"tokenizer.ggml.cls_token_id", v.cls_id}};
  for (const auto& [key, id] : ids)
    if (id >= 0) w.set_u32(key, static_cast<uint32_t>(id));
  w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  w.set_bool("tokenizer.ggml.add_eos_token", v.add_eos);
  if (v.model != TokenizerModel::kWordPiece) w.set_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  return Status();
}

namespace {

using json = nlohmann::json;

// Merges for an SPM vocabulary without them: every split of a piece into two pieces, the
// best-scored result first (lower id on equal score), then by the ids of the halves.
std::vector<std::string> derive_spm_merges(const Vocab& v) {
  struct M { float score; int32_t id, l, r; std::string text; };
  std::vector<M> all;
  for (int32_t id = 0; id < v.n_tokens(); ++id) {
    if (id < static_cast<int32_t>(v.types.size()) && v.types[id] != TokenType::kNormal) continue;
    const std::string& t = v.tokens[id];
    const auto chars = utf8_chars(t);
    size_t off = 0;
    std::vector<M> local;
    for (size_t k = 0; k + 1 < chars.size(); ++k) {
      off += chars[k].size();
      const int32_t l = v.find(t.substr(0, off)), r = v.find(t.substr(off));
      if (l < 0 || r < 0) continue;
      const float score = v.scores.empty() ? -static_cast<float>(id) : v.scores[id];
      local.push_back({score, id, l, r, t.substr(0, off) + " " + t.substr(off)});
    }
    std::sort(local.begin(), local.end(), [](const M& a, const M& b) { return a.l != b.l ? a.l < b.l : a.r < b.r; });
    all.insert(all.end(), local.begin(), local.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const M& a, const M& b) { return a.score > b.score; });
  std::vector<std::string> out;
  for (const M& m : all) out.push_back(m.text);
  return out;
}

bool uses_space_mark(const Vocab& v) {
  for (int32_t id = 0; id < v.n_tokens(); ++id)
    if (v.tokens[id].compare(0, 3, "\xE2\x96\x81") == 0) return true;
  return false;
}

json merges_json(const std::vector<std::string>& merges) {
  json arr = json::array();
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) continue;
    arr.push_back(json::array({m.substr(0, sp), m.substr(sp + 1)}));
  }
  return arr;
}

json template_processing(const Vocab& v) {
  json single = json::array(), pair = json::array(), specials = json::object();
  auto special = [&](int32_t id, int type_id) {
    specials[v.tokens[id]] = {{"id", v.tokens[id]}, {"ids", {id}}, {"tokens", {v.tokens[id]}}};
    return json{{"SpecialToken", {{"id", v.tokens[id]}, {"type_id", type_id}}}};
  };
  const bool bos = v.add_bos && v.bos_id >= 0, eos = v.add_eos && v.eos_id >= 0;
  if (bos) single.push_back(special(v.bos_id, 0));
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (eos) single.push_back(special(v.eos_id, 0));
  pair = single;
  if (bos) pair.push_back(special(v.bos_id, 1));
  pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
  if (eos) pair.push_back(special(v.eos_id, 1));
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

}  // namespace

json vocab_to_tokenizer_json(const Vocab& v) {
  const std::string sp = "\xE2\x96\x81";
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  json added = json::array();
  for (int32_t id = 0; id < v.n_tokens(); ++id) {
    const TokenType t = id < static_cast<int32_t>(v.types.size()) ? v.types[id] : TokenType::kNormal;
    if (t != TokenType::kControl && t != TokenType::kUnknown && t != TokenType::kUserDefined) continue;
    const uint8_t strip = static_cast<size_t>(id) < v.strip.size() ? v.strip[id] : 0;
    added.push_back({{"id", id}, {"content", v.tokens[id]}, {"single_word", false},
                     {"lstrip", (strip & Vocab::kStripLeft) != 0}, {"rstrip", (strip & Vocab::kStripRight) != 0},
                     {"normalized", false}, {"special", t != TokenType::kUserDefined}});
  }
  j["added_tokens"] = added;
  json vocab = json::object();
  const bool gguf_wordpiece = v.model == TokenizerModel::kWordPiece && uses_space_mark(v);
  for (int32_t id = 0; id < v.n_tokens(); ++id) {
    std::string text = v.tokens[id];
    // GGUF spells WordPiece word starts "▁the" and continuations "hrer"; HF "the", "##hrer".
    if (gguf_wordpiece && v.types[id] == TokenType::kNormal)
      text = text.compare(0, sp.size(), sp) == 0 ? text.substr(sp.size()) : "##" + text;
    if (!vocab.contains(text)) vocab[text] = id;
  }
  const bool byte_level = v.model == TokenizerModel::kBpe && v.byte_level;
  if (v.model == TokenizerModel::kWordPiece) {
    j["normalizer"] = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                       {"strip_accents", nullptr}, {"lowercase", v.lowercase}};
    j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
    j["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
    j["model"] = {{"type", "WordPiece"}, {"unk_token", v.unk_id >= 0 ? v.tokens[v.unk_id] : "[UNK]"},
                  {"continuing_subword_prefix", "##"}, {"max_input_chars_per_word", 100}, {"vocab", vocab}};
  } else if (byte_level) {
    j["normalizer"] = v.normalize_nfc ? json{{"type", "NFC"}} : json(nullptr);
    std::vector<std::string> regexes = v.pre_regexes.empty() ? pretokenizer_regexes(v.pre) : v.pre_regexes;
    json seq = json::array();
    for (const std::string& r : regexes)
      seq.push_back({{"type", "Split"}, {"pattern", {{"Regex", r}}}, {"behavior", "Isolated"}, {"invert", false}});
    seq.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}});
    j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", seq}};
    j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
    j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
                  {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false},
                  {"ignore_merges", v.ignore_merges}, {"vocab", vocab}, {"merges", merges_json(v.merges)}};
  } else {
    // SentencePiece as BPE: spaces become U+2581 before merging, byte tokens decode back.
    json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", sp}};
    j["normalizer"] = v.add_space_prefix
        ? json{{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", sp}}, replace}}}
        : replace;
    j["pre_tokenizer"] = nullptr;
    json decoders = {{{"type", "Replace"}, {"pattern", {{"String", sp}}}, {"content", " "}},
                     {{"type", "ByteFallback"}}, {{"type", "Fuse"}}};
    if (v.add_space_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    const std::vector<std::string> merges = v.merges.empty() ? derive_spm_merges(v) : v.merges;
    j["model"] = {{"type", "BPE"}, {"dropout", nullptr},
                  {"unk_token", v.unk_id >= 0 ? json(v.tokens[v.unk_id]) : json(nullptr)},
                  {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr}, {"fuse_unk", true},
                  {"byte_fallback", v.byte_fallback || v.model == TokenizerModel::kSpm}, {"ignore_merges", false},
                  {"vocab", vocab}, {"merges", merges_json(merges)}};
  }
  j["post_processor"] = template_processing(v);
  return j;
}

}  // namespace edge
