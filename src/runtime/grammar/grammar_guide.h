// Constrained decoding by a grammar (grammar.h): a TokenGuide (runtime/sampler.h) that
// allows a token only if the text generated so far plus the token's bytes can still
// complete to a match, and allows end-of-generation only on a complete match.
//
// The vocabulary is a byte trie of the tokens' pieces (TokenTrie, built once per
// tokenizer and shared): one walk from the current state visits each prefix once and
// drops a whole subtree as soon as its prefix is dead. A state seen before, by this request
// or another of the same grammar (MaskCache), reuses its mask.
//
// Budget: with max_tokens known, the guide keeps the output completable. A token is allowed
// only if the fewest tokens that complete the match after it (one code point, or one byte of
// a UTF-8 sequence, per token) fit in the tokens left, one kept for the end token, so a
// complete text and its end arrive within the limit (a limit too small from the start cannot be
// met: then the tokens that leave the least are allowed).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/grammar_matcher.h"
#include "runtime/sampler.h"
#include "tokenizer/tokenizer.h"

namespace edge::grammar {

class TokenTrie {
 public:
  // specials_as_text: special tokens that stand for their text (a harmony call header's
  // <|message|>), so a grammar can ask for them; every other special token has no piece.
  explicit TokenTrie(const Tokenizer& tok, std::span<const int32_t> specials_as_text = {});
  struct Node {
    uint32_t first_child = 0, n_children = 0;  // children_[first, first + n)
    uint32_t first_token = 0, n_tokens = 0;    // tokens_[first, first + n): pieces ending here
  };
  struct Child {
    uint8_t byte = 0;
    uint32_t node = 0;
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Child>& children() const { return children_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const std::vector<int32_t>& end_ids() const { return end_ids_; }  // EOS and the EOG ids
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  bool strips_leading_space() const { return strips_leading_space_; }
  int32_t n_vocab() const { return static_cast<int32_t>(pieces_.size()); }

 private:
  std::vector<Node> nodes_;
  std::vector<Child> children_;
  std::vector<int32_t> tokens_;
  std::vector<int32_t> end_ids_;
  std::vector<std::string> pieces_;
  bool strips_leading_space_ = false;
};

// The tokens a state allows, each with the fewest tokens that can complete the match after
// it (its effort).
struct MaskCandidate {
  int32_t id;
  int32_t effort;
};
using Mask = std::vector<MaskCandidate>;

// Masks by state signature (Matcher::signature), shared by every guide of one grammar over
// one trie: a signature hashes grammar positions only, so it means the same state in every
// request, and a state one request walked is free for the next. Thread-safe; bounded (it
// starts over when full).
class MaskCache {
 public:
  static constexpr size_t kMaxMasks = 1024;
  static constexpr size_t kMaxIds = size_t{1} << 23;  // 64 MiB of candidates
  std::shared_ptr<const Mask> find(uint64_t key) const;
  void put(uint64_t key, std::shared_ptr<const Mask> mask);
  uint64_t hits() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<const Mask>> masks_;
  size_t ids_ = 0;
  mutable uint64_t hits_ = 0;
};

class GrammarGuide final : public TokenGuide {
 public:
  // max_tokens <= 0: no budget. `masks`: shared with other guides of the same grammar and
  // trie (null: a cache of its own).
  GrammarGuide(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
               int32_t max_tokens, std::shared_ptr<MaskCache> masks = nullptr);
  std::span<const int32_t> allowed(std::span<const int32_t> generated) override;

  // The state after the tokens so far: whether they form a complete match.
  bool complete() const { return state_.accept; }

 private:
  using Candidate = MaskCandidate;
  void consume(int32_t id);
  static int32_t effort(const Matcher::State& s);
  void walk(uint32_t node, const Matcher::State& s, bool at_start);
  std::shared_ptr<const Mask> candidates();

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  const int32_t max_tokens_;
  Matcher matcher_;
  Matcher::State state_;
  size_t consumed_ = 0;
  bool started_ = false;  // a non-empty piece has been generated (the leading-space strip)
  bool broken_ = false;   // a token outside the grammar arrived (not from this guide)
  std::vector<int32_t> allowed_;
  // Inside a string or a repeated structure the same state comes back token after token.
  std::vector<Candidate> cands_;
  std::shared_ptr<MaskCache> masks_;
};

}  // namespace edge::grammar
