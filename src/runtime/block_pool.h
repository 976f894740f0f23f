// A pool of KV blocks with reference counts, a free list in LRU order and a prefix cache.
//
// A block is in use while its reference count is > 0 (several sequences may share a
// cached prefix block). When the count drops to 0 it goes to the back of the free list
// but keeps its contents and its prefix hash, so a later request with the same prefix can
// take it back (lookup) until allocate() reuses it for something else: allocate() takes
// the front of the free list, the block freed longest ago, and forgets its hash.
//
// Prefix hashes are chained: block i's hash covers the hash of block i-1 and block i's
// tokens, so equal hashes mean equal prefixes (the tokens are kept and compared too, so a
// hash collision can never hand out the wrong KV).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace edge {

uint64_t chain_block_hash(uint64_t parent, std::span<const int32_t> tokens);

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);

  int32_t n_blocks() const { return static_cast<int32_t>(refs_.size()); }
  int32_t n_free() const { return n_free_; }
  int32_t n_used() const { return n_blocks() - n_free_; }

  // A free block with reference count 1 (its old hash forgotten), or -1 if none is free.
  int32_t allocate();
  void ref(int32_t b);
  // Drops one reference; at 0 the block joins the back of the free list.
  void unref(int32_t b);
  int32_t refs(int32_t b) const { return refs_[static_cast<size_t>(b)]; }

  // Records that block b (in use, full) holds `tokens` after the prefix `parent`.
  void set_prefix(int32_t b, uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // The block holding `tokens` after `parent` (its reference count incremented, taken off
  // the free list if it was there), or -1. Same as take(find(...)).
  int32_t lookup(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // The block holding `tokens` after `parent`, or -1; changes nothing (the KV cache first
  // finds what every layer group has, then decides how much of it to take).
  int32_t find(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const;
  // Adds a reference to block b, in use or free (a free one leaves the free list).
  void take(int32_t b);
  // Blocks currently holding a cached prefix (in use or free).
  size_t n_cached() const { return by_hash_.size(); }

 private:
  void list_remove(int32_t b);
  void list_push_back(int32_t b);
  void forget_hash(int32_t b);

  std::vector<int32_t> refs_;
  std::vector<int32_t> prev_, next_;  // free list links (-1: none)
  int32_t head_ = -1, tail_ = -1, n_free_ = 0;
  struct Prefix {
    bool valid = false;
    uint64_t hash = 0, parent = 0;
    std::vector<int32_t> tokens;
  };
  std::vector<Prefix> prefix_;
  std::unordered_multimap<uint64_t, int32_t> by_hash_;
};

}  // namespace edge
