// The serving KV cache: KvStorage (model/kv_layout.h) carved into paged blocks inside an
// exact byte budget, one BlockPool per layer group, block tables per sequence, prefix
// caching on the global group, and a ring for sliding-window layers (a sequence holds only
// the sliding blocks its window and the step in flight can touch; older ones go back to the
// pool as the sequence advances).
//
// Budget split: sliding layers get enough blocks for max_seqs windows (bounded and small);
// every remaining byte goes to global-layer blocks. A budget that cannot hold one sequence
// of max_model_len positions is refused, with both numbers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/kv_layout.h"
#include "runtime/block_pool.h"

namespace edge {

struct KvCacheOptions {
  KvSettings settings;
  uint64_t budget_bytes = 0;   // 0: max_seqs full contexts
  int64_t max_model_len = 4096;
  int64_t max_step = 512;      // tokens a sequence may add in one step
  int32_t max_seqs = 8;
  bool prefix_cache = true;    // global group only; off when the model has sliding layers
};

// A sequence's view of the cache.
struct SeqKv {
  std::array<std::vector<int32_t>, 2> blocks;  // logical -> physical (-1: released ring block)
  int64_t n_pos = 0;          // positions whose blocks are reserved
  int64_t n_hashed = 0;       // leading global blocks registered in (or taken from) the prefix cache
  uint64_t last_hash = 0;     // chain hash of block n_hashed - 1
};

class KvCache {
 public:
  static Expected<KvCache> create(const ModelConfig& config, const KvCacheOptions& options);
  KvCache(KvCache&&) noexcept = default;
  KvCache& operator=(KvCache&&) noexcept = default;

  KvStorage& storage() { return storage_; }
  const KvLayout& layout() const { return storage_.layout(); }
  const KvCacheOptions& options() const { return options_; }
  bool prefix_cache_enabled() const { return prefix_; }

  // Takes the longest cached prefix of `prompt` in whole blocks (never the whole prompt:
  // the last token must be computed to get logits). Returns the positions reused.
  int64_t attach_prefix(SeqKv& s, std::span<const int32_t> prompt);
  // Reserves blocks so positions [0, n_pos) can be written (a sliding ring only the blocks
  // the window of the next step needs). False, with nothing changed, if the pools lack
  // free blocks.
  bool reserve(SeqKv& s, int64_t n_pos);
  // Blocks reserve() would take now.
  std::array<int64_t, 2> blocks_needed(const SeqKv& s, int64_t n_pos) const;
  // After a step computed positions [0, n_computed): registers newly full global blocks
  // of `tokens` in the prefix cache and returns sliding blocks no future query can see.
  void commit(SeqKv& s, std::span<const int32_t> tokens, int64_t n_computed);
  void release(SeqKv& s);

  int64_t n_free(int g) const { return pools_[g].n_free(); }
  int64_t n_blocks(int g) const { return pools_[g].n_blocks(); }
  int64_t blocks_used() const { return pools_[0].n_used() + pools_[1].n_used(); }
  int64_t blocks_total() const { return pools_[0].n_blocks() + pools_[1].n_blocks(); }
  uint64_t bytes() const { return storage_.bytes(); }
  // Blocks one sequence of max_model_len positions needs in each group.
  std::array<int64_t, 2> blocks_per_full_seq() const;

 private:
  KvCache(KvCacheOptions o, KvStorage storage, bool prefix);
  KvCacheOptions options_;
  KvStorage storage_;
  std::array<BlockPool, 2> pools_;
  bool prefix_ = false;
};

// Parses "192MiB", "2GiB", "1.5GB", "65536" (bytes) or "4096tok" (tokens: converted by the
// caller with KvLayout::bytes_for). Returns bytes, or tokens when *is_tokens is set.
Expected<uint64_t> parse_kv_budget(const std::string& s, bool* is_tokens);

}  // namespace edge
