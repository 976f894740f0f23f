// write_random_bert and its WordPiece vocabulary (random_bert.h).
#include "convert/random_bert.h"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <set>

#include "convert/random_model_internal.h"
#include "formats/gguf.h"
#include "model/arch/bert.h"
#include "tokenizer/vocab_io.h"

namespace edge {

namespace {

constexpr std::string_view kMark = "\xE2\x96\x81";  // U+2581, GGUF's word-initial mark

constexpr const char* kWords[] = {
    "the", "a", "an", "of", "to", "and", "in", "is", "it", "that", "for", "on", "with", "as",
    "was", "he", "she", "they", "we", "you", "i", "be", "at", "by", "this", "from", "or",
    "have", "not", "are", "but", "what", "all", "were", "when", "there", "can", "which", "do",
    "their", "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so",
    "some", "her", "would", "make", "like", "him", "into", "time", "has", "look", "two", "more",
    "go", "see", "no", "way", "could", "my", "than", "first", "water", "been", "who", "its",
    "now", "find", "long", "down", "day", "did", "get", "come", "made", "may", "part", "cat",
    "dog", "sun", "tree", "house", "phone", "battery", "query", "document", "search", "model",
    "edge", "small", "fast", "memory", "text", "hello", "world", "once", "upon", "little",
    "girl", "boy", "play", "happy", "big", "sky", "park", "ball", "friend", "mom"};
constexpr const char* kSuffixes[] = {"s", "ed", "ing", "er", "ly", "est", "tion", "ness",
                                     "ment", "able", "ful", "less"};

}  // namespace

Expected<Vocab> make_synthetic_wordpiece_vocab(int32_t n_vocab, uint64_t seed) {
  Vocab v;
  v.model = TokenizerModel::kWordPiece;
  auto add = [&](std::string t, TokenType type) {
    if (v.find(t) >= 0) return;
    v.tokens.push_back(t);
    v.types.push_back(type);
    v.token_to_id.emplace(std::move(t), v.n_tokens() - 1);
  };
  for (const char* s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) add(s, TokenType::kControl);
  v.pad_id = 0;
  v.unk_id = 1;
  v.cls_id = v.bos_id = 2;
  v.sep_id = v.eos_id = 3;
  for (char c = 33; c < 127; ++c) {
    if (c >= 'A' && c <= 'Z') continue;  // the vocabulary is uncased
    add(std::string(kMark) + c, TokenType::kNormal);
    if (std::isalnum(static_cast<unsigned char>(c))) add(std::string(1, c), TokenType::kNormal);
  }
  for (const char* w : kWords) add(std::string(kMark) + w, TokenType::kNormal);
  for (const char* s : kSuffixes) add(s, TokenType::kNormal);
  if (v.n_tokens() > n_vocab)
    return Status::invalid_argument(fmt::format(
        "a WordPiece vocabulary needs at least {} tokens (n_vocab {})", v.n_tokens(), n_vocab));
  std::mt19937_64 rng(seed);
  const char* cons = "bcdfghjklmnprstvwz";
  const char* vow = "aeiou";
  while (v.n_tokens() < n_vocab) {
    std::string w;
    const int syll = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < syll; ++i) {
      w += cons[rng() % 18];
      w += vow[rng() % 5];
    }
    // Two in three made-up pieces start a word; the rest continue one.
    add(rng() % 3 ? std::string(kMark) + w : w, TokenType::kNormal);
  }
  v.add_bos = v.add_eos = true;
  v.lowercase = true;
  v.build_index();
  return v;
}

namespace {

random_model::Tensor random_tensor(const TensorSpec& s, uint64_t seed) {
  random_model::Tensor t = random_model::seeded_tensor(s, seed);
  const bool bias = s.name.ends_with(".bias");
  const bool norm = s.name.find("norm") != std::string::npos;
  if (norm && !bias) {
    t.mean = 1.0f;
    t.stddev = 0.1f;
  } else if (bias || s.name == "position_embd.weight" || s.name == "token_types.weight") {
    t.stddev = 0.1f;
  } else if (s.name == "token_embd.weight") {
    t.stddev = 1.0f;
  } else {
    t.stddev = 1.0f / std::sqrt(static_cast<float>(random_model::fan_in(s.shape)));
  }
  return t;
}

}  // namespace

Status write_random_bert(const RandomBertOptions& o, const std::string& path) {
  if (!is_text_encoder_arch(o.arch))
    return Status::invalid_argument(fmt::format("random bert: arch '{}' (bert or nomic-bert)", o.arch));
  if (o.dtype != DType::F32 && o.dtype != DType::F16 && o.dtype != DType::BF16 &&
      o.dtype != DType::Q8_0)
    return Status::invalid_argument(
        fmt::format("random bert: weight type {} (f32, f16, bf16 or q8_0)", dtype_name(o.dtype)));
  if (o.n_layer <= 0 || o.n_embd <= 0 || o.n_head <= 0 || o.n_embd % o.n_head || o.ctx <= 0 ||
      o.n_ff < 0)
    return Status::invalid_argument("random bert: sizes must be positive, heads | n_embd");
  if (o.pooling_type == 4 && !o.rerank)
    return Status::invalid_argument("random bert: pooling 4 (rank) needs the rerank head");
  const bool nomic = o.arch == "nomic-bert";
  ASSIGN_OR_RETURN(Vocab vocab, make_synthetic_wordpiece_vocab(o.n_vocab, o.seed));
  ModelConfig c;
  c.arch = o.arch;
  c.encoder_only = true;
  c.n_vocab = vocab.n_tokens();
  c.n_embd = o.n_embd;
  c.n_layer = o.n_layer;
  c.n_head = c.n_head_kv = o.n_head;
  c.head_dim = o.n_embd / o.n_head;
  c.n_ff = o.n_ff > 0 ? o.n_ff : (nomic ? 3 : 4) * o.n_embd;
  c.norm_eps = 1e-12f;
  c.pooling_type = o.pooling_type >= 0 ? o.pooling_type : o.rerank ? 4 : nomic ? 1 : 2;
  c.layers.resize(static_cast<size_t>(o.n_layer));
  for (LayerConfig& l : c.layers) l.rope_theta = 1000.0f;
  BertHparams h;
  h.nomic = nomic;
  h.n_types = 2;
  h.n_ctx_train = o.ctx;
  h.cls_head = o.rerank;
  h.n_cls_out = o.rerank ? 1 : 0;
  GgufWriter w;
  write_bert_hparams(c, h, w);
  w.set_string("general.name", fmt::format("edge-random-{}", o.arch));
  w.set_u32("general.file_type", random_model::gguf_file_type(o.dtype));
  RETURN_IF_ERROR(write_vocab_gguf(vocab, w));
  const TensorSchema schema = bert_schema(c, h);  // range-for over a temporary's member dangles
  for (const TensorSpec& s : schema.specs()) {
    const random_model::Tensor t = random_tensor(s, o.seed);
    // As llama.cpp's converter: vectors and the small embedding tables stay F32.
    const bool keep_f32 = s.shape.size() == 1 || s.name == "token_types.weight" ||
                          s.name == "position_embd.weight";
    DType dt = keep_f32 ? DType::F32 : o.dtype;
    if (dt == DType::Q8_0 && s.shape.back() % 32) dt = DType::F16;
    RETURN_IF_ERROR(random_model::add_generated_tensor(w, t, dt, "random bert"));
  }
  return w.write(path, 32);
}

}  // namespace edge
