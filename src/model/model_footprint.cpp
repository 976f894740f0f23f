// read_model_footprint: a model's memory cost from its headers, per format (GGUF, Hugging
// Face directory, llama2.c), with the loader's repack-or-map decision per tensor.
#include "model/model_footprint.h"

#include <algorithm>

#include <filesystem>

#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/llama2c.h"
#include "formats/model_format.h"
#include "model/arch/bert.h"
#include "model/arch/llama2c_config.h"
#include "model/packed_weights.h"
#include "model/registry.h"
#include "quant/packed.h"
#include "quant/repack.h"

namespace edge {
namespace {

// One tensor as the loader will hold it: matrices (and experts [E, N, K]) of GGUF block types
// are repacked into anonymous memory (packed layout size), our packed types and plain
// matrices stay mapped, 1-D tensors (norms, biases) are converted to F32 vectors (anonymous).
TensorFootprint footprint_of(const TensorView& t, bool gguf) {
  TensorFootprint f;
  f.name = t.name;
  f.dtype = t.dtype;
  f.shape = t.shape;
  f.file_bytes = t.nbytes;
  PackedFormat pf;
  f.expert = t.name.find("_exps.") != std::string::npos ||
             t.name.find(".experts.") != std::string::npos ||
             (t.name.find(".ffn_") != std::string::npos && t.name.find("_shexp") == std::string::npos &&
              std::count(t.name.begin(), t.name.end(), '.') == 4);  // blk.N.ffn_up.E.weight
  if (t.shape.size() <= 1) {
    f.anon_bytes = static_cast<uint64_t>(t.numel()) * sizeof(float);
  } else if (gguf && packed_format_of(t.dtype, &pf) && t.shape.size() <= 3) {
    // [N, K] or experts [E, N, K] (E padded matrices back to back: quant/packed.h)
    f.mapped_bytes = static_cast<uint64_t>(packed_tensor_bytes(pf, t.shape));
  } else if (gguf && is_repackable(t.dtype) && t.shape.size() <= 3) {
    auto rf = repack_format(t.dtype, engine_kquant_cells());
    f.anon_bytes = rf ? static_cast<uint64_t>(packed_tensor_bytes(*rf, t.shape)) : t.nbytes;
  } else {
    f.mapped_bytes = t.nbytes;
  }
  return f;
}

void add_tensor(ModelFootprint& m, TensorFootprint f) {
  m.weights_anon += f.anon_bytes;
  m.weights_mapped += f.mapped_bytes;
  if (f.expert && f.shape.size() >= 2) {
    m.experts_anon += f.anon_bytes;
    m.experts_mapped += f.mapped_bytes;
  }
  if (f.anon_bytes > 0 && f.shape.size() == 2) m.repacked_tensors++;
  m.tensors.push_back(std::move(f));
}

uint64_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

Status read_gguf(const std::string& path, ModelFootprint& m) {
  ASSIGN_OR_RETURN(GgufFile g, GgufFile::open(path, packed_gguf_types()));
  ASSIGN_OR_RETURN(std::string arch, g.get_string("general.architecture"));
  if (is_text_encoder_arch(arch)) {  // a BERT-family encoder (arch/bert.h)
    BertHparams extras;
    ASSIGN_OR_RETURN(m.config, bert_config_from_gguf(g, arch, &extras));
  } else {
    const ArchFamily* fam = find_family_gguf(arch);
    if (!fam)
      return Status::unsupported("unsupported architecture '" + arch + "' (known: " +
                                 known_architectures() + ")");
    ASSIGN_OR_RETURN(m.config, fam->from_gguf(g, arch));
  }
  for (const TensorView& t : g.tensors().all()) add_tensor(m, footprint_of(t, true));
  m.file_bytes = g.mapped().size();
  if (g.find("tokenizer.ggml.model")) {
    int64_t tok_heap = 0, merge_heap = 0;
    if (const GgufValue* v = g.find("tokenizer.ggml.tokens")) {
      tok_heap = string_vector_heap_bytes(v->strings);
      m.n_vocab_strings = static_cast<int64_t>(v->strings.size());
    }
    if (const GgufValue* v = g.find("tokenizer.ggml.merges")) {
      merge_heap = string_vector_heap_bytes(v->strings);
      m.n_merges = static_cast<int64_t>(v->strings.size());
    }
    m.tokenizer_bytes = estimate_tokenizer_bytes(tok_heap, m.n_vocab_strings, merge_heap, m.n_merges, true);
  }
  return Status();
}

// tokenizer.json: counts and string bytes of model.vocab and model.merges.
void estimate_hf_tokenizer(const std::string& tokenizer_json, ModelFootprint& m) {
  auto j = read_json_file(tokenizer_json);
  if (!j || !j->is_object() || !j->contains("model") || !(*j)["model"].is_object()) return;
  const nlohmann::json& model = (*j)["model"];
  std::vector<std::string> tokens, merges;
  if (model.contains("vocab") && model["vocab"].is_object()) {
    for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) tokens.push_back(it.key());
  } else if (model.contains("vocab") && model["vocab"].is_array()) {  // Unigram: [piece, score]
    for (const auto& e : model["vocab"]) {
      if (e.is_array() && !e.empty() && e[0].is_string()) tokens.push_back(e[0].get<std::string>());
    }
  }
  if (model.contains("merges") && model["merges"].is_array()) {
    for (const auto& e : model["merges"]) {
      // "a b" or ["a", "b"]: about the same bytes once joined.
      if (e.is_string()) merges.push_back(e.get<std::string>());
      else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string())
        merges.push_back(e[0].get<std::string>() + " " + e[1].get<std::string>());
    }
  }
  m.n_vocab_strings = static_cast<int64_t>(tokens.size());
  m.n_merges = static_cast<int64_t>(merges.size());
  m.tokenizer_bytes = estimate_tokenizer_bytes(string_vector_heap_bytes(tokens), m.n_vocab_strings,
                                               string_vector_heap_bytes(merges), m.n_merges, false);
}

