// How a model's KV cache is laid out in memory: paged blocks of `block_tokens` positions,
// split into two layer groups that are paged separately:
//   group 0 (global): layers that attend to the whole context — a sequence needs one block
//                     per block_tokens positions;
//   group 1 (sliding): layers with a sliding window — a sequence needs only the blocks that
//                     overlap its window plus the step in flight (a ring), so a Spark-style
//                     model pays full-context KV on its few global layers only.
// A block of a group holds K and V of every layer of that group:
//   [slot (layer within group)][K: block_tokens x k_row_bytes | V: block_tokens x v_row_bytes]
// (K and V may have different element types: KvTypes).
// Recurrent (Gated DeltaNet) layers keep no KV: each sequence has a state SLOT instead,
// a fixed number of bytes whatever its length, holding for every recurrent layer its conv
// state then its delta-rule state (kernels/delta_net.h):
//   [slot][recurrent layer][conv (K-1) x C | state n_v_heads x d_k x d_v] F32.
// KvStorage owns the blocks (anonymous memory, ledger category "kv"); block tables that map
// a sequence's logical blocks to physical ones are kept by whoever owns the sequences (the
// runtime's KvCache, or InferenceState for a single sequence).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/memory_ledger.h"
#include "core/status.h"
#include "kernels/api.h"
#include "model/config.h"

namespace edge {

constexpr int kKvGlobal = 0;
constexpr int kKvSliding = 1;

struct KvSettings {
  KvTypes types;  // K's and V's element types
  int32_t block_tokens = 16;
};

struct KvLayout {
  KvSettings settings;
  int64_t k_row_bytes = 0;                  // one position's K for all kv heads
  int64_t v_row_bytes = 0;                  // one position's V for all kv heads
  std::array<int32_t, 2> n_slots{};         // layers per group
  std::array<int64_t, 2> block_bytes{};     // bytes of one block of each group
  int32_t window = 0;                       // largest window of the sliding layers
  std::vector<int8_t> layer_group;          // [n_layer] group of each layer; -1: recurrent
  std::vector<int32_t> layer_slot;          // [n_layer] index in its group (or among the
                                            // recurrent layers)
  int32_t n_state_layers = 0;               // recurrent layers
  int64_t state_floats_per_layer = 0;       // conv + delta-rule state of one layer

  static KvLayout make(const ModelConfig& c, const KvSettings& s);
  // Blocks a sequence needs in `group` to hold `n_pos` positions while steps of up to
  // `max_step` tokens run: all of them for global layers; for sliding layers the blocks a
  // window plus a step can touch, ceil((window + max_step - 1) / B) + 1, if fewer.
  int64_t blocks_per_seq(int group, int64_t n_pos, int64_t max_step) const;
  // Bytes of the blocks n_seqs sequences of n_pos positions need (both groups; their state
  // slots are n_seqs * state_bytes_per_seq() more).
  uint64_t bytes_for(int64_t n_seqs, int64_t n_pos, int64_t max_step) const;
  bool has_group(int g) const { return n_slots[g] > 0; }
  bool has_state() const { return n_state_layers > 0; }
  // Bytes of one sequence's state slot (0 without recurrent layers).
  int64_t state_bytes_per_seq() const {
    return int64_t{n_state_layers} * state_floats_per_layer * static_cast<int64_t>(sizeof(float));
  }
};

// The blocks themselves: n_blocks[g] blocks per group, in one tagged anonymous mapping per
// group (pages are committed as positions are written), and n_state_slots state slots.
class KvStorage {
 public:
  static Expected<KvStorage> create(const KvLayout& layout, std::array<int64_t, 2> n_blocks,
                                    int64_t n_state_slots = 0);
  KvStorage() = default;
  KvStorage(KvStorage&&) noexcept = default;
  KvStorage& operator=(KvStorage&&) noexcept = default;

  const KvLayout& layout() const { return layout_; }
  int64_t n_blocks(int g) const { return n_blocks_[g]; }
  int64_t n_state_slots() const { return n_state_slots_; }
  uint64_t bytes() const {
    return buffers_[0].size() + buffers_[1].size() + state_buffer_.size();
  }
  // First row of physical block `b` of layer `layer`'s K (or V).
  uint8_t* k_block(int layer, int64_t b) { return block_base(layer, b, 0); }
  uint8_t* v_block(int layer, int64_t b) { return block_base(layer, b, 1); }
  // Recurrent layer `layer`'s state in slot `slot`: the conv state then the delta-rule
  // state (KvLayout::state_floats_per_layer floats).
  float* state(int layer, int64_t slot);
  // Zeroes every layer's state of a slot (a sequence starting at position 0).
  void clear_state(int64_t slot);

 private:
  uint8_t* block_base(int layer, int64_t b, int kv);
  KvLayout layout_;
  std::array<int64_t, 2> n_blocks_{};
  std::array<TaggedBuffer, 2> buffers_;
  int64_t n_state_slots_ = 0;
  TaggedBuffer state_buffer_;
};

}  // namespace edge
