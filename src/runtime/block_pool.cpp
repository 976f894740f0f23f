#include "runtime/block_pool.h"

#include <algorithm>

#include "core/check.h"

namespace edge {

uint64_t chain_block_hash(uint64_t parent, std::span<const int32_t> tokens) {
  // FNV-1a over the parent hash and the tokens, then a final avalanche (splitmix64).
  uint64_t h = 0xcbf29ce484222325ull ^ parent;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  mix(parent);
  for (int32_t t : tokens) mix(static_cast<uint32_t>(t));
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

BlockPool::BlockPool(int32_t n_blocks)
    : refs_(static_cast<size_t>(n_blocks), 0),
      prev_(static_cast<size_t>(n_blocks), -1),
      next_(static_cast<size_t>(n_blocks), -1),
      prefix_(static_cast<size_t>(n_blocks)) {
  for (int32_t b = 0; b < n_blocks; ++b) list_push_back(b);
}

void BlockPool::list_remove(int32_t b) {
  const int32_t p = prev_[static_cast<size_t>(b)], n = next_[static_cast<size_t>(b)];
  (p >= 0 ? next_[static_cast<size_t>(p)] : head_) = n;
  (n >= 0 ? prev_[static_cast<size_t>(n)] : tail_) = p;
  prev_[static_cast<size_t>(b)] = next_[static_cast<size_t>(b)] = -1;
  --n_free_;
}

void BlockPool::list_push_back(int32_t b) {
  prev_[static_cast<size_t>(b)] = tail_;
  next_[static_cast<size_t>(b)] = -1;
  (tail_ >= 0 ? next_[static_cast<size_t>(tail_)] : head_) = b;
  tail_ = b;
  ++n_free_;
}

void BlockPool::forget_hash(int32_t b) {
  Prefix& p = prefix_[static_cast<size_t>(b)];
  if (!p.valid) return;
  auto [lo, hi] = by_hash_.equal_range(p.hash);
  for (auto it = lo; it != hi; ++it)
    if (it->second == b) {
      by_hash_.erase(it);
      break;
    }
  p = Prefix{};
}

int32_t BlockPool::allocate() {
  if (head_ < 0) return -1;
  const int32_t b = head_;
  list_remove(b);
  forget_hash(b);
  refs_[static_cast<size_t>(b)] = 1;
  return b;
}

void BlockPool::ref(int32_t b) {
  CHECK(b >= 0 && b < n_blocks() && refs_[static_cast<size_t>(b)] > 0);
  ++refs_[static_cast<size_t>(b)];
}

void BlockPool::unref(int32_t b) {
  CHECK(b >= 0 && b < n_blocks() && refs_[static_cast<size_t>(b)] > 0);
  if (--refs_[static_cast<size_t>(b)] == 0) list_push_back(b);
}

void BlockPool::set_prefix(int32_t b, uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  CHECK(refs_[static_cast<size_t>(b)] > 0);
  forget_hash(b);
  prefix_[static_cast<size_t>(b)] = Prefix{true, hash, parent, {tokens.begin(), tokens.end()}};
  by_hash_.emplace(hash, b);
}

int32_t BlockPool::find(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const {
  auto [lo, hi] = by_hash_.equal_range(hash);
  for (auto it = lo; it != hi; ++it) {
    const Prefix& p = prefix_[static_cast<size_t>(it->second)];
    if (p.parent == parent && std::equal(p.tokens.begin(), p.tokens.end(), tokens.begin(), tokens.end()))
      return it->second;
  }
  return -1;
}

void BlockPool::take(int32_t b) {
  CHECK(b >= 0 && b < n_blocks());
  if (refs_[static_cast<size_t>(b)]++ == 0) list_remove(b);
}

int32_t BlockPool::lookup(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  const int32_t b = find(hash, parent, tokens);
  if (b >= 0) take(b);
  return b;
}

}  // namespace edge
