#include "runtime/grammar/grammar_guide.h"

#include <algorithm>
#include <map>

namespace edge::grammar {

namespace {
constexpr size_t kCompactAbove = size_t{1} << 16;  // arena nodes kept before compacting
}  // namespace

TokenTrie::TokenTrie(const Tokenizer& tok, std::span<const int32_t> specials_as_text)
    : strips_leading_space_(tok.strips_leading_space()) {
  const int32_t n = tok.n_vocab();
  pieces_.resize(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    if (tok.is_eog(id)) {
      end_ids_.push_back(id);
      continue;
    }
    pieces_[static_cast<size_t>(id)] = tok.token_piece(id);
  }
  for (int32_t id : specials_as_text)
    if (id >= 0 && id < n && !tok.is_eog(id)) pieces_[static_cast<size_t>(id)] = tok.token_text(id);
  // Sorting the pieces makes every node's subtree a contiguous run: nodes are laid out in
  // depth-first order with their children and tokens in one place each.
  std::vector<int32_t> order;
  for (int32_t id = 0; id < n; ++id)
    if (!pieces_[static_cast<size_t>(id)].empty()) order.push_back(id);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return pieces_[static_cast<size_t>(a)] < pieces_[static_cast<size_t>(b)];
  });
  // A map-based build first (simple), flattened after.
  struct Build {
    std::map<uint8_t, uint32_t> kids;
    std::vector<int32_t> ids;
  };
  std::vector<Build> b(1);
  for (int32_t id : order) {
    uint32_t at = 0;
    for (unsigned char c : pieces_[static_cast<size_t>(id)]) {
      auto it = b[at].kids.find(c);
      if (it == b[at].kids.end()) {
        b.emplace_back();
        it = b[at].kids.emplace(c, static_cast<uint32_t>(b.size() - 1)).first;
      }
      at = it->second;
    }
    b[at].ids.push_back(id);
  }
  nodes_.resize(b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    nodes_[i].first_child = static_cast<uint32_t>(children_.size());
    nodes_[i].n_children = static_cast<uint32_t>(b[i].kids.size());
    for (const auto& [c, node] : b[i].kids) children_.push_back({c, node});
    nodes_[i].first_token = static_cast<uint32_t>(tokens_.size());
    nodes_[i].n_tokens = static_cast<uint32_t>(b[i].ids.size());
    tokens_.insert(tokens_.end(), b[i].ids.begin(), b[i].ids.end());
  }
}

std::shared_ptr<const Mask> MaskCache::find(uint64_t key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = masks_.find(key);
  if (it == masks_.end()) return nullptr;
  ++hits_;
  return it->second;
}

void MaskCache::put(uint64_t key, std::shared_ptr<const Mask> mask) {
  std::lock_guard<std::mutex> l(mu_);
  if (masks_.size() >= kMaxMasks || ids_ + mask->size() > kMaxIds) {
    masks_.clear();  // guides holding a mask keep it alive
    ids_ = 0;
  }
  ids_ += mask->size();
  masks_[key] = std::move(mask);
}

uint64_t MaskCache::hits() const {
  std::lock_guard<std::mutex> l(mu_);
  return hits_;
}

GrammarGuide::GrammarGuide(std::shared_ptr<const Grammar> grammar,
                           std::shared_ptr<const TokenTrie> trie, int32_t max_tokens,
                           std::shared_ptr<MaskCache> masks)
    : grammar_(std::move(grammar)),
      trie_(std::move(trie)),
      max_tokens_(max_tokens),
      matcher_(*grammar_),
      state_(matcher_.initial()),
      masks_(masks ? std::move(masks) : std::make_shared<MaskCache>()) {}

void GrammarGuide::consume(int32_t id) {
  if (id < 0 || id >= trie_->n_vocab()) return;
  std::string_view piece = trie_->piece(id);
  if (piece.empty()) return;  // an end or control token: no text
  if (!started_) {
    started_ = true;
    if (trie_->strips_leading_space() && piece.front() == ' ') piece.remove_prefix(1);
  }
  for (unsigned char c : piece) {
    state_ = matcher_.advance(state_, c);
    if (state_.dead()) {
      broken_ = true;
      return;
    }
  }
  if (matcher_.arena_size() > kCompactAbove) matcher_.compact(state_);
}

// Fewest tokens that can still complete the match, at one code point or byte per token (a
// UTF-8 sequence in progress needs its remaining bytes).
int32_t GrammarGuide::effort(const Matcher::State& s) {
  return s.dist + s.need;
}

void GrammarGuide::walk(uint32_t node, const Matcher::State& s, bool at_start) {
  const TokenTrie::Node& n = trie_->nodes()[node];
  const int32_t e = effort(s);
  for (uint32_t k = 0; k < n.n_tokens; ++k)
    cands_.push_back({trie_->tokens()[n.first_token + k], e});
  for (uint32_t k = 0; k < n.n_children; ++k) {
    const TokenTrie::Child& c = trie_->children()[n.first_child + k];
    if (at_start && c.byte == ' ') {  // the first piece's space is dropped from the text
      walk(c.node, s, false);
      continue;
    }
    const Matcher::Mark m = matcher_.mark();
    const Matcher::State t = matcher_.advance(s, c.byte);
    if (!t.dead()) walk(c.node, t, false);
    matcher_.rewind(m);
  }
}

// Every token the state allows, with the effort left after it: walked once per distinct
// state, then cached.
std::shared_ptr<const Mask> GrammarGuide::candidates() {
  const bool at_start = !started_ && trie_->strips_leading_space();
  const uint64_t key = matcher_.signature(state_) ^ (at_start ? 0x9e3779b97f4a7c15ull : 0);
  if (auto hit = masks_->find(key)) return hit;
  cands_.clear();
  const Matcher::Mark m = matcher_.mark();
  walk(0, state_, at_start);
  matcher_.rewind(m);
  auto mask = std::make_shared<const Mask>(cands_);
  masks_->put(key, mask);
  return mask;
}

std::span<const int32_t> GrammarGuide::allowed(std::span<const int32_t> generated) {
  for (; consumed_ < generated.size() && !broken_; ++consumed_) consume(generated[consumed_]);
  allowed_.clear();
  if (!broken_) {
    // A token is allowed when what it leaves can still be completed in the tokens left
    // after it, keeping the last one for the end (a client reads finish_reason "length" as
    // a truncated answer); when none fits (a budget too small from the start), the ones that
    // leave the least.
    const int64_t after = max_tokens_ > 0
                              ? int64_t{max_tokens_} - static_cast<int64_t>(generated.size()) - 2
                              : INT64_MAX;
    const std::shared_ptr<const Mask> mask = candidates();
    const Mask& cands = *mask;
    int32_t least = INT32_MAX;
    for (const Candidate& c : cands) {
      if (c.effort <= after) allowed_.push_back(c.id);
      least = std::min(least, c.effort);
    }
    if (allowed_.empty() && !state_.accept)
      for (const Candidate& c : cands)
        if (c.effort == least) allowed_.push_back(c.id);
  }
  // On a complete match (or a broken one: nothing else can be right) the end is allowed.
  if (state_.accept || broken_ || allowed_.empty())
    allowed_.insert(allowed_.end(), trie_->end_ids().begin(), trie_->end_ids().end());
  if (allowed_.empty()) allowed_.push_back(0);  // a vocabulary without an end token
  return allowed_;
}

}  // namespace edge::grammar
