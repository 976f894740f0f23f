// The serving KV cache: KvStorage (model/kv_layout.h) carved into paged blocks inside an
// exact byte budget, one BlockPool per layer group, block tables per sequence, prefix
// caching, and a ring for sliding-window layers (a sequence holds only the sliding blocks
// its window and the step in flight can touch; older ones go back to the pool as the
// sequence advances).
//
// Prefix caching covers both groups. Every full block is registered in its group's pool
// under the same chained hash. A prefix of P positions is reusable when the global group
// still holds all its blocks and the sliding group the blocks of the window before P (what
// the query at P can see); sliding blocks freed by the ring keep their hash in the pool's
// LRU free list until reused, so a repeated system prompt finds its last window there. When
// that window has been reused, the hit shrinks to the longest P whose window is still
// cached (or 0): what is attached is always exactly what a sequence that computed those P
// positions itself would hold, so the result does not depend on the cache.
//
// Recurrent (linear attention) layers keep no blocks: each running sequence holds one state
// slot of KvLayout::state_bytes_per_seq() bytes (ledger category "state"), max_seqs slots
// beside the budget, taken by reserve() and returned by release(). The prefix cache covers
// them through state checkpoints (runtime/state_checkpoints.h): copies of a slot taken when a
// step ends on a block boundary. A hit on such a model is the longest cached prefix whose
// boundary has a checkpoint; reserve() copies it into the new slot. Which boundaries are
// kept: the prompt's last whole block (the scheduler ends a prefill step there:
// clip_to_checkpoint), shared by every prompt that repeats it; and for each sequence one
// rolling checkpoint, moved to each later boundary a step ends on (decode passes one every
// block_tokens positions), so the next turn of a conversation resumes near where the last
// one stopped. `state_checkpoints` entries, least recently used first, each
// state_bytes_per_seq() bytes (ledger "state"); 0 turns prefix caching off for such models.
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
#include "runtime/state_checkpoints.h"

namespace edge {

struct KvCacheOptions {
  KvSettings settings;
  uint64_t budget_bytes = 0;   // 0: max_seqs full contexts
  int64_t max_model_len = 4096;
  int64_t max_step = 512;      // tokens a sequence may add in one step
  int32_t max_seqs = 8;
  bool prefix_cache = true;    // both groups (see above)
  int32_t state_checkpoints = 4;  // models with recurrent layers (see above)
};

// A sequence's view of the cache.
struct SeqKv {
  std::array<std::vector<int32_t>, 2> blocks;  // logical -> physical (-1: released ring block)
  int64_t n_pos = 0;          // positions whose blocks are reserved
  int64_t n_hashed = 0;       // leading blocks registered in (or taken from) the prefix cache
  uint64_t last_hash = 0;     // chain hash of block n_hashed - 1
  // Set by attach_prefix: prompt positions whose global blocks were cached but that must be
  // recomputed because the sliding window before them had been reused.
  int64_t window_miss = 0;
  int32_t state_slot = -1;    // recurrent state slot (models with recurrent layers), else -1
  int32_t restore_checkpoint = -1;  // set by attach_prefix: copied into the slot by reserve()
  uint64_t checkpoint_owner = 0;    // names its rolling state checkpoint (0: none yet)
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
  // the last token must be computed to get logits) whose sliding window is cached too:
  // global blocks [0, P), sliding blocks from first_window_block(P) to P (the entries before
  // are -1, as the ring leaves them). Returns the positions reused, P.
  int64_t attach_prefix(SeqKv& s, std::span<const int32_t> prompt);
  // Reserves blocks so positions [0, n_pos) can be written (a sliding ring only the blocks
  // the window of the next step needs), and a state slot for a model with recurrent layers.
  // False, with nothing changed, if the pools lack free blocks or no slot is free.
  bool reserve(SeqKv& s, int64_t n_pos);
  // Blocks reserve() would take now.
  std::array<int64_t, 2> blocks_needed(const SeqKv& s, int64_t n_pos) const;
  // After a step computed positions [0, n_computed): registers newly full blocks of
  // `tokens` (both groups) in the prefix cache, returns sliding blocks no future query can
  // see, and on a block boundary checkpoints the recurrent state (the first n_prompt tokens
  // are the prompt: see above).
  void commit(SeqKv& s, std::span<const int32_t> tokens, int64_t n_computed, int64_t n_prompt = 0);
  // n prompt tokens from n_computed, cut to end on the prompt's last whole block when state
  // checkpoints are kept (so its state can be saved there), else n.
  int64_t clip_to_checkpoint(int64_t n_computed, int64_t n, int64_t n_prompt) const;
  // Returns every block (in logical order, so a sequence's last blocks are the last to be
  // reused: a later turn of the conversation finds them and their window).
  void release(SeqKv& s);
  // The first logical block the query at position `pos` can see in a sliding layer.
  int64_t first_window_block(int64_t pos) const;

  int64_t n_free(int g) const { return pools_[g].n_free(); }
  int64_t n_free_state_slots() const { return static_cast<int64_t>(free_slots_.size()); }
  const StateCheckpoints& state_checkpoints() const { return checkpoints_; }
  uint64_t state_checkpoint_saves() const { return checkpoint_saves_; }
  uint64_t state_checkpoint_restores() const { return checkpoint_restores_; }
  int64_t n_blocks(int g) const { return pools_[g].n_blocks(); }
  int64_t blocks_used() const { return pools_[0].n_used() + pools_[1].n_used(); }
  int64_t blocks_total() const { return pools_[0].n_blocks() + pools_[1].n_blocks(); }
  uint64_t bytes() const { return storage_.bytes(); }
  // Blocks one sequence of max_model_len positions needs in each group.
  std::array<int64_t, 2> blocks_per_full_seq() const;

 private:
  KvCache(KvCacheOptions o, KvStorage storage, bool prefix, StateCheckpoints checkpoints);
  // The bytes of state slot `slot` (every recurrent layer's, contiguous).
  uint8_t* slot_state(int32_t slot);
  // Whether a prefix of n blocks has the sliding window before it cached (true without a
  // sliding group); found: the sliding group's blocks of the cached run.
  bool window_cached(const std::vector<int32_t>& found, int64_t n) const;
  // Chain hashes of the prompt's leading whole blocks (at most max_blocks) as long as the
  // global group holds them, and the block each group holds for each (-1: none).
  struct CachedRun {
    std::vector<uint64_t> hash;
    std::array<std::vector<int32_t>, 2> found;
  };
  CachedRun find_cached(std::span<const int32_t> prompt, int64_t max_blocks) const;
  // The longest n <= found.size() whose sliding window (blocks first_window_block(n * B)
  // to n) is all cached.
  int64_t longest_window_hit(const std::vector<int32_t>& found) const;
  KvCacheOptions options_;
  KvStorage storage_;
  std::array<BlockPool, 2> pools_;
  bool prefix_ = false;
  std::vector<int32_t> free_slots_;  // state slots no sequence holds (a stack)
  StateCheckpoints checkpoints_;     // empty without recurrent layers or prefix caching
  uint64_t next_owner_ = 1;
  uint64_t checkpoint_saves_ = 0, checkpoint_restores_ = 0;
};

// Parses "192MiB", "2GiB", "1.5GB", "65536" (bytes) or "4096tok" (tokens: converted by the
// caller with KvLayout::bytes_for). Returns bytes, or tokens when *is_tokens is set.
Expected<uint64_t> parse_kv_budget(const std::string& s, bool* is_tokens);

}  // namespace edge
