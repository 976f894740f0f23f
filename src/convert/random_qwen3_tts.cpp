// write_random_qwen3_tts: config.json, model.safetensors and a small byte-level BPE
// tokenizer in the files a Qwen3-TTS checkpoint ships.
#include "convert/random_qwen3_tts.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "convert/random_model_internal.h"
#include "core/mapped_file.h"
#include "formats/safetensors.h"

namespace edge {

namespace {

// GPT-2's byte -> printable code point map of byte-level BPE, as UTF-8.
std::string byte_symbol(int b) {
  uint32_t cp = static_cast<uint32_t>(b);
  const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  if (!printable) {
    int n = 0;  // the n-th non-printable byte maps to 256 + n
    for (int x = 0; x < b; ++x)
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
    cp = 256 + static_cast<uint32_t>(n);
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Words whose merges the vocabulary learns ("assistant" first: the role line must be one
// token, as in Qwen's vocabulary, so the prompt's three role ids are what Qwen's are).
constexpr const char* kWords[] = {"assistant", "the",    "hello", "world", "speech",
                                  "from",      "random", "model", "this",  "is",
                                  "a",         "test",   "of",    "voice", "and"};

struct BpeFiles {
  nlohmann::json vocab = nlohmann::json::object();
  std::string merges = "#version: 0.2\n";
  int32_t n = 0;
};

void add_token(BpeFiles& f, const std::string& t) {
  if (!f.vocab.contains(t)) f.vocab[t] = f.n++;
}

void add_merge(BpeFiles& f, const std::string& left, const std::string& right) {
  if (f.vocab.contains(left + right)) return;
  f.merges += left + " " + right + "\n";
  add_token(f, left + right);
}

// Byte tokens, then for each word the merges that build it left to right, then the one
// that joins it to a leading space ("Ġ"): BPE applies merges by rank, so the bare word
// is whole before the space joins it.
BpeFiles make_bpe() {
  BpeFiles f;
  for (int b = 0; b < 256; ++b) add_token(f, byte_symbol(b));
  for (const char* w : kWords) {
    const std::string word(w);
    for (size_t i = 1; i < word.size(); ++i) add_merge(f, word.substr(0, i), word.substr(i, 1));
  }
  for (const char* w : kWords) add_merge(f, byte_symbol(' '), w);
  return f;
}

// Special tokens after the BPE ones, as Qwen's tokenizer_config.json lists them.
constexpr const char* kSpecials[] = {"<|endoftext|>", "<|im_start|>",     "<|im_end|>",
                                     "<|tts_pad|>",   "<|tts_text_bos|>", "<|tts_text_eod|>"};

nlohmann::json tokenizer_config(int32_t first_special) {
  nlohmann::json dec = nlohmann::json::object();
  for (int i = 0; i < 6; ++i)
    dec[std::to_string(first_special + i)] = {{"content", kSpecials[i]}, {"lstrip", false},
                                              {"normalized", false},     {"rstrip", false},
                                              {"single_word", false},    {"special", true}};
  nlohmann::json j;
  j["added_tokens_decoder"] = dec;
  j["tokenizer_class"] = "Qwen2Tokenizer";
  j["eos_token"] = "<|im_end|>";
  j["pad_token"] = "<|endoftext|>";
  j["bos_token"] = nullptr;
  j["model_max_length"] = 32768;
  return j;
}

ModelConfig decoder(const char* arch, int32_t layers, int32_t embd, int32_t heads, int32_t kv,
                    int32_t hd, int32_t ff, int32_t vocab) {
  ModelConfig c;
  c.arch = arch;
  c.n_vocab = vocab;
  c.n_embd = embd;
  c.n_layer = layers;
  c.n_head = heads;
  c.n_head_kv = kv;
  c.head_dim = hd;
  c.n_ff = ff;
  c.max_ctx = 32768;
  c.norm_eps = 1e-6f;
  c.qk_norm = true;
  LayerConfig l;
  l.rope_theta = 1e6f;
  l.rotary_dim = hd;
  c.layers.assign(static_cast<size_t>(layers), l);
  return c;
}

Status write_json(const std::string& path, const nlohmann::json& j) {
  const std::string text = j.dump(2);
  return write_file(path, text.data(), text.size());
}

}  // namespace

Expected<Qwen3TtsConfig> random_qwen3_tts_config(const RandomQwen3TtsOptions& o) {
  if (o.codebook < 16 || o.n_code_groups < 2 || o.text_hidden <= 0)
    return Status::invalid_argument(
        "random qwen3-tts: codebook >= 16, code groups >= 2, text width > 0");
  if (o.model_type != "custom_voice" && o.model_type != "base")
    return Status::invalid_argument("random qwen3-tts: model type custom_voice or base (got " +
                                    o.model_type + ")");
  Qwen3TtsConfig c;
  const int32_t cb = o.codebook, cp_embd = o.cp_n_embd ? o.cp_n_embd : o.n_embd;
  c.talker = decoder("qwen3-tts-talker", o.n_layer, o.n_embd, o.n_head, o.n_head_kv, o.head_dim,
                     o.n_ff, cb + 1024);
  c.predictor = decoder("qwen3-tts-code-predictor", o.cp_n_layer, cp_embd, o.n_head, o.n_head_kv,
                        o.head_dim, o.cp_n_ff ? o.cp_n_ff : o.n_ff, cb);
  const BpeFiles bpe = make_bpe();
  c.text_vocab = bpe.n + 6;
  c.text_hidden = o.text_hidden;
  c.n_code_groups = o.n_code_groups;
  c.codec = {cb + 100, cb + 101, cb + 102, cb + 106, cb + 107, cb + 108, cb + 109};
  c.text = {bpe.n + 3, bpe.n + 4, bpe.n + 5, bpe.n + 1, bpe.n + 2};
  // Qwen's 0.6B language ids relative to its codebook; the dialects are made up.
  c.languages = {{"chinese", cb + 7},   {"english", cb + 2},          {"german", cb + 5},
                 {"italian", cb + 22},  {"portuguese", cb + 23},      {"spanish", cb + 6},
                 {"japanese", cb + 10}, {"korean", cb + 16},          {"french", cb + 13},
                 {"russian", cb + 21},  {"beijing_dialect", cb + 30}, {"sichuan_dialect", cb + 31}};
  if (o.model_type == "custom_voice")  // made-up ids in the control range
    c.speakers = {{"vivian", cb + 900, ""},
                  {"ryan", cb + 901, ""},
                  {"dylan", cb + 902, "beijing_dialect"},
                  {"eric", cb + 903, "sichuan_dialect"}};
  c.model_type = o.model_type;
  c.model_size = "random";
  c.tokenizer_type = "qwen3_tts_tokenizer_12hz";
  c.mrope_section = {o.head_dim / 2 - 2 * (o.head_dim / 2 * 5 / 16), o.head_dim / 2 * 5 / 16,
                     o.head_dim / 2 * 5 / 16};  // 24/20/20 at head_dim 128
  c.mrope_interleaved = true;
  RETURN_IF_ERROR(validate_config(c.talker));
  RETURN_IF_ERROR(validate_config(c.predictor));
  return c;
}

Status write_random_qwen3_tts(const RandomQwen3TtsOptions& o, const std::string& dir) {
  if (o.dtype != DType::F32 && o.dtype != DType::F16 && o.dtype != DType::BF16)
    return Status::invalid_argument(std::string("random qwen3-tts: weight type ") +
                                    dtype_name(o.dtype));
  ASSIGN_OR_RETURN(Qwen3TtsConfig c, random_qwen3_tts_config(o));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::io_error(dir + ": " + ec.message());
  const TensorSchema schema = qwen3_tts_schema(c);
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<TensorView> views;
  buffers.reserve(schema.specs().size());
  for (const TensorSpec& s : schema.specs()) {
    random_model::Tensor t = random_model::seeded_tensor(s, o.seed);
    // Norms near 1, small biases, matrices and embeddings ~N(0, 1/width): every row of
    // an embedding sum and every logit stays O(1).
    if (s.name.ends_with("norm.weight")) {
      t.mean = 1.0f;
      t.stddev = 0.1f;
    } else if (s.name.ends_with(".bias")) {
      t.stddev = 0.1f;
    } else {
      t.stddev = 1.0f / std::sqrt(static_cast<float>(s.shape.back()));
    }
    buffers.push_back(random_model::encode(t.generate(), o.dtype));
    TensorView v;
    v.name = s.name;
    v.dtype = o.dtype;
    v.shape = s.shape;
    v.data = buffers.back().data();
    v.nbytes = buffers.back().size();
    views.push_back(std::move(v));
  }
  const std::string base = (std::filesystem::path(dir) / "").string();
  RETURN_IF_ERROR(write_json(base + "config.json", qwen3_tts_config_to_hf(c)));
  RETURN_IF_ERROR(write_safetensors(base + "model.safetensors", views, {{"format", "pt"}}));
  const BpeFiles bpe = make_bpe();
  RETURN_IF_ERROR(write_json(base + "vocab.json", bpe.vocab));
  RETURN_IF_ERROR(write_file(base + "merges.txt", bpe.merges.data(), bpe.merges.size()));
  return write_json(base + "tokenizer_config.json", tokenizer_config(bpe.n));
}

}  // namespace edge
