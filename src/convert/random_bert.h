// write_random_bert: a BERT-family text encoder ("bert" or "nomic-bert", model/arch/bert.h)
// with deterministic random weights and a made-up WordPiece vocabulary, as a GGUF file in
// llama.cpp's conventions, so embedding and rerank tests and the demo need no download.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "formats/tensor.h"
#include "tokenizer/vocab.h"

namespace edge {

struct RandomBertOptions {
  std::string arch = "bert";  // bert | nomic-bert
  int32_t n_layer = 2;
  int32_t n_embd = 64;
  int32_t n_head = 4;
  int32_t n_ff = 0;           // 0: 4 * n_embd (bert), 3 * n_embd (nomic-bert)
  int32_t n_vocab = 512;      // >= make_synthetic_wordpiece_vocab's fixed part (~120)
  int64_t ctx = 512;          // positions (bert: position_embd rows)
  // GGUF {arch}.pooling_type, llama.cpp's numbering: 1 mean, 2 cls, 4 rank (needs rerank).
  int32_t pooling_type = -1;  // -1: 2 (cls) for bert, 1 (mean) for nomic-bert; 4 with rerank
  bool rerank = false;        // a cross-encoder: cls [E, E] + cls.output [1, E] heads
  DType dtype = DType::F32;   // matrices: F32 | F16 | BF16 | Q8_0 (vectors stay F32)
  uint64_t seed = 1;
};

// A WordPiece vocabulary in GGUF's spelling (word-initial pieces "▁the", continuations
// "ing"): [PAD] [UNK] [CLS] [SEP] [MASK], every letter, digit and ASCII punctuation mark both
// word-initial and as a continuation, common English words and suffixes, then made-up
// syllable words up to n_vocab. Deterministic in seed.
Expected<Vocab> make_synthetic_wordpiece_vocab(int32_t n_vocab, uint64_t seed);

Status write_random_bert(const RandomBertOptions& o, const std::string& path);

}  // namespace edge