Status read_hf(const std::string& path, ModelFootprint& m) {
  ASSIGN_OR_RETURN(HfModelDir h, HfModelDir::open(path));
  try {  // config.json is outside input: a field of the wrong type must not throw out
    const nlohmann::json& cfg = h.config.contains("text_config") && h.config["text_config"].is_object()
                                    ? h.config["text_config"]
                                    : h.config;
    const std::string type = cfg.value("model_type", h.config.value("model_type", std::string()));
    const ArchFamily* fam = find_family_hf(type);
    if (!fam) return Status::unsupported("unsupported architecture '" + type + "'");
    ASSIGN_OR_RETURN(m.config, fam->from_hf(cfg));
    for (const TensorView& t : h.weights.tensors().all()) {
      if (fam->hf_derives && fam->hf_derives(t.name)) {
        // Rebuilt at load into anonymous memory (gpt_oss_hf.h): MXFP4 blocks and scales as
        // cells of the same bytes, float experts in their own type, biases as F32.
        TensorFootprint f = footprint_of(t, false);
        f.expert = true;
        f.mapped_bytes = 0;
        f.anon_bytes = t.shape.size() <= 2 ? static_cast<uint64_t>(t.numel()) * sizeof(float) : t.nbytes;
        add_tensor(m, std::move(f));
        m.file_bytes += t.nbytes;
        continue;
      }
      if (fam->hf_tensor_name(t.name).empty()) continue;  // not used by the forward pass
      add_tensor(m, footprint_of(t, false));
      m.file_bytes += t.nbytes;
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_format(std::string("config.json: ") + e.what());
  }
  if (!h.tokenizer_json_path.empty()) estimate_hf_tokenizer(h.tokenizer_json_path, m);
  return Status();
}

Status read_llama2c(const std::string& path, ModelFootprint& m) {
  ASSIGN_OR_RETURN(Llama2cFile f, Llama2cFile::open(path));
  m.config = llama_config_from_llama2c(f.header());
  for (const TensorView& t : f.tensors().all()) add_tensor(m, footprint_of(t, false));
  m.file_bytes = file_size_or_zero(path);
  return Status();
}

}  // namespace

int64_t string_vector_heap_bytes(const std::vector<std::string>& v) {
  int64_t sum = static_cast<int64_t>(v.capacity() * sizeof(std::string));
  for (const std::string& s : v) {
    if (s.size() > 15) sum += static_cast<int64_t>((s.size() + 1 + 8 + 15) / 16 * 16);
  }
  return sum;
}

int64_t estimate_tokenizer_bytes(int64_t token_string_heap, int64_t n_tokens,
                                 int64_t merge_string_heap, int64_t n_merges, bool metadata_copy) {
  // Vocab: tokens (strings), scores + types (8 B/token), token_to_id (a 48-byte node plus
  // its own key string and an 8-byte bucket per token). Encoder: a rank table per merge
  // (about a 48-byte hash node and bucket) plus its copy of the merge strings.
  const int64_t vocab = 2 * token_string_heap + n_tokens * (8 + 48 + 8);
  const int64_t merges = merge_string_heap + n_merges * (48 + 8);
  const int64_t metadata = metadata_copy ? token_string_heap + merge_string_heap + n_tokens * 12 : 0;
  return vocab + merges + metadata;
}

int64_t estimate_loaded_tokenizer(const Tokenizer& t, bool metadata_copy) {
  const Vocab& v = t.vocab();
  return estimate_tokenizer_bytes(string_vector_heap_bytes(v.tokens), v.n_tokens(),
                                  string_vector_heap_bytes(v.merges),
                                  static_cast<int64_t>(v.merges.size()), metadata_copy);
}

Expected<ModelFootprint> read_model_footprint(const std::string& path) {
  ModelFootprint m;
  m.path = path;
  ASSIGN_OR_RETURN(ModelFormat format, detect_model_format(path));
  m.format = model_format_name(format);
  Status st;
  switch (format) {
    case ModelFormat::kHfDir:
      st = read_hf(path, m);
      break;
    case ModelFormat::kGguf:
      st = read_gguf(path, m);
      break;
    case ModelFormat::kLlama2c:
      st = read_llama2c(path, m);
      break;
  }
  if (!st.ok()) return st.with_context("reading " + path);
  RETURN_IF_ERROR(validate_config(m.config).with_context(path));
  if (m.config.moe.enabled())
    m.active_expert_bytes = (m.experts_mapped + m.experts_anon) *
                            static_cast<uint64_t>(m.config.moe.n_expert_used) /
                            static_cast<uint64_t>(m.config.moe.n_expert);
  return m;
}

}  // namespace edge
