// Copies of a hybrid model's recurrent state (Gated DeltaNet conv and delta-rule state, one
// KvLayout::state_bytes_per_seq() each) taken at block boundaries, so that the prefix cache
// works for models with state slots: a prompt that repeats a cached prefix of P positions
// attaches the attention layers' cached blocks for [0, P) and copies the state after P
// into its slot, instead of recomputing P positions.
//
// An entry is keyed by the chain hash of the prefix's last block (KvCache's block hashes)
// and its length. Entries are taken least recently used first; a sequence also keeps one
// rolling entry of its own that each later boundary overwrites (KvCache::commit says which),
// so `count` entries cost count * bytes_each bytes (ledger category "state") whatever the
// traffic.
#pragma once

#include <cstdint>
#include <vector>

#include "core/memory_ledger.h"
#include "core/status.h"

namespace edge {

class StateCheckpoints {
 public:
  static Expected<StateCheckpoints> create(int64_t count, int64_t bytes_each);
  StateCheckpoints() = default;
  StateCheckpoints(StateCheckpoints&&) noexcept = default;
  StateCheckpoints& operator=(StateCheckpoints&&) noexcept = default;

  int64_t capacity() const { return static_cast<int64_t>(entries_.size()); }
  int64_t bytes_each() const { return bytes_each_; }
  int64_t n_saved() const;
  // The entry holding the state after the n_pos positions whose last block hashes to
  // `hash`, or -1.
  int32_t find(uint64_t hash, int64_t n_pos) const;
  // Saves `state` (bytes_each bytes) as the state after that prefix. `owner` > 0 names a
  // sequence's rolling entry: its entry is overwritten if it still holds one, else the least
  // recently used entry is taken and becomes its own; owner 0 takes the least recently used
  // entry for good (a prompt's boundary, shared by whoever repeats it). An entry already
  // holding this prefix is refreshed instead. Returns the entry.
  int32_t save(uint64_t hash, int64_t n_pos, const uint8_t* state, uint64_t owner);
  // Copies entry i into `state` and marks it used.
  void restore(int32_t i, uint8_t* state);

 private:
  struct Entry {
    uint64_t hash = 0;
    int64_t n_pos = -1;  // -1: empty
    uint64_t owner = 0;
    uint64_t used = 0;  // tick of the last save or restore
  };
  int32_t least_recently_used() const;
  uint8_t* bytes(int32_t i) { return buffer_.data() + static_cast<int64_t>(i) * bytes_each_; }

  std::vector<Entry> entries_;
  int64_t bytes_each_ = 0;
  uint64_t tick_ = 0;
  TaggedBuffer buffer_;
};

}  // namespace edge
